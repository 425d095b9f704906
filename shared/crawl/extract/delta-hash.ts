/**
 * Delta hash, as SMILA's DefaultRecordProducer computes `_deltaHash` (seed 003), first that applies:
 * a digest of the content, the Last-Modified value, size + mime type, else a random id that forces
 * an update. The kind prefixes the value so hashes of different kinds never compare equal.
 */
import { createHash } from 'node:crypto';

export interface DeltaHashInput {
  /** what counts as the content: for HTML the caller passes extracted title + text, so markup churn is ignored */
  content?: Uint8Array | string | null;
  /** Last-Modified header value (SMILA httpLastModified) */
  lastModified?: string | null;
  /** Content-Length (SMILA httpSize; -1 or null when not set) */
  size?: number | null;
  /** mime type part of Content-Type (SMILA httpMimetype) */
  mimeType?: string | null;
}

/** Computes the seed 003 delta hash; `randomId` supplies the UUID of the last resort (kept pure). */
export function deltaHash(input: DeltaHashInput, randomId: () => string): string {
  if (input.content !== undefined && input.content !== null) {
    return `sha256:${createHash('sha256').update(input.content).digest('hex')}`;
  }
  const lastModified = input.lastModified?.trim();
  if (lastModified) return `lm:${lastModified}`;
  // SMILA sets httpSize to -1 when Content-Length is missing: that is "not set".
  if (input.size !== undefined && input.size !== null && input.size >= 0) {
    return `size:${input.size}:${input.mimeType ?? ''}`;
  }
  return `random:${randomId()}`;
}
