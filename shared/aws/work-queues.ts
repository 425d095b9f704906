/**
 * SQS adapter for the frontier and stage queues. Messages carry bulks (SMILA linksPerBulk),
 * sends and deletes go in batches of 10 (the AWS limit), so one request moves many URLs.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { CrawlError } from '../errors.ts';
import { QUEUE_MAX_MESSAGE_BYTES } from '../topology.ts';

/** SQS limits: 10 entries per batch call; a batch's total payload ≤ 1 MiB; we stay under 256 KB per message. */
const MAX_BATCH_ENTRIES = 10;
export const MAX_MESSAGE_BYTES = 240 * 1024;
/** What SQS itself takes in one message (docs: 1 MiB since 2025; moto enforces the same; every queue is set to it). */
const SQS_MESSAGE_LIMIT = QUEUE_MAX_MESSAGE_BYTES;
const MAX_BATCH_BYTES = 1000 * 1024;
/** SQS DelaySeconds limit (15 minutes). */
export const MAX_DELAY_SECONDS = 900;

export interface OutgoingMessage {
  body: unknown;
  delaySeconds?: number;
}

export interface ReceivedMessage<T> {
  id: string;
  receiptHandle: string;
  body: T | null;
  receiveCount: number;
}

export interface WorkQueues {
  send(queueUrl: string, messages: OutgoingMessage[]): Promise<void>;
  /** `visibilitySeconds` leases the messages for that long instead of the queue's default. */
  receive<T>(
    queueUrl: string,
    max: number,
    waitSeconds?: number,
    visibilitySeconds?: number,
  ): Promise<ReceivedMessage<T>[]>;
  delete(queueUrl: string, receiptHandles: string[]): Promise<void>;
  /** Extends or ends leases (0 = visible again now), 10 per request. */
  changeVisibility(queueUrl: string, entries: { receiptHandle: string; seconds: number }[]): Promise<void>;
  depth(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }>;
  /**
   * Moves every visible message of `fromUrl` to `toUrl` (a DLQ redrive): the body as it was, a
   * fresh receive count, sent before it is deleted (a crash in between leaves a copy, never a
   * loss). Returns how many moved.
   */
  moveAll(fromUrl: string, toUrl: string): Promise<number>;
}

/** Greedy grouping: consecutive items into groups of at most `maxItems` and `maxBytes` (by `sizeOf`). */
function greedyGroups<T>(items: T[], maxItems: number, maxBytes: number, sizeOf: (item: T) => number): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && (current.length >= maxItems || bytes + size > maxBytes)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** Splits `items` into chunks whose JSON form stays under `maxBytes` and `maxItems` each. */
export function chunkBySize<T>(items: T[], maxItems: number, maxBytes = MAX_MESSAGE_BYTES): T[][] {
  const size = (item: T) => Buffer.byteLength(JSON.stringify(item)) + 1;
  for (const item of items) {
    const n = size(item);
    if (n > maxBytes) throw new CrawlError(`one item of ${n} bytes exceeds the SQS message limit`);
  }
  // 2 bytes for the enclosing [ ] of the JSON array.
  return greedyGroups(items, maxItems, maxBytes - 2, size);
}

/** SendMessageBatch groups: at most 10 entries and the batch payload limit. */
function batches(messages: { body: string; delaySeconds?: number }[]) {
  return greedyGroups(messages, MAX_BATCH_ENTRIES, MAX_BATCH_BYTES, (m) => Buffer.byteLength(m.body));
}

/** A message that is not JSON becomes `null`: the consumer drops it with a log line, never loops on it. */
function parseBody<T>(body: string | undefined): T | null {
  try {
    return JSON.parse(body ?? 'null') as T;
  } catch {
    return null;
  }
}

