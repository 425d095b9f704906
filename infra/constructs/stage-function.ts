import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Size } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type ICommandHooks, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { BUNDLE_BANNER } from '../../scripts/bundle-banner.mjs';
import {
  FUNCTIONS,
  type ResourceNames,
  type StageName,
  type StageQueueName,
  type StageQueueSpec,
} from '../../shared/topology.ts';
import type { CrawlStorage } from './storage.ts';
import type { WorkQueue } from './work-queue.ts';

/** The repository root: esbuild's project root and the lock file's folder. */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Entries bundled beside a stage's handler (same folder in the Lambda asset), each a bundle of its
 * own: the config schema every function loads only to validate a config its own CLI did not write
 * (shared/stored-config.ts), so that zod is not in the handlers' bundles (3.5 MB of a fetch
 * container); and the extract stage's pdf.js worker (shared/stages/pdf-worker.ts), which a small
 * bundle starts in half the time and memory of the whole handler bundle; and the URL decider the
 * fetch stage loads only to decide again the tasks queued under another config
 * (shared/stages/fetch-scope.ts), so that its rules, scope filters and the Public Suffix List are
 * not in the fetch container on the cheap path.
 */
const BESIDE: { entry: string; outfile: string; stages?: StageName[] }[] = [
  { entry: 'shared/config.ts', outfile: 'config.mjs' },
  { entry: 'shared/stages/pdf-worker.ts', outfile: 'pdf-worker.mjs', stages: ['extract'] },
  { entry: 'shared/crawl/rules/decide.ts', outfile: 'decide.mjs', stages: ['fetch'] },
];

/**
 * esbuild's hooks for a stage: the handler's imports of Node's built-ins rewritten
 * (scripts/bundle-builtins.mjs says why), then the bundles beside it.
 */
function bundleHooks(stage: StageName): ICommandHooks {
  const beside = BESIDE.filter((b) => !b.stages || b.stages.includes(stage));
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) => [
      `node "${inputDir}/scripts/bundle-builtins.mjs" "${outputDir}/index.mjs"`,
      ...beside.map(
        (b) =>
          `node "${inputDir}/scripts/bundle-worker.mjs" "${inputDir}/${b.entry}" "${outputDir}/${b.outfile}"`,
      ),
    ],
  };
}

/** Everything a stage construct wires its function to. */
export interface CrawlResources {
  names: ResourceNames;
  storage: CrawlStorage;
  /** the six frontier queues, in FRONTIER order */
  frontier: sqs.IQueue[];
  stageQueues: Record<StageQueueName, WorkQueue>;
  /** the TRAWL_* variables every function gets */
  environment: Record<string, string>;
  /** built from the fixed fetch function name, so any stage (fetch too) can reference it without a cycle */
  fetchFunctionArn: string;
}

export interface StageFunctionOptions {
  environment: Record<string, string>;
  /** only the fetch function gets a fixed name (it is invoked by name) */
  functionName?: string;
  /** overrides the topology's reserved concurrency (fetch: the config's fetch.maxInvocations) */
  reservedConcurrency?: number;
  /** overrides the topology's memory (fetch: sized from the config, shared/stages/fetch-memory.ts) */
  memoryMb?: number;
  /** /tmp in MB when more than Lambda's 512 MB (fetch: its large bodies, shared/stages/fetch-memory.ts) */
  ephemeralStorageMb?: number;
}

