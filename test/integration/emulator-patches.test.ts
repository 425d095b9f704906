/**
 * The embedded emulator's launcher (cli/moto-server.py) takes moto's per-request overheads out:
 * cached module and method lookups, SQS queues counted in one pass instead of once per message
 * sent and three times per message received, condition expressions parsed once, an item's size
 * summed once, item reads sent without moto's model walk, items and messages not kept in moto's
 * instance lists, and connections kept between requests. It must answer as moto does. The same requests go to
 * a patched and an unpatched (TRAWL_EMULATOR_PLAIN=1) moto server side by side, and what each
 * answers — counts, bodies, which deletes succeed and which fail with what code, FIFO
 * deduplication, conditional writes, objects — must be the same.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type Emulator, startEmulator } from '../../cli/emulator.ts';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startWith(plain: boolean, logFile: string): Promise<Emulator> {
  const before = process.env.TRAWL_EMULATOR_PLAIN;
  if (plain) process.env.TRAWL_EMULATOR_PLAIN = '1';
  else delete process.env.TRAWL_EMULATOR_PLAIN;
  try {
    return await startEmulator({ logFile });
  } finally {
    if (before === undefined) delete process.env.TRAWL_EMULATOR_PLAIN;
    else process.env.TRAWL_EMULATOR_PLAIN = before;
  }
}

/** What a request came to: 'accepted', or the error's name. */
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: Error) => (e instanceof ConditionalCheckFailedException ? 'ConditionalCheckFailed' : e.name),
  );

