/**
 * us-east-1 list prices (docs/design-facts.md, issue #7) and the arithmetic that turns one run's measured
 * requests, capacity units and handler durations into dollars per million pages.
 */
import { FUNCTIONS, type StageName } from './topology.ts';

export const PRICES = {
  /** Lambda arm64, per GB-second and per request */
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  /** SQS standard, per request (each 64 KB of payload is one request) */
  sqsRequest: 0.4 / 1e6,
  /** DynamoDB on demand, per write and per read request unit */
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  /** S3 Standard: PUT, COPY, POST, LIST per request; GET and all other requests */
  s3Put: 0.005 / 1000,
  s3Get: 0.0004 / 1000,
} as const;

/** The price target of issue #7. */
export const TARGET_DOLLARS_PER_MILLION = 1.0;

/** S3 operations billed at the PUT rate (the rest at the GET rate). */
const S3_PUT_CLASS = new Set([
  'PutObject',
  'CopyObject',
  'ListObjectsV2',
  'ListObjects',
  'CreateMultipartUpload',
  'UploadPart',
  'CompleteMultipartUpload',
]);

export interface StageTime {
  invocations: number;
  totalMs: number;
  /** ms with an AWS (emulator) call in flight */
  awsWaitMs: number;
  /** the memory the stage ran with (a deploy sizes fetch from the config); @default FUNCTIONS[stage] */
  memoryMb?: number;
}

export interface RunUsage {
  pages: number;
  /** "S3.PutObject" → calls */
  calls: Record<string, number>;
  sqsBilledRequests: number;
  dynamoReadUnits: number;
  dynamoWriteUnits: number;
  stages: Record<StageName, StageTime>;
}

export interface CostBreakdown {
  lambdaGbSeconds: number;
  /** GB-s with the emulator's wait taken out (the handler's own CPU and the site's network wait) */
  lambdaGbSecondsNoAwsWait: number;
  lambdaInvocations: number;
  s3Puts: number;
  s3Gets: number;
  /** dollars per million pages, by service */
  perMillion: {
    lambda: number;
    sqs: number;
    dynamoWrite: number;
    dynamoRead: number;
    s3: number;
    total: number;
  };
  /** the same total with Lambda billed without the emulator's wait (the lower bound) */
  totalNoAwsWait: number;
}

/** The stage's memory in GB: what it ran with, else the topology's. */
export const stageGb = (stage: StageName, t?: Pick<StageTime, 'memoryMb'>): number =>
  (t?.memoryMb ?? FUNCTIONS[stage].memoryMb) / 1024;

/** Prices one run at list prices, scaled to a million pages. */
export function priceRun(u: RunUsage): CostBreakdown {
  const stages = Object.entries(u.stages) as [StageName, StageTime][];
  const lambdaGbSeconds = stages.reduce((n, [s, t]) => n + (t.totalMs / 1000) * stageGb(s, t), 0);
  const lambdaGbSecondsNoAwsWait = stages.reduce(
    (n, [s, t]) => n + (Math.max(0, t.totalMs - t.awsWaitMs) / 1000) * stageGb(s, t),
    0,
  );
  // An async Lambda.Invoke (the fetch kick on AWS) is one more invocation of the fetch function.
  const lambdaInvocations = stages.reduce((n, [, t]) => n + t.invocations, 0);
  let s3Puts = 0;
  let s3Gets = 0;
  for (const [key, n] of Object.entries(u.calls)) {
    if (!key.startsWith('S3.')) continue;
    if (S3_PUT_CLASS.has(key.slice(3))) s3Puts += n;
    else s3Gets += n;
  }
  const scale = 1e6 / Math.max(1, u.pages);
  const lambdaFor = (gbs: number) =>
    (gbs * PRICES.lambdaGbSecond + lambdaInvocations * PRICES.lambdaRequest) * scale;
  const perMillion = {
    lambda: lambdaFor(lambdaGbSeconds),
    sqs: u.sqsBilledRequests * PRICES.sqsRequest * scale,
    dynamoWrite: u.dynamoWriteUnits * PRICES.dynamoWriteUnit * scale,
    dynamoRead: u.dynamoReadUnits * PRICES.dynamoReadUnit * scale,
    s3: (s3Puts * PRICES.s3Put + s3Gets * PRICES.s3Get) * scale,
    total: 0,
  };
  perMillion.total =
    perMillion.lambda + perMillion.sqs + perMillion.dynamoWrite + perMillion.dynamoRead + perMillion.s3;
  const totalNoAwsWait = perMillion.total - perMillion.lambda + lambdaFor(lambdaGbSecondsNoAwsWait);
  return {
    lambdaGbSeconds,
    lambdaGbSecondsNoAwsWait,
    lambdaInvocations,
    s3Puts,
    s3Gets,
    perMillion,
    totalNoAwsWait,
  };
}

/** The assumptions printed with every run. */
export function pricingAssumptions(): string[] {
  const mem = (Object.entries(FUNCTIONS) as [StageName, { memoryMb: number }][])
    .map(([s, f]) => `${s} ${f.memoryMb} MB`)
    .join(', ');
  return [
    `Lambda arm64 $${PRICES.lambdaGbSecond}/GB-s + $0.20/M invocations; memory: what each stage ran with (fetch sized from`,
    `  the config, shared/stages/fetch-memory.ts), else shared/topology.ts FUNCTIONS (${mem}).`,
    '  Wall time is this machine’s: a CPU-bound stretch on a function below 1,769 MB (1 vCPU) takes longer on Lambda.',
    'Lambda GB-s = each handler invocation’s measured wall time × its memory. Network wait inside fetch (and every AWS',
    '  call’s wait) is billed, because it is inside the handler’s duration. Locally every AWS call goes to moto on the',
    '  same 2 cores, slower than DynamoDB/SQS/S3 in a region: "no AWS wait" subtracts the time a handler had an AWS',
    '  call in flight — the lower bound; the measured figure is the upper bound.',
    'SQS $0.40/M requests; each 64 KB of payload (sent, or received by ReceiveMessage) is one request; a batch of ≤ 10',
    '  is one request. Counted: stage calls and the event source mappings’ receives/deletes. Not counted: idle long',
    '  polls of the mappings and the 1-minute fetch tick (a fixed cost per month, not per page).',
    'DynamoDB on demand $0.625/M write units, $0.125/M read units: a write = 1 unit per KB of the larger of the item',
    '  before/after (URL items here stay under 1 KB); a failed conditional write still costs its write; an eventually',
    '  consistent read (GetItem, each BatchGetItem key) = ½ unit per 4 KB, ½ unit for a key that is not there.',
    'S3 $0.005 per 1,000 PUT/LIST, $0.0004 per 1,000 GET; storage ($0.023/GB-month) and CloudWatch Logs not included.',
    'Cost per million pages = this run’s cost × 1,000,000 / pages crawled (pages = URLs fetched to a final state).',
  ];
}