/** A stage's Lambda function: arm64, ESM bundle from functions/<stage>/handler.ts, sizes from topology. */
export function stageFunction(
  scope: Construct,
  stage: StageName,
  options: StageFunctionOptions,
): NodejsFunction {
  const spec = FUNCTIONS[stage];
  const logGroup = new logs.LogGroup(scope, 'Logs', {
    retention: logs.RetentionDays.TWO_WEEKS,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  // An own role instead of AWSLambdaBasicExecutionRole (logs:CreateLogGroup … on "*"): the function
  // may write to its own log group only.
  const role = new iam.Role(scope, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  logGroup.grantWrite(role);
  return new NodejsFunction(scope, 'Function', {
    functionName: options.functionName,
    entry: `${REPO_ROOT}functions/${stage}/handler.ts`,
    handler: 'handler',
    projectRoot: REPO_ROOT,
    depsLockFilePath: `${REPO_ROOT}package-lock.json`,
    runtime: lambda.Runtime.NODEJS_24_X,
    // Graviton: 20% cheaper per GB-s than x86 (docs/design-facts.md prices).
    architecture: lambda.Architecture.ARM_64,
    memorySize: options.memoryMb ?? spec.memoryMb,
    timeout: Duration.seconds(spec.timeoutSeconds),
    // Only asked for past the 512 MB every function has (billed per GB-s above it); at most 10 GB.
    ...(options.ephemeralStorageMb && options.ephemeralStorageMb > 512
      ? { ephemeralStorageSize: Size.mebibytes(Math.min(10_240, options.ephemeralStorageMb)) }
      : {}),
    reservedConcurrentExecutions: options.reservedConcurrency ?? spec.reservedConcurrency,
    tracing: lambda.Tracing.DISABLED,
    logGroup,
    role,
    environment: {
      ...options.environment,
      // No NODE_OPTIONS=--enable-source-maps: Node parses the bundle's map as it loads it, 27 MB of
      // a 192 MB fetch function (bench/fetch-memory.ts). Stack traces name the functions instead
      // (identifiers are not minified, below); the map ships beside the bundle for a closer look.
      POWERTOOLS_SERVICE_NAME: 'trawl',
      // The handlers print CloudWatch embedded-metric lines (shared/stages/metrics.ts) only on AWS.
      TRAWL_METRICS: '1',
      // Each invocation adds its AWS requests, time and pages to the hour's usage item (shared/stages/usage.ts).
      TRAWL_USAGE: '1',
    },
    bundling: {
      format: OutputFormat.ESM,
      target: 'node22',
      // Whitespace and syntax minified, names kept: readable stack traces, and a smaller loaded
      // bundle than full minification (92 vs 95 MB RSS for fetch; scripts/bundle-worker.mjs the same).
      minify: false,
      esbuildArgs: { '--minify-whitespace': true, '--minify-syntax': true },
      sourceMap: true,
      mainFields: ['module', 'main'],
      // The AWS SDK goes into the bundle (CDK leaves @aws-sdk/* out by default): the bundle deployed
      // is the bundle tested, whatever SDK the runtime or an emulator provides (AWS's own guidance).
      externalModules: [],
      // CommonJS dependencies inside an ESM bundle still call require() (the file says why it is renamed).
      banner: BUNDLE_BANNER,
      commandHooks: bundleHooks(stage),
    },
  });
}

/** An EventBridge rule invoking `fn` every `everyMinutes` minutes (rate expressions take whole minutes). */
export function scheduleStage(
  scope: Construct,
  id: string,
  everyMinutes: number,
  fn: lambda.IFunction,
): events.Rule {
  if (!Number.isInteger(everyMinutes) || everyMinutes < 1) {
    throw new Error(`schedule ${id}: every ${everyMinutes} minutes is not a whole number ≥ 1`);
  }
  return new events.Rule(scope, id, {
    schedule: events.Schedule.rate(Duration.minutes(everyMinutes)),
    targets: [new targets.LambdaFunction(fn)],
  });
}

/**
 * SQS event source for a stage queue: sizes from topology, partial batch failures reported per
 * record. A plain mapping, not SqsEventSource, whose grant adds sqs:GetQueueUrl and
 * sqs:ChangeMessageVisibility that polling never uses: grantStage gives the documented three.
 */
export function consumeStageQueue(fn: lambda.Function, queue: sqs.IQueue, spec: StageQueueSpec): void {
  fn.addEventSourceMapping('SqsSource', {
    eventSourceArn: queue.queueArn,
    batchSize: spec.batchSize,
    maxBatchingWindow: Duration.seconds(spec.maxBatchingWindowSeconds),
    maxConcurrency: spec.maxConcurrency,
    // ReportBatchItemFailures retries only the failed records, never the whole batch (docs/design-facts.md).
    reportBatchItemFailures: true,
  });
}
