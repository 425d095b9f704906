/**
 * Resolves `fetch.auth` secrets: `{ env }` from the process environment, `{ secretArn }` from
 * Secrets Manager (once per container: a cold start reads it again). Values live in memory only.
 * The Secrets Manager client is loaded at the first secret read: a crawl without secrets does
 * not carry it in the fetch function's memory (fetch-memory.ts RUNTIME_MB).
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SecretRef } from '../config-auth.ts';
import { ConfigError } from '../errors.ts';

export type SecretResolver = (ref: SecretRef, path: string) => Promise<string>;

/** A resolver with a per-container cache of Secrets Manager reads. */
export function createSecretResolver(
  opts: { env?: NodeJS.ProcessEnv; client?: () => SecretsManagerClient } = {},
): SecretResolver {
  const env = opts.env ?? process.env;
  let client: SecretsManagerClient | null = null;
  const sdk = () => import('@aws-sdk/client-secrets-manager');
  const makeClient = async () =>
    opts.client?.() ??
    new (await sdk()).SecretsManagerClient({
      ...(env.AWS_ENDPOINT_URL ? { endpoint: env.AWS_ENDPOINT_URL } : {}),
    });
  const reads = new Map<string, Promise<string>>();
  const read = (arn: string) => {
    let p = reads.get(arn);
    if (!p) {
      p = (async () => {
        client ??= await makeClient();
        const { GetSecretValueCommand } = await sdk();
        const r = await client.send(new GetSecretValueCommand({ SecretId: arn }));
        return r.SecretString ?? '';
      })();
      // A failed read is tried again by the next invocation, not cached.
      p.catch(() => reads.delete(arn));
      reads.set(arn, p);
    }
    return p;
  };
  return async (ref, path) => {
    if (typeof ref === 'string') return ref;
    if ('env' in ref) {
      const v = env[ref.env];
      if (v === undefined) throw new ConfigError(`${path}: environment variable ${ref.env} is not set`);
      return v;
    }
    const text = await read(ref.secretArn);
    if (!ref.key) return text;
    const value = jsonKey(text, ref.key);
    if (typeof value !== 'string') throw new ConfigError(`${path}: secret has no string key ${ref.key}`);
    return value;
  };
}

/** `key` of a JSON object secret, else undefined; JSON.parse's own error would quote the secret. */
function jsonKey(text: string, key: string): unknown {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed !== null && typeof parsed === 'object'
      ? (parsed as Record<string, unknown>)[key]
      : undefined;
  } catch {
    return undefined;
  }
}
