/**
 * CDK assertions for what an emulator cannot prove: redrive, visibility vs timeout, partial batch
 * failures, key schemas, encryption, least-privilege IAM. The stack (with esbuild bundling) is built
 * once for the whole file.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Duration, Stage } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import type { Asset } from 'aws-cdk-lib/aws-s3-assets';
import type { CrawlerStack } from '../../infra/crawler-stack.ts';
import { configFormat } from '../../shared/config.ts';
import { createPdfWorkerReader } from '../../shared/stages/pdf-worker.ts';
import {
  DLQ_RETENTION_DAYS,
  FRONTIER,
  FRONTIER_QUEUE,
  FUNCTIONS,
  QUEUE_RETENTION,
  resourceNames,
  SCHEDULES,
  STAGE_QUEUES,
  type StageName,
  TABLES,
} from '../../shared/topology.ts';
import { minimalPdf } from '../helpers/archive-builders.ts';
import {
  buildStack,
  type Cfn,
  expectedGrants,
  grantsOf,
  logicalId,
  type StackLabels,
} from '../helpers/infra-template.ts';

const CRAWL = 'assert';
const names = resourceNames(CRAWL);
const STAGES = Object.keys(FUNCTIONS) as StageName[];
let stack: CrawlerStack;
let template: Template;
let labels: StackLabels;

function resourcesOf(type: string): [string, Cfn][] {
  return Object.entries(template.findResources(type) as Record<string, Cfn>);
}
function queueNamed(name: string): [string, Cfn] {
  const hit = resourcesOf('AWS::SQS::Queue').find(([, r]) => r.Properties.QueueName === name);
  assert.ok(hit, `queue ${name} exists`);
  return hit;
}
function fnResource(stage: StageName): Cfn {
  return template.toJSON().Resources[logicalId(stack.functions[stage])] as Cfn;
}

describe('CrawlerStack', () => {
  before(() => {
    ({ stack, template, labels } = buildStack(CRAWL));
  });

  it('gives every work queue its own DLQ with the topology maxReceiveCount and 14-day retention', () => {
    const specs = [
      ...FRONTIER.map((s) => ({
        name: names.frontierQueue(s.name),
        maxReceiveCount: FRONTIER_QUEUE.maxReceiveCount,
      })),
      ...(['extract', 'index', 'wake'] as const).map((s) => ({
        name: names.stageQueue(s),
        ...STAGE_QUEUES[s],
      })),
    ];
    assert.equal(resourcesOf('AWS::SQS::Queue').length, specs.length * 2);
    for (const spec of specs) {
      const [, queue] = queueNamed(spec.name);
      const [dlqId, dlq] = queueNamed(names.dlq(spec.name));
      assert.deepEqual(queue.Properties.RedrivePolicy, {
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
        maxReceiveCount: spec.maxReceiveCount,
      });
      assert.equal(dlq.Properties.MessageRetentionPeriod, Duration.days(DLQ_RETENTION_DAYS).toSeconds());
    }
  });

  it('keeps messages as long as the work needs, and a dead one in its DLQ at least a week longer', () => {
    const specs = [
      ...FRONTIER.map((s) => ({ name: names.frontierQueue(s.name), ...FRONTIER_QUEUE })),
      ...(['extract', 'index'] as const).map((s) => ({ name: names.stageQueue(s), ...STAGE_QUEUES[s] })),
    ];
    for (const spec of specs) {
      const [, queue] = queueNamed(spec.name);
      const [, dlq] = queueNamed(names.dlq(spec.name));
      const retention = queue.Properties.MessageRetentionPeriod as number;
      assert.equal(retention, spec.retentionSeconds, `${spec.name}: not SQS's default 4 days`);
      // Every receive can happen before the message expires.
      assert.ok(retention >= spec.maxReceiveCount * spec.visibilityTimeoutSeconds, spec.name);
      // SQS keeps a dead-lettered message's first enqueue time: the DLQ's retention counts from it.
      const dlqRetention = dlq.Properties.MessageRetentionPeriod as number;
      assert.ok(retention + QUEUE_RETENTION.dlqKeepsAtLeastSeconds <= dlqRetention, spec.name);
    }
    assert.equal(queueNamed(names.stageQueue('extract'))[1].Properties.MessageRetentionPeriod, 86_400);
    assert.equal(queueNamed(names.frontierQueue('follow'))[1].Properties.MessageRetentionPeriod, 7 * 86_400);
  });

  it('encrypts at rest every resource that stores data; the others hold none', () => {
    // Each resource type of the stack, and where its data at rest is encrypted.
    const atRest: Record<string, (r: Cfn) => boolean> = {
      'AWS::SQS::Queue': (r) => r.Properties.SqsManagedSseEnabled === true,
      'AWS::DynamoDB::Table': (r) => r.Properties.SSESpecification?.SSEEnabled === true,
      'AWS::S3::Bucket': (r) => r.Properties.BucketEncryption.ServerSideEncryptionConfiguration.length === 1,
      // CloudWatch Logs encrypts every log group at rest (service keys); Lambda encrypts its
      // environment variables with the AWS managed key when no KmsKeyArn is given.
      'AWS::Logs::LogGroup': () => true,
      'AWS::Lambda::Function': (r) => r.Properties.KmsKeyArn === undefined,
    };
    const noData = new Set([
      'AWS::IAM::Role',
      'AWS::IAM::Policy',
      'AWS::S3::BucketPolicy',
      'AWS::SQS::QueuePolicy',
      'AWS::Events::Rule',
      'AWS::Lambda::Permission',
      'AWS::Lambda::EventSourceMapping',
      'AWS::Lambda::EventInvokeConfig',
      'AWS::CloudWatch::Alarm',
      'AWS::CloudWatch::Dashboard',
      'AWS::ApplicationAutoScaling::ScalableTarget',
      'AWS::ApplicationAutoScaling::ScalingPolicy',
      'AWS::CDK::Metadata',
    ]);
    for (const [id, r] of Object.entries(template.toJSON().Resources as Record<string, Cfn>)) {
      if (noData.has(r.Type)) continue;
      const check = atRest[r.Type];
      assert.ok(check, `${id}: ${r.Type} is new here: say how its data is encrypted at rest`);
      assert.ok(check(r), `${id}: ${r.Type} is not encrypted at rest`);
    }
  });

  it('keeps each consumed queue invisible ≥ 6 × its consumer timeout (AWS Lambda + SQS guidance)', () => {
    const fetchTimeout = fnResource('fetch').Properties.Timeout as number;
    for (const s of FRONTIER) {
      const [, queue] = queueNamed(names.frontierQueue(s.name));
      assert.ok(queue.Properties.VisibilityTimeout >= 6 * fetchTimeout, `frontier ${s.name}`);
    }
    const mappings = resourcesOf('AWS::Lambda::EventSourceMapping');
    assert.equal(mappings.length, 3);
    for (const [, m] of mappings) {
      const queueId = m.Properties.EventSourceArn['Fn::GetAtt'][0] as string;
      const fnId = m.Properties.FunctionName.Ref as string;
      const visibility = template.toJSON().Resources[queueId].Properties.VisibilityTimeout as number;
      const timeout = template.toJSON().Resources[fnId].Properties.Timeout as number;
      assert.ok(visibility >= 6 * timeout, `${queueId}: ${visibility} s < 6 × ${timeout} s`);
    }
  });

  it('maps only the stage queues to their functions, with topology batching and ReportBatchItemFailures', () => {
    for (const stage of ['extract', 'index', 'wake'] as const) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(stack.stageQueues[stage].queue), 'Arn'] },
        FunctionName: { Ref: logicalId(stack.functions[STAGE_QUEUES[stage].consumer]) },
        BatchSize: STAGE_QUEUES[stage].batchSize,
        MaximumBatchingWindowInSeconds: STAGE_QUEUES[stage].maxBatchingWindowSeconds,
        ScalingConfig: { MaximumConcurrency: STAGE_QUEUES[stage].maxConcurrency },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
    // The frontier is polled by fetch with weights (seed 001): no mapping may drain it unweighted;
    // fetch's only mapping is its wake-up queue.
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
  });

  it('has no IAM action or resource wildcard, and no managed policies', () => {
    const policies = resourcesOf('AWS::IAM::Policy');
    assert.equal(policies.length, STAGES.length);
    for (const [id, p] of policies) {
      for (const st of p.Properties.PolicyDocument.Statement as Cfn[]) {
        for (const action of [st.Action].flat() as string[])
          assert.ok(!action.includes('*'), `${id}: ${action}`);
        assert.ok(![st.Resource].flat().includes('*'), `${id}: Resource "*"`);
      }
    }
    for (const [id, role] of resourcesOf('AWS::IAM::Role')) {
      assert.equal(role.Properties.ManagedPolicyArns, undefined, `${id} uses no AWSLambdaBasicExecutionRole`);
      assert.equal(role.Properties.Policies, undefined, id);
    }
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
  });

  for (const stage of ['seed', 'fetch', 'extract', 'index', 'refresh'] as const) {
    it(`grants ${stage} exactly its declared actions (shared/aws/permissions.ts) on exactly its resources`, () => {
      // The declaration is what test/integration/least-privilege.test.ts checks the code's requests against.
      assert.deepEqual(grantsOf(template, stack, labels, stage), expectedGrants(stage, names));
    });
  }

  it('encrypts both on-demand tables, with the topology key schemas, TTL and point-in-time recovery', () => {
    const common = {
      BillingMode: 'PAY_PER_REQUEST',
      SSESpecification: { SSEEnabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    };
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: {
        ...common,
        // Generated, not fixed: a retained table with a fixed name failed every deploy after a destroy.
        TableName: Match.absent(),
        KeySchema: [{ AttributeName: TABLES.urls.partitionKey, KeyType: 'HASH' }],
        // No secondary index: the refresh schedule lives in S3 manifests (a write unit a page less).
        GlobalSecondaryIndexes: Match.absent(),
      },
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      ...common,
      TableName: Match.absent(),
      KeySchema: [{ AttributeName: TABLES.hosts.partitionKey, KeyType: 'HASH' }],
    });
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
  });

  it('keeps the bucket private, encrypted, TLS-only, unnamed, with page bundles expiring after 7 days', () => {
    const [[bucketId, bucket]] = resourcesOf('AWS::S3::Bucket') as [[string, Cfn]];
    assert.deepEqual(bucket.Properties.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    assert.deepEqual(bucket.Properties.BucketEncryption, {
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    assert.equal(bucket.Properties.BucketName, undefined, 'S3 names are global: CloudFormation generates it');
    assert.equal(bucket.Properties.VersioningConfiguration, undefined);
    const rules = bucket.Properties.LifecycleConfiguration.Rules as Cfn[];
    assert.ok(rules.some((r) => r.Prefix === 'pages/' && r.ExpirationInDays === 7 && r.Status === 'Enabled'));
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('encrypts every queue with SQS-managed keys and denies non-TLS access to each', () => {
    const queues = resourcesOf('AWS::SQS::Queue');
    for (const [id, q] of queues) assert.equal(q.Properties.SqsManagedSseEnabled, true, id);
    const guarded = resourcesOf('AWS::SQS::QueuePolicy')
      .filter(([, p]) =>
        JSON.stringify(p.Properties.PolicyDocument).includes('"aws:SecureTransport":"false"'),
      )
      .flatMap(([, p]) => (p.Properties.Queues as Cfn[]).map((q) => q.Ref as string));
    assert.deepEqual(guarded.sort(), queues.map(([id]) => id).sort());
  });

  it('runs five arm64 Node.js 22+/24 functions sized from topology, with 14-day log groups', () => {
    template.resourceCountIs('AWS::Lambda::Function', STAGES.length);
    for (const stage of STAGES) {
      const p = fnResource(stage).Properties;
      assert.deepEqual(p.Architectures, ['arm64']);
      assert.match(p.Runtime, /^nodejs(2[2-9]|[3-9]\d)\.x$/);
      assert.equal(p.Handler, 'index.handler');
      assert.equal(p.Timeout, FUNCTIONS[stage].timeoutSeconds);
      assert.equal(p.MemorySize, FUNCTIONS[stage].memoryMb);
      assert.equal(p.ReservedConcurrentExecutions, FUNCTIONS[stage].reservedConcurrency);
      assert.equal(p.TracingConfig, undefined);
      const logId = p.LoggingConfig.LogGroup.Ref as string;
      assert.equal(template.toJSON().Resources[logId].Properties.RetentionInDays, 14);
    }
    assert.equal(fnResource('fetch').Properties.FunctionName, names.function('fetch'));
  });

  it('gives every function the TRAWL_* environment, queue URLs as JSON', () => {
    for (const stage of STAGES) {
      const env = fnResource(stage).Properties.Environment.Variables as Cfn;
      assert.equal(env.TRAWL_CRAWL, CRAWL);
      assert.equal(env.TRAWL_FETCH_FUNCTION, names.function('fetch'));
      assert.equal(env.TRAWL_CONFIG_KEY, 'config/crawl.json');
      // The schema it was built with: a config stored by the same schema is read without zod.
      assert.equal(env.TRAWL_CONFIG_FORMAT, configFormat());
      // Source maps at run time cost 27 MB a function (Node parses the map at load): not set.
      assert.equal(env.NODE_OPTIONS, undefined);
      assert.equal(env.POWERTOOLS_SERVICE_NAME, 'trawl');
      assert.deepEqual(env.TRAWL_BUCKET, { Ref: logicalId(stack.storage.bucket) });
      assert.deepEqual(env.TRAWL_URLS_TABLE, { Ref: logicalId(stack.storage.urls) });
      assert.deepEqual(env.TRAWL_HOSTS_TABLE, { Ref: logicalId(stack.storage.hosts) });
      const parts = env.TRAWL_QUEUES['Fn::Join'][1] as (string | Cfn)[];
      const queues = JSON.parse(parts.map((x) => (typeof x === 'string' ? x : labels[x.Ref])).join(''));
      assert.deepEqual(queues, {
        frontier: Object.fromEntries(FRONTIER.map((s) => [s.name, `frontier:${s.name}`])),
        extract: 'stage:extract',
        index: 'stage:index',
        wake: 'stage:wake',
      });
    }
  });

  it('schedules fetchTick, discovery and refresh on their rates and functions', () => {
    template.resourceCountIs('AWS::Events::Rule', 3);
    for (const spec of Object.values(SCHEDULES)) {
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: events.Schedule.rate(Duration.minutes(spec.everyMinutes)).expressionString,
        Targets: [
          Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(stack.functions[spec.target]), 'Arn'] } }),
        ],
      });
    }
    template.resourceCountIs('AWS::Lambda::Permission', 3);
  });

  it('outputs the bucket, the table names and the queue URLs', () => {
    for (const key of ['BucketName', 'UrlsTableName', 'HostsTableName', 'QueueUrls', 'FunctionNames']) {
      template.hasOutput(key, {});
    }
  });

  const assetDir = (stage: StageName) => {
    const code = stack.functions[stage].node.findChild('Code') as Asset;
    return join(Stage.of(stack)?.outdir ?? '', code.assetPath);
  };

  it('every stage bundle loads in a Node process of its own and exports its handler', () => {
    // What the Lambda runtime does first. A bundle that does not load fails every invocation
    // (found on the local cloud: the banner's createRequire collided with a dependency's once
    // identifiers were no longer minified).
    const load =
      'const m = await import(process.argv[1]); if (typeof m.handler !== "function") throw new Error("no handler export");';
    for (const stage of Object.keys(FUNCTIONS) as StageName[]) {
      const bundle = pathToFileURL(join(assetDir(stage), 'index.mjs')).href;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', load, bundle], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'WARN' },
        timeout: 60_000,
      });
      assert.equal(run.status, 0, `${stage}: ${run.stderr.slice(-2000)}`);
    }
  });

  it('bundles the PDF worker beside the extract handler, and that bundle reads a PDF in a worker thread', async () => {
    const bundles = (stage: StageName) => readdirSync(assetDir(stage)).filter((f) => f.endsWith('.mjs'));
    assert.deepEqual(bundles('extract').sort(), ['config.mjs', 'index.mjs', 'pdf-worker.mjs']);
    assert.deepEqual(bundles('fetch').sort(), ['config.mjs', 'decide.mjs', 'index.mjs']);
    const reader = createPdfWorkerReader(pathToFileURL(join(assetDir('extract'), 'pdf-worker.mjs')));
    try {
      const pdf = minimalPdf('Text from the bundled worker', 'Bundled');
      const read = await reader.read(pdf, { maxPages: 10, maxMs: 60_000, maxHeapMb: 128 });
      assert.deepEqual([read.text, read.title], ['Text from the bundled worker', 'Bundled']);
    } finally {
      await reader.close();
    }
  });

  it('the fetch bundle loads in the memory its function was sized for (what a crawl uses only when configured loads later)', () => {
    // The fetch function's memory is chosen from a measured load (RUNTIME_MB, shared/stages/
    // fetch-memory.ts): Node itself, the built-ins and the bundle. A static import of a module
    // only some configs use adds its tables to every container (the login form's HTML parser
    // did: +6.5 MB, until it was imported at the first login). The same Node measured bare and
    // with the bundle loaded, each after a full collection, the lower of two runs.
    const rss = (load: string) => {
      const probe = `${load}; globalThis.gc(); await new Promise((r) => setTimeout(r, 300)); globalThis.gc(); console.log(process.memoryUsage().rss);`;
      const runs = [0, 1].map(() => {
        const run = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', probe], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'WARN' },
          timeout: 60_000,
        });
        assert.equal(run.status, 0, run.stderr.slice(-2000));
        return Number(run.stdout.trim().split('\n').at(-1)) / 2 ** 20;
      });
      return Math.min(...runs);
    };
    const bundle = pathToFileURL(join(assetDir('fetch'), 'index.mjs')).href;
    const added = rss(`await import(${JSON.stringify(bundle)})`) - rss('');
    // 35-36 MB measured on 2026-11-29 (42 with the login form's parser loaded at once).
    assert.ok(
      added < 39,
      `loading the fetch bundle added ${added.toFixed(1)} MB to a bare Node (at most 39)`,
    );
  });

  it('the fetch bundle holds no URL decider; the one bundled beside it judges a queued task under a config', () => {
    // The fetch stage loads decide.mjs only for tasks queued under another config (fetch-scope.ts).
    const dir = assetDir('fetch');
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
    assert.doesNotMatch(code, /function createScopeFilters\b/, 'the scope filters are in the handler bundle');
    assert.match(code, /"\.\/decide\.mjs"/, 'the handler names the decider bundle beside it');
    const probe = `
      const { parseConfig } = await import(process.argv[1]);
      const { queuedTaskJudge } = await import(process.argv[2]);
      const judge = queuedTaskJudge(parseConfig({ name: 'probe', startUrls: ['https://example.com/'], scope: { exclude: ['/private/'] } }, 'probe'));
      const reasons = [{ url: 'https://example.com/private/x', depth: 1 }, { url: 'https://example.com/', depth: 0 }, { url: 'https://example.com/a', depth: 1 }].map((t) => judge(t).reason);
      console.log(JSON.stringify(reasons));`;
    const run = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        probe,
        pathToFileURL(join(dir, 'config.mjs')).href,
        pathToFileURL(join(dir, 'decide.mjs')).href,
      ],
      { encoding: 'utf8', env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'WARN' }, timeout: 60_000 },
    );
    assert.equal(run.status, 0, run.stderr.slice(-2000));
    assert.deepEqual(JSON.parse(run.stdout.trim()), ['excluded', 'start-url', 'default']);
  });

  it('every stage bundle loads without zod or undici, and validates a config with the schema bundled beside it', () => {
    // What a bundle loads is its function's memory: zod is in config.mjs, loaded only for a config
    // of another schema (shared/stored-config.ts); an ES module import of node:http would load
    // undici (scripts/bundle-builtins.mjs).
    const probe = `
      await import(process.argv[1]);
      const loaded = process.moduleLoadList.filter((m) => m.includes('undici'));
      const { parseConfig } = await import(process.argv[2]);
      const config = parseConfig({ name: 'probe', startUrls: ['https://example.com/'] }, 'probe');
      let refused = '';
      try { parseConfig({ name: 'probe', startUrls: ['not a url'] }, 'probe'); } catch (err) { refused = err.message; }
      console.log(JSON.stringify({ loaded, concurrency: config.fetch.concurrency, refused }));`;
    for (const stage of Object.keys(FUNCTIONS) as StageName[]) {
      const dir = assetDir(stage);
      const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
      assert.doesNotMatch(code, /from\s*"zod"|\bZodError\b/, `${stage}: zod is in the handler's bundle`);
      assert.doesNotMatch(
        code,
        /(^|[;}\n])import[^;"]*from\s*"node:/,
        `${stage}: a built-in imported as an ES module`,
      );
      const run = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          probe,
          pathToFileURL(join(dir, 'index.mjs')).href,
          pathToFileURL(join(dir, 'config.mjs')).href,
        ],
        { encoding: 'utf8', env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'WARN' }, timeout: 60_000 },
      );
      assert.equal(run.status, 0, `${stage}: ${run.stderr.slice(-2000)}`);
      const out = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}');
      assert.deepEqual(out.loaded, [], `${stage}: loading the bundle loaded undici`);
      assert.equal(out.concurrency, 16, `${stage}: the schema's defaults`);
      assert.match(out.refused, /startUrls/, `${stage}: a bad config is refused by the bundled schema`);
    }
  });
});