/** Creates the adapter around an SQS client. */
export function createWorkQueues({ client }: { client: SQSClient }): WorkQueues {
  /** Sends message bodies as they are, in batches within SQS's entry and byte limits. */
  async function sendEncoded(queueUrl: string, encoded: { body: string; delaySeconds?: number }[]) {
    // Refused before anything is sent: SQS would fail the batch after earlier batches went out,
    // and a retry would resend those and fail again on the same message.
    const tooBig = encoded.findIndex((m) => Buffer.byteLength(m.body) > SQS_MESSAGE_LIMIT);
    if (tooBig >= 0) {
      const n = Buffer.byteLength(encoded[tooBig]?.body ?? '');
      throw new CrawlError(`message ${tooBig} is ${n} bytes, over SQS's ${SQS_MESSAGE_LIMIT}-byte limit`);
    }
    for (const batch of batches(encoded)) {
      const res = await client.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((m, i) => ({
            Id: String(i),
            MessageBody: m.body,
            DelaySeconds: m.delaySeconds,
          })),
        }),
      );
      if (res.Failed?.length) {
        throw new CrawlError(`SQS refused ${res.Failed.length} message(s): ${res.Failed[0]?.Message ?? ''}`);
      }
    }
  }
  const queues: WorkQueues = {
    async send(queueUrl, messages) {
      await sendEncoded(
        queueUrl,
        messages.map((m) => ({
          body: JSON.stringify(m.body),
          delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil(m.delaySeconds ?? 0))),
        })),
      );
    },
    async moveAll(fromUrl, toUrl) {
      let moved = 0;
      for (;;) {
        // Raw bodies: a message that is not JSON (a poison message) goes back as it was.
        const { Messages: batch = [] } = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: fromUrl,
            MaxNumberOfMessages: MAX_BATCH_ENTRIES,
            VisibilityTimeout: 60,
          }),
        );
        if (batch.length === 0) return moved;
        await sendEncoded(
          toUrl,
          batch.map((m) => ({ body: m.Body ?? '' })),
        );
        await queues.delete(
          fromUrl,
          batch.map((m) => m.ReceiptHandle ?? ''),
        );
        moved += batch.length;
      }
    },
    async receive<T>(queueUrl: string, max: number, waitSeconds = 0, visibilitySeconds?: number) {
      const res = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: Math.min(MAX_BATCH_ENTRIES, max),
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: visibilitySeconds,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      return (res.Messages ?? []).map((m) => ({
        id: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: parseBody<T>(m.Body),
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? '1'),
      }));
    },
    async delete(queueUrl, receiptHandles) {
      await inBatches(receiptHandles, (slice) =>
        client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: slice.map((h, j) => ({ Id: String(j), ReceiptHandle: h })),
          }),
        ),
      );
    },
    async changeVisibility(queueUrl, entries) {
      // A failed entry (e.g. a handle already deleted) is not an error: the lease is over either way.
      await inBatches(entries, (slice) =>
        client.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: slice.map((e, j) => ({
              Id: String(j),
              ReceiptHandle: e.receiptHandle,
              VisibilityTimeout: Math.min(43_200, Math.max(0, Math.ceil(e.seconds))),
            })),
          }),
        ),
      );
    },
    async depth(queueUrl) {
      const res = await client.send(
        new GetQueueAttributesCommand({
          QueueUrl: queueUrl,
          // 'All', not the three counters: one request either way, and moto builds every attribute
          // once per name asked for (4× the work for three names, a quarter of its CPU in a crawl).
          AttributeNames: ['All'],
        }),
      );
      const a = res.Attributes ?? {};
      return {
        visible: Number(a.ApproximateNumberOfMessages ?? 0),
        inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
        delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
      };
    },
  };
  return queues;
}

/** Calls `send` with the items in slices of SQS's 10 entries a batch request, one after another. */
async function inBatches<T>(items: T[], send: (slice: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += MAX_BATCH_ENTRIES) await send(items.slice(i, i + MAX_BATCH_ENTRIES));
}
