/**
 * The embedded emulator's request rate, patched (cli/moto-server.py) against unpatched moto
 * (TRAWL_EMULATOR_PLAIN=1): 8 clients in parallel for 10 s each, as the crawl's stages call it.
 * - conditional PutItem: a claim (12 attributes, `attribute_not_exists(#u) OR claimedBy = :me`);
 * - SQS: SendMessageBatch of 10, then ReceiveMessage of 10 and DeleteMessageBatch.
 * Not part of `npm run bench`: `node --import tsx bench/emulator-rate.ts`.
 */
import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { startEmulator } from '../cli/emulator.ts';

const CLIENTS = 8;
const SECONDS = 10;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

/** Calls `step` from CLIENTS loops for SECONDS; steps a second. */
async function rate(step: (client: number, i: number) => Promise<void>): Promise<number> {
  let n = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) {
        await step(c, i);
        n++;
      }
    }),
  );
  return n / SECONDS;
}

async function measure(plain: boolean): Promise<string> {
  if (plain) process.env.TRAWL_EMULATOR_PLAIN = '1';
  else delete process.env.TRAWL_EMULATOR_PLAIN;
  const emulator = await startEmulator();
  try {
    const cfg = { endpoint: emulator.endpoint, region: 'us-east-1', credentials };
    const ddb = new DynamoDBClient(cfg);
    const sqs = new SQSClient(cfg);
    await ddb.send(
      new CreateTableCommand({
        TableName: 'urls',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'url', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'url', KeyType: 'HASH' }],
      }),
    );
    const puts = await rate((c, i) =>
      ddb
        .send(
          new PutItemCommand({
            TableName: 'urls',
            Item: {
              url: { S: `https://example.com/${c}/${i}.html` },
              state: { S: 'pending' },
              depth: { N: '3' },
              queue: { S: 'follow' },
              index: { BOOL: true },
              follow: { BOOL: true },
              priority: { N: '0' },
              source: { S: 'https://example.com/' },
              claimedBy: { S: `claimer-${c}` },
              discoveredAt: { S: new Date().toISOString() },
              temporaryErrors: { N: '0' },
              addMeta: { M: {} },
            },
            ConditionExpression: 'attribute_not_exists(#u) OR claimedBy = :me',
            ExpressionAttributeNames: { '#u': 'url' },
            ExpressionAttributeValues: { ':me': { S: `claimer-${c}` } },
          }),
        )
        .then(() => undefined),
    );
    const { QueueUrl = '' } = await sqs.send(new CreateQueueCommand({ QueueName: 'rate' }));
    const rounds = await rate(async (c, i) => {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl,
          Entries: Array.from({ length: 10 }, (_, k) => ({ Id: String(k), MessageBody: `${c}/${i}/${k}` })),
        }),
      );
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      if (Messages.length > 0)
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl,
            Entries: Messages.map((m, k) => ({ Id: String(k), ReceiptHandle: m.ReceiptHandle ?? '' })),
          }),
        );
    });
    return `${plain ? 'unpatched' : 'patched  '}: ${puts.toFixed(0)} conditional PutItem/s, ${rounds.toFixed(0)} SQS send + receive + delete rounds/s`;
  } finally {
    await emulator.stop();
  }
}

console.log(await measure(true));
console.log(await measure(false));