/** Every request the patches touch, and what the emulator answers, without ids and handles. */
async function scenario(endpoint: string): Promise<Record<string, unknown>> {
  const cfg = { endpoint, region: 'us-east-1', credentials };
  const sqs = new SQSClient(cfg);
  const ddb = new DynamoDBClient(cfg);
  const s3 = new S3Client({ ...cfg, forcePathStyle: true });
  const out: Record<string, unknown> = {};
  const counts = async (QueueUrl: string) => {
    const { Attributes: a = {} } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
    );
    return [
      a.ApproximateNumberOfMessages,
      a.ApproximateNumberOfMessagesNotVisible,
      a.ApproximateNumberOfMessagesDelayed,
    ];
  };
  const bodies = (ms: Message[] | undefined) => (ms ?? []).map((m) => m.Body).sort();

  // A standard queue: 27 messages, 3 of them delayed.
  const { QueueUrl: q = '' } = await sqs.send(new CreateQueueCommand({ QueueName: 'patches' }));
  for (let b = 0; b < 3; b++) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: q,
        Entries: Array.from({ length: 9 }, (_, i) => ({
          Id: `m${i}`,
          MessageBody: `body-${b}-${i}`,
          ...(i === 0 ? { DelaySeconds: 120 } : {}),
        })),
      }),
    );
  }
  out.afterSend = await counts(q);
  // Received one at a time, so each answer is one message whatever the order.
  const first: Message[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 1, VisibilityTimeout: 60 }),
    );
    first.push(...(r.Messages ?? []));
  }
  out.firstReceived = first.length;
  out.afterReceive = await counts(q);
  // Received with a 1 s lease, received again once it ran out: each now has an old and a new handle.
  const short = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 4, VisibilityTimeout: 1 }),
  );
  await sleep(1500);
  const again: Message[] = [];
  for (let i = 0; i < 30 && again.length < (short.Messages?.length ?? 0); i++) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    again.push(...(r.Messages ?? []));
  }
  out.shortReceived = short.Messages?.length;
  out.receivedAgainIncludesThem = (short.Messages ?? []).every((m) =>
    again.some((a) => a.MessageId === m.MessageId),
  );
  out.afterReceiveAgain = await counts(q);
  // Deleted by their old handles (moto accepts a handle the message once had), twice each.
  for (const m of short.Messages ?? []) {
    await sqs.send(new DeleteMessageCommand({ QueueUrl: q, ReceiptHandle: m.ReceiptHandle }));
    await sqs.send(new DeleteMessageCommand({ QueueUrl: q, ReceiptHandle: m.ReceiptHandle }));
  }
  out.afterDeleteOld = await counts(q);
  // A batch of valid handles and one that never was.
  const batch = await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: q,
      Entries: [
        ...first.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
        { Id: 'bogus', ReceiptHandle: 'not-a-receipt-handle' },
      ],
    }),
  );
  out.batchDelete = {
    successful: (batch.Successful ?? []).map((s) => s.Id).sort(),
    failed: (batch.Failed ?? []).map((f) => [f.Id, f.Code, f.SenderFault]),
  };
  out.afterBatchDelete = await counts(q);
  const rest: Message[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
    );
    if (!r.Messages?.length) break;
    rest.push(...r.Messages);
  }
  out.restCount = rest.length;
  out.allBodies = bodies([
    ...first,
    ...again.filter((m) => !first.some((f) => f.MessageId === m.MessageId)),
    ...rest,
  ]);
  out.final = await counts(q);

  // A FIFO queue with content-based deduplication: the same body twice is one message.
  const { QueueUrl: fifo = '' } = await sqs.send(
    new CreateQueueCommand({
      QueueName: 'patches.fifo',
      Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
    }),
  );
  for (const body of ['same', 'same', 'other'])
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: fifo,
        Entries: [{ Id: 'a', MessageBody: body, MessageGroupId: 'g' }],
      }),
    );
  out.fifo = await counts(fifo);
  const { QueueUrl: strictFifo = '' } = await sqs.send(
    new CreateQueueCommand({ QueueName: 'strict.fifo', Attributes: { FifoQueue: 'true' } }),
  );
  out.fifoWithoutDedupId = await outcome(
    sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: strictFifo,
        Entries: [{ Id: 'a', MessageBody: 'x', MessageGroupId: 'g' }],
      }),
    ),
  );

  // DynamoDB's conditional write and S3, through the cached service and action look-ups.
  await ddb.send(
    new CreateTableCommand({
      TableName: 'patches',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  );
  const claim = () =>
    ddb.send(
      new PutItemCommand({
        TableName: 'patches',
        Item: { pk: { S: 'https://example.com/' }, n: { N: '1' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  await claim();
  out.secondClaim = await outcome(claim());
  out.item = (
    await ddb.send(new GetItemCommand({ TableName: 'patches', Key: { pk: { S: 'https://example.com/' } } }))
  ).Item;
  // The same condition with other values (the parse of a condition is kept by its names and
  // values): a claimer's claims, another claimer's, a claim again by its own claimer; conditions
  // that fail to parse or name an unused attribute, twice each (errors are never kept); the 400 KB
  // item limit (a running total, not a sum as each attribute is added) on both sides of it.
  const claimAs = (url: string, me: string, extraNames: Record<string, string> = {}) =>
    outcome(
      ddb.send(
        new PutItemCommand({
          TableName: 'patches',
          Item: { pk: { S: url }, claimedBy: { S: me }, state: { S: 'pending' } },
          ConditionExpression: 'attribute_not_exists(#u) OR claimedBy = :me',
          ExpressionAttributeNames: { '#u': 'pk', ...extraNames },
          ExpressionAttributeValues: { ':me': { S: me } },
        }),
      ),
    );
  const put = (Item: Record<string, { S: string }>, ConditionExpression?: string) =>
    outcome(ddb.send(new PutItemCommand({ TableName: 'patches', Item, ConditionExpression })));
  out.claims = [
    await claimAs('u1', 'A'),
    await claimAs('u1', 'B'),
    await claimAs('u1', 'A'),
    await claimAs('u2', 'B'),
    await claimAs('u2', 'A'),
    await claimAs('u2', 'B'),
    await claimAs('u3', 'A', { '#unused': 'x' }),
    await claimAs('u3', 'A', { '#unused': 'x' }),
    await put({ pk: { S: 'u4' } }, 'attribute_not_exists(pk) AND AND'),
    await put({ pk: { S: 'u4' } }, 'attribute_not_exists(pk) AND AND'),
    await put({ pk: { S: 'big-under' }, body: { S: 'x'.repeat(400_000) } }),
    await put({ pk: { S: 'big-over' }, body: { S: 'x'.repeat(300_000) }, more: { S: 'y'.repeat(110_000) } }),
  ];
  out.claimedBy = await Promise.all(
    ['u1', 'u2', 'u3', 'big-over'].map(async (url) => {
      const r = await ddb.send(new GetItemCommand({ TableName: 'patches', Key: { pk: { S: url } } }));
      return r.Item?.claimedBy?.S ?? (r.Item ? 'no claimer' : 'none');
    }),
  );
  out.typed = await typedItems(endpoint);
  out.receivedRaw = await receivedRaw(endpoint);
  await s3.send(new CreateBucketCommand({ Bucket: 'patches' }));
  await s3.send(new PutObjectCommand({ Bucket: 'patches', Key: 'a/b.txt', Body: 'object body' }));
  out.object = await (
    await s3.send(new GetObjectCommand({ Bucket: 'patches', Key: 'a/b.txt' }))
  ).Body?.transformToString();
  return out;
}

/**
 * A request of AWS's JSON protocol (`service` signs it, `target` names the action), sent without an
 * SDK: the answer's status and body as they came.
 */
async function rawJson(endpoint: string, service: string, target: string, body: unknown) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': target,
      authorization: `AWS4-HMAC-SHA256 Credential=test/20261129/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** A DynamoDB request, and the answer as `STATUS BODY`, the body as it came (not parsed by an SDK). */
async function rawDynamo(endpoint: string, action: string, body: unknown): Promise<string> {
  const { status, text } = await rawJson(endpoint, 'dynamodb', `DynamoDB_20120810.${action}`, body);
  return `${status} ${text}`;
}

/** An SQS request; the answer's body parsed, in the order its keys came. */
async function rawSqs(endpoint: string, action: string, body: unknown): Promise<Record<string, unknown>> {
  const { status, text } = await rawJson(endpoint, 'sqs', `AmazonSQS.${action}`, body);
  return { status, ...(JSON.parse(text) as Record<string, unknown>) };
}

/**
 * Messages received as the wire carries them (moto's serializer is bypassed for a message of
 * strings and string attributes; binary attributes are left to moto): ids, receipt handles and
 * times taken out, the rest in the order the answer gave it.
 */
async function receivedRaw(endpoint: string): Promise<unknown[]> {
  const { QueueUrl } = (await rawSqs(endpoint, 'CreateQueue', { QueueName: 'raw' })) as { QueueUrl: string };
  await rawSqs(endpoint, 'SendMessageBatch', {
    QueueUrl,
    Entries: [
      { Id: 'plain', MessageBody: '{"tasks":[{"url":"https://example.com/é"}]}' },
      {
        Id: 'text',
        MessageBody: 'text',
        MessageAttributes: { crawl: { DataType: 'String', StringValue: 'docs' } },
      },
      {
        Id: 'binary',
        MessageBody: 'binary',
        MessageAttributes: {
          blob: { DataType: 'Binary', BinaryValue: Buffer.from('bytes').toString('base64') },
          n: { DataType: 'Number', StringValue: '12' },
        },
      },
    ],
  });
  const received: Record<string, unknown>[] = [];
  for (let i = 0; i < 5 && received.length < 3; i++) {
    const r = await rawSqs(endpoint, 'ReceiveMessage', {
      QueueUrl,
      MaxNumberOfMessages: 10,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    });
    received.push(...((r.Messages as Record<string, unknown>[] | undefined) ?? []));
  }
  return received
    .map(({ MessageId: _id, ReceiptHandle: _handle, ...m }) => {
      const attrs = { ...(m.Attributes as Record<string, string>) };
      for (const time of ['SentTimestamp', 'ApproximateFirstReceiveTimestamp']) {
        assert.match(attrs[time] ?? '', /^\d{13}$/);
        delete attrs[time];
      }
      return JSON.stringify({ ...m, Attributes: attrs });
    })
    .sort();
}

/**
 * Items read back as the wire carries them (moto's response serializer is bypassed for attribute
 * values made of strings, numbers, flags, lists and maps; binary is left to moto), and a table
 * scanned page by page, whose numeric keys must come in number order (keys are sorted by their
 * cast values once an item instead of per comparison).
 */
async function typedItems(endpoint: string): Promise<{ answers: string[]; scanOrder: number[] }> {
  const TableName = 'typed';
  const answers = [
    await rawDynamo(endpoint, 'CreateTable', {
      TableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'n', AttributeType: 'N' },
        { AttributeName: 'r', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'n', KeyType: 'HASH' },
        { AttributeName: 'r', KeyType: 'RANGE' },
      ],
    }).then((a) => a.slice(0, 3)),
  ];
  const keys = ['10', '9', '100', '-1.5', '2e1', '0'];
  for (const [i, n] of keys.entries()) {
    const item: Record<string, unknown> = {
      n: { N: n },
      r: { S: i % 2 ? 'b' : 'a' },
      s: { S: `é "quoted" \\ ${'x'.repeat(i * 40)}` },
      empty: { S: '' },
      num: { N: `${i}.50` },
      yes: { BOOL: i % 2 === 0 },
      nil: { NULL: true },
      list: {
        L: [{ S: 'a' }, { N: '1' }, { M: { deep: { L: [{ BOOL: false }, { NULL: true }] } } }, { L: [] }],
      },
      map: {
        M: {
          k: { S: 'v' },
          nested: { M: { SS: { SS: ['x', 'y'] } } },
          none: { M: {} },
          blank: { M: { '': { S: 'moto flattens an empty key' } } },
        },
      },
      ss: { SS: ['one', 'two'] },
      ns: { NS: ['1', '2.5'] },
    };
    // binary, alone and inside a list and a map: moto's own serializer base64-encodes it
    if (i % 3 === 0) {
      item.bin = { B: Buffer.from(`bytes ${i}`).toString('base64') };
      item.bs = { BS: [Buffer.from('a').toString('base64'), Buffer.from('b').toString('base64')] };
      item.binList = { L: [{ S: 'text' }, { B: Buffer.from('in a list').toString('base64') }] };
      item.binMap = { M: { b: { B: Buffer.from('in a map').toString('base64') } } };
    }
    answers.push(await rawDynamo(endpoint, 'PutItem', { TableName, Item: item }));
  }
  for (const n of ['0', '10'])
    answers.push(
      await rawDynamo(endpoint, 'GetItem', {
        TableName,
        Key: { n: { N: n }, r: { S: n === '0' ? 'b' : 'a' } },
      }),
    );
  let start: unknown;
  const scanOrder: number[] = [];
  do {
    const page = await rawDynamo(endpoint, 'Scan', {
      TableName,
      Limit: 2,
      ...(start ? { ExclusiveStartKey: start } : {}),
    });
    answers.push(page);
    const parsed = JSON.parse(page.slice(4));
    scanOrder.push(...parsed.Items.map((i: { n: { N: string } }) => Number(i.n.N)));
    start = parsed.LastEvaluatedKey;
  } while (start);
  answers.push(
    await rawDynamo(endpoint, 'Scan', {
      TableName,
      ProjectionExpression: 'n, #m.k, list[2]',
      ExpressionAttributeNames: { '#m': 'map' },
    }),
  );
  answers.push(
    await rawDynamo(endpoint, 'Query', {
      TableName,
      KeyConditionExpression: 'n = :n',
      ExpressionAttributeValues: { ':n': { N: '9' } },
    }),
  );
  answers.push(
    await rawDynamo(endpoint, 'BatchGetItem', {
      RequestItems: {
        [TableName]: {
          Keys: [
            { n: { N: '100' }, r: { S: 'a' } },
            { n: { N: '-1.5' }, r: { S: 'b' } },
          ],
        },
      },
    }),
  );
  return { answers, scanOrder };
}

/**
 * Requests over one kept connection: an object written with a sized body, a request whose body
 * the server never reads, the object read back, one written with a chunked body and read back. Each answer's status,
 * body and whether it came over a reused connection.
 */
async function overOneConnection(endpoint: string): Promise<[number, string, boolean][]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (method: string, path: string, body: string | null, chunked = false) =>
    new Promise<[number, string, boolean]>((resolve, reject) => {
      const req = http.request(`${endpoint}${path}`, {
        method,
        agent,
        headers: {
          authorization:
            'AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0',
          ...(body !== null && !chunked ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
        },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve([res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), req.reusedSocket]),
        );
      });
      req.on('error', reject);
      if (body !== null && chunked) {
        req.write(body.slice(0, 3));
        req.end(body.slice(3));
      } else req.end(body ?? undefined);
    });
  try {
    await send('PUT', '/kept', null);
    return [
      await send('PUT', '/kept/a.txt', 'sized body'),
      // moto's own API never reads a request's body: on a kept connection it must be skipped
      await send('GET', '/moto-api/data.json', 'a body nobody reads'),
      await send('GET', '/kept/a.txt', null),
      await send('PUT', '/kept/b.txt', 'chunked body', true),
      await send('GET', '/kept/b.txt', null),
    ].map(([status, body, reused]) => [status, status === 200 && body.length < 40 ? body : '', reused]);
  } finally {
    agent.destroy();
  }
}

describe('the embedded emulator launcher (cli/moto-server.py)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trawl-emulator-'));
  let patched: Emulator;
  let plain: Emulator;

  before(async () => {
    // one after the other: each start reads TRAWL_EMULATOR_PLAIN from this process's environment
    patched = await startWith(false, join(dir, 'patched.log'));
    plain = await startWith(true, join(dir, 'plain.log'));
  });
  after(async () => {
    await Promise.all([patched?.stop(), plain?.stop()]);
  });

  it('patches the pinned moto, and TRAWL_EMULATOR_PLAIN=1 runs it unpatched', () => {
    assert.match(readFileSync(join(dir, 'patched.log'), 'utf8'), /trawl: moto 5\.2\.5, patched/);
    assert.match(
      readFileSync(join(dir, 'plain.log'), 'utf8'),
      /trawl: moto 5\.2\.5, unpatched \(TRAWL_EMULATOR_PLAIN=1\)/,
    );
  });

  it('answers every request the patches touch as unpatched moto does', async () => {
    const [a, b] = await Promise.all([scenario(patched.endpoint), scenario(plain.endpoint)]);
    assert.deepEqual(a, b);
    // and the answers are the ones SQS gives (so the comparison is not between two wrong answers)
    assert.deepEqual(a.afterSend, ['24', '0', '3']);
    assert.deepEqual(a.afterReceive, ['18', '6', '3']);
    assert.equal(a.shortReceived, 4);
    assert.equal(a.receivedAgainIncludesThem, true);
    const sum = (c: unknown) => (c as string[]).slice(0, 2).reduce((n, v) => n + Number(v), 0);
    assert.equal(sum(a.afterDeleteOld), 24 - 4, 'the four deleted by their old handles are gone');
    assert.equal(sum(a.afterBatchDelete), 24 - 4 - 6);
    assert.deepEqual(a.final, ['0', '14', '3']);
    const expected = [0, 1, 2]
      .flatMap((b) => Array.from({ length: 8 }, (_, i) => `body-${b}-${i + 1}`))
      .sort();
    assert.deepEqual(a.allBodies, expected);
    assert.deepEqual(a.batchDelete, {
      successful: ['d0', 'd1', 'd2', 'd3', 'd4', 'd5'],
      failed: [['bogus', 'ReceiptHandleIsInvalid', true]],
    });
    assert.deepEqual(a.fifo, ['2', '0', '0']);
    assert.equal(a.secondClaim, 'ConditionalCheckFailed');
    assert.deepEqual(a.claims, [
      'accepted',
      'ConditionalCheckFailed',
      'accepted',
      'accepted',
      'ConditionalCheckFailed',
      'accepted',
      'ValidationException',
      'ValidationException',
      'SyntaxError', // moto's name for it; DynamoDB says ValidationException
      'SyntaxError',
      'accepted',
      'ValidationException',
    ]);
    assert.deepEqual(a.claimedBy, ['A', 'B', 'none', 'none']);
    assert.equal(a.object, 'object body');
    assert.equal((a.receivedRaw as string[]).length, 3);
    assert.match((a.receivedRaw as string[]).join('\n'), /"BinaryValue":"Ynl0ZXM="/);
    const typed = a.typed as { answers: string[]; scanOrder: number[] };
    const failed = typed.answers.find((t) => !t.startsWith('200'));
    assert.equal(failed, undefined);
    assert.deepEqual(
      typed.scanOrder,
      [-1.5, 0, 9, 10, 20, 100],
      'the table scanned in number order of its keys',
    );
    assert.match(
      typed.answers[8] ?? '',
      /"bin": ?\{"B": ?"Ynl0ZXMgMA=="\}/,
      'binary base64-encoded as DynamoDB sends it',
    );
  });

  it('gives back the memory of the items a read copied (unpatched moto keeps every copy it makes)', async () => {
    // moto lists every model instance in its class for its /moto-api/ browser: each read of a
    // table left a copy of every item read in the server's memory for good.
    const rssMb = (pid: number) =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
    const growth = async (emulator: Emulator) => {
      const TableName = 'reads';
      await rawDynamo(emulator.endpoint, 'CreateTable', {
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'url', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'url', KeyType: 'HASH' }],
      });
      // a URL state's shape: a dozen small attributes (a copy's cost is its attribute objects)
      const attrs = Object.fromEntries(Array.from({ length: 12 }, (_, a) => [`a${a}`, { S: `v${a}` }]));
      for (let b = 0; b < 80; b++) {
        const items = Array.from({ length: 25 }, (_, i) => ({
          PutRequest: { Item: { url: { S: `https://example.com/${b}/${i}` }, ...attrs } },
        }));
        await rawDynamo(emulator.endpoint, 'BatchWriteItem', { RequestItems: { [TableName]: items } });
      }
      const scanAll = async () => {
        let start: unknown;
        do {
          const page = await rawDynamo(emulator.endpoint, 'Scan', {
            TableName,
            ProjectionExpression: '#u', // moto copies whole items before it projects them
            ExpressionAttributeNames: { '#u': 'url' },
            ...(start ? { ExclusiveStartKey: start } : {}),
          });
          start = JSON.parse(page.slice(4)).LastEvaluatedKey;
        } while (start);
      };
      await scanAll(); // the allocator's first high-water mark
      const before = rssMb(emulator.pid);
      for (let i = 0; i < 4; i++) await scanAll();
      return rssMb(emulator.pid) - before;
    };
    const [kept, plainKept] = await Promise.all([growth(patched), growth(plain)]);
    // 4 reads of 2,000 items: unpatched moto kept every copy (18 MB measured; patched 1.5-2.5 MB)
    assert.ok(plainKept > 8, `unpatched moto grew by ${plainKept.toFixed(1)} MB (the test's premise)`);
    assert.ok(kept < plainKept / 3, `patched ${kept.toFixed(1)} MB, unpatched ${plainKept.toFixed(1)} MB`);
  });

  it('keeps connections open, unread request bodies skipped (unpatched moto closes each one)', async () => {
    const kept = await overOneConnection(patched.endpoint);
    const closed = await overOneConnection(plain.endpoint);
    // the same answers…
    assert.deepEqual(
      kept.map(([status, body]) => [status, body]),
      closed.map(([status, body]) => [status, body]),
    );
    assert.deepEqual(
      kept.map(([status, body]) => [status, body]),
      [
        [200, ''],
        [200, ''],
        [200, 'sized body'],
        [200, ''],
        [200, 'chunked body'],
      ],
    );
    // …over one connection here, a new one for each request there
    assert.deepEqual(
      kept.map(([, , reused]) => reused),
      [true, true, true, true, true],
    );
    assert.deepEqual(
      closed.map(([, , reused]) => reused),
      [false, false, false, false, false],
    );
  });
});
