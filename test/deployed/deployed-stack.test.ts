/**
 * The deployed stack is what we test (issue 12): `trawl deploy --local` runs the real CDK CLI
 * against the local cloud (ministack), whose Lambda executor runs the esbuild bundles as Node
 * subprocesses. The seed function starts the crawl, the fetch function is invoked by it (and by
 * its schedule), extract and index run from their SQS event source mappings. Then the CLI reads
 * the crawl through the stack's outputs. No handler is called in this process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand } from '@aws-sdk/client-lambda';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, SendMessageCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import { stopLocalCloud } from '../../cli/local-cloud.ts';
import { alive } from '../../cli/processes.ts';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { parseConfig } from '../../shared/config.ts';
import { fetchMemoryMb } from '../../shared/stages/fetch-memory.ts';
import { FUNCTIONS, resourceNames } from '../../shared/topology.ts';
import { minimalPdf } from '../helpers/archive-builders.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const BIN = join(PROJECT_ROOT, 'bin', 'trawl.mjs');
const cwd = mkdtempSync(join(tmpdir(), 'trawl-deployed-'));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function noAwsEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  return { ...env, POWERTOOLS_LOG_LEVEL: 'WARN' };
}

function trawl(args: string[], timeout = 300_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: noAwsEnv(), timeout, encoding: 'utf8' },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

const lines = (s: string) =>
  s
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const page = (title: string, links: string[]) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title} text</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;
const html = (body: string) => ({ headers: { 'content-type': 'text/html; charset=utf-8' }, body });

describe('deployed stack on the local cloud', { timeout: 900_000 }, () => {
  let site: SiteServer;
  const cfg = 'crawl.json';

  before(async () => {
    site = await startSiteServer({
      routes: {
        '/': html(page('Home', ['/a', '/b', '/missing'])),
        '/a': html(page('Alpha', ['/b', '/report.pdf'])),
        // read by the PDF worker bundled beside the extract handler (pdf-worker.mjs)
        '/report.pdf': {
          headers: { 'content-type': 'application/pdf' },
          body: minimalPdf('Quarterly text from the deployed worker', 'Deployed Report'),
        },
        '/b': html(page('Beta one', ['/'])),
        '/robots.txt': { headers: { 'content-type': 'text/plain' }, body: 'User-agent: *\nAllow: /\n' },
      },
    });
    writeFileSync(
      join(cwd, cfg),
      JSON.stringify({
        name: 'deployedtest',
        startUrls: [`${site.url}/`],
        // 128 requests in flight: the fetch function is sized from this (192 MB, not the default's 160 MB)
        fetch: { allowPrivateNetworks: true, concurrency: 128 },
        refresh: { maxAge: '1s', discoveryInterval: '1m' },
      }),
    );
  });

  after(async () => {
    await trawl(['destroy', '-c', cfg, '--local']);
    await stopLocalCloud(cwd); // when the last test failed before it stopped the cloud
    await site.close();
  });

  it('deploys with the real CDK CLI and crawls through the deployed functions', async () => {
    const deploy = await trawl(['deploy', '-c', cfg, '--local']);
    assert.equal(deploy.code, 0, deploy.stderr.slice(-3000));
    assert.match(
      deploy.stdout,
      /deployed Trawl-deployedtest to http:\/\/127\.0\.0\.1:\d+; crawl "deployedtest" seeded/,
    );
    const record = JSON.parse(readFileSync(join(cwd, '.trawl', 'deployments', 'deployedtest.json'), 'utf8'));
    // The cloud assembly is the working folder's, not the installed package's (a read-only install,
    // two folders deploying one crawl name).
    assert.ok(existsSync(join(cwd, '.trawl', 'cdk.out', 'Trawl-deployedtest', 'manifest.json')));
    assert.equal(existsSync(join(PROJECT_ROOT, 'cdk.out', 'Trawl-deployedtest')), false);
    // The bucket's name is CloudFormation's, not one the CLI could guess.
    assert.notEqual(record.outputs.BucketName, 'trawl-deployedtest-store');
    const status = await trawl(['status', '-c', cfg, '--wait', '--timeout', '240']);
    assert.equal(status.code, 0, status.stderr);
    const s = JSON.parse(status.stdout);
    assert.equal(s.idle, true);
    assert.equal(s.documents, 4);
    assert.equal(s.urls['error/permanent'], 1);
  });

  it('deploys the fetch function at the memory its config needs (fetch.concurrency 128: 192 MB)', async () => {
    const cloud = JSON.parse(readFileSync(join(cwd, '.trawl', 'local-cloud.json'), 'utf8'));
    const clients = createAwsClients({ endpoint: cloud.endpoint, count: false });
    process.env.AWS_ACCESS_KEY_ID = cloud.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = 'test';
    const config = parseConfig(JSON.parse(readFileSync(join(cwd, cfg), 'utf8')));
    // Only the fetch function has a fixed name (the stack invokes it by name); it is the one the config sizes.
    const deployed = await clients.lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: resourceNames(config.name).function('fetch') }),
    );
    assert.equal(deployed.MemorySize, fetchMemoryMb(config.fetch));
    assert.notEqual(fetchMemoryMb(config.fetch), FUNCTIONS.fetch.memoryMb, 'sized from the config');
  });

  it('reads documents, URL states (a 404 error) and the change feed from the stack outputs', async () => {
    const docs = lines((await trawl(['docs', '-c', cfg])).stdout);
    assert.deepEqual(
      docs.map((d) => d.url),
      [`${site.url}/`, `${site.url}/a`, `${site.url}/b`, `${site.url}/report.pdf`],
    );
    assert.match(String(docs[2]?.title), /Beta one/);
    assert.deepEqual(
      [docs[3]?.title, docs[3]?.content],
      ['Deployed Report', 'Quarterly text from the deployed worker'],
    );
    const urls = lines((await trawl(['urls', '-c', cfg])).stdout);
    const missing = urls.find((u) => u.url === `${site.url}/missing`);
    assert.equal(missing?.state, 'error');
    assert.equal(missing?.httpStatus, 404);
    const changes = lines((await trawl(['changes', '-c', cfg])).stdout);
    assert.deepEqual([...new Set(changes.filter((c) => c.type === 'upsert').map((c) => c.url))].sort(), [
      `${site.url}/`,
      `${site.url}/a`,
      `${site.url}/b`,
      `${site.url}/report.pdf`,
    ]);
    // Issue 18: the deployed handlers' hourly usage items price the crawl in `trawl report`.
    const out = join(cwd, 'report.html');
    const report = await trawl(['report', '-c', cfg, '-o', out]);
    assert.equal(report.code, 0, report.stderr);
    const json = /<script id="report-data" type="application\/json">(.*?)<\/script>/s.exec(
      readFileSync(out, 'utf8'),
    );
    const runs = (
      JSON.parse(json?.[1] ?? '{}') as {
        runs: { kind: string; pages: number; costPerMillion: number | null }[];
      }
    ).runs;
    const hours = runs.filter((r) => r.kind === 'deployed');
    assert.ok(hours.reduce((n, r) => n + r.pages, 0) >= 4, JSON.stringify(runs));
    assert.ok(
      hours.some((r) => (r.costPerMillion ?? 0) > 0),
      JSON.stringify(runs),
    );
  });

  it('a refresh cycle (the refresh function invoked) fetches a changed page again', async () => {
    // --dry-run reads the deployed crawl (maxAge 1s: every document is due); --now, which only
    // this process's clock could follow, is refused. Both used to run on an empty embedded emulator.
    const plan = await trawl(['refresh', '-c', cfg, '--dry-run']);
    assert.equal(plan.code, 0, plan.stderr);
    assert.doesNotMatch(plan.stderr, /embedded emulator/);
    assert.ok(
      lines(plan.stdout).some((p) => p.url === `${site.url}/b` && p.action === 'refresh'),
      plan.stdout,
    );
    const at = await trawl(['refresh', '-c', cfg, '--now', '2030-01-01T00:00:00Z']);
    assert.equal(at.code, 2);
    assert.match(at.stderr, /--now: crawl "deployedtest" is deployed/);
    site.route('/b', html(page('Beta two', ['/'])));
    const refresh = await trawl(['refresh', '-c', cfg]);
    assert.equal(refresh.code, 0, refresh.stderr);
    assert.match(refresh.stdout, /invoked .*Refresh/);
    assert.doesNotMatch(refresh.stderr, /differs from the config deployed/);
    // The functions crawl the config deploy uploaded: an edited FILE is named, not silently ignored.
    const edited = JSON.parse(readFileSync(join(cwd, cfg), 'utf8'));
    writeFileSync(
      join(cwd, 'edited.json'),
      JSON.stringify({ ...edited, startUrls: [...edited.startUrls, `${site.url}/b`] }),
    );
    const crawlEdited = await trawl(['crawl', '-c', 'edited.json']);
    assert.equal(crawlEdited.code, 0, crawlEdited.stderr);
    assert.match(
      crawlEdited.stderr,
      /warning: edited\.json differs from the config deployed to Trawl-deployedtest, which its functions use: run "trawl deploy -c edited\.json"/,
    );
    let title = '';
    for (let i = 0; i < 60 && !title.includes('Beta two'); i++) {
      await trawl(['status', '-c', cfg, '--wait', '--timeout', '120']);
      const docs = lines((await trawl(['docs', '-c', cfg])).stdout);
      title = String(docs.find((d) => d.url === `${site.url}/b`)?.title);
    }
    assert.match(title, /Beta two/);
  });

  it('a message that fails every time ends in its dead-letter queue', async () => {
    const record = JSON.parse(readFileSync(join(cwd, '.trawl', 'deployments', 'deployedtest.json'), 'utf8'));
    // The cloud assembly is the working folder's, not the installed package's (a read-only install,
    // two folders deploying one crawl name).
    assert.ok(existsSync(join(cwd, '.trawl', 'cdk.out', 'Trawl-deployedtest', 'manifest.json')));
    assert.equal(existsSync(join(PROJECT_ROOT, 'cdk.out', 'Trawl-deployedtest')), false);
    const cloud = JSON.parse(readFileSync(join(cwd, '.trawl', 'local-cloud.json'), 'utf8'));
    const clients = createAwsClients({ endpoint: cloud.endpoint, count: false });
    process.env.AWS_ACCESS_KEY_ID = cloud.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = 'test';
    const queue = JSON.parse(record.outputs.QueueUrls).extract as string;
    const dlq = JSON.parse(record.outputs.DeadLetterQueueUrls).extract as string;
    // An operator's change to the deployed queue, so 5 receives take seconds, not 5 × 6 minutes.
    await clients.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: queue, Attributes: { VisibilityTimeout: '1' } }),
    );
    // A pointer to a bundle that is not gzip: the extract function fails it on every receive.
    await clients.s3.send(
      new PutObjectCommand({
        Bucket: record.outputs.BucketName,
        Key: 'raw/poison.jsonl.gz',
        Body: 'not gzip',
      }),
    );
    await clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: queue,
        MessageBody: JSON.stringify({ bundle: 'raw/poison.jsonl.gz', count: 1 }),
      }),
    );
    let body: string | undefined;
    for (let i = 0; i < 90 && !body; i++) {
      // Visibility 0: the message stays in the DLQ for `trawl redrive` below.
      const r = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: dlq, WaitTimeSeconds: 2, VisibilityTimeout: 0 }),
      );
      body = r.Messages?.[0]?.Body;
    }
    assert.deepEqual(JSON.parse(body ?? 'null'), { bundle: 'raw/poison.jsonl.gz', count: 1 });
    // After a fix, `trawl redrive` moves it back to the extract queue, where the function takes it up.
    const redrive = await trawl(['redrive', '-c', cfg]);
    assert.equal(redrive.code, 0, redrive.stderr);
    assert.equal(
      redrive.stdout,
      'moved 1 dead-lettered message(s) back (extract 1): the deployed functions take them up\n',
    );
  });

  it('the EventBridge schedules start the deployed functions: status shows their last runs', async () => {
    // The fetch tick and the discovery cycle (discoveryInterval 1m) are rate(1 minute) rules, and so
    // is the refresh cycle (maxAge 1s; it was hourly whatever the config said): a refresh run after
    // this test started is the schedule's, as no command invokes the function meanwhile.
    const started = Date.now();
    const refreshed = (r: Record<string, string | null>) => Date.parse(String(r.refresh)) >= started;
    let runs: Record<string, string | null> = {};
    for (let i = 0; i < 60 && !(runs.fetchTick && runs.discovery && refreshed(runs)); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 2000));
      const status = await trawl(['status', '-c', cfg]);
      assert.equal(status.code, 0, status.stderr);
      runs = JSON.parse(status.stdout).lastScheduleRuns;
    }
    const deployedAt = Date.parse(
      JSON.parse(readFileSync(join(cwd, '.trawl', 'deployments', 'deployedtest.json'), 'utf8')).deployedAt ??
        '1970-01-01T00:00:00Z',
    );
    for (const rule of ['fetchTick', 'discovery']) {
      assert.ok(runs[rule], `${rule} never ran: ${JSON.stringify(runs)}`);
      assert.ok(Date.parse(String(runs[rule])) >= deployedAt - 60_000, `${rule} ran before the deploy`);
    }
    assert.ok(refreshed(runs), `no scheduled refresh cycle: ${JSON.stringify(runs)}`);
  });

  it('an update (deploy again) with a narrower scope says the next refresh cycle applies it', async () => {
    const config = JSON.parse(readFileSync(join(cwd, cfg), 'utf8'));
    writeFileSync(join(cwd, cfg), JSON.stringify({ ...config, scope: { exclude: ['/b$'] } }));
    try {
      const deploy = await trawl(['deploy', '-c', cfg, '--local']);
      assert.equal(deploy.code, 0, deploy.stderr.slice(-3000));
      assert.match(deploy.stdout, /deployed Trawl-deployedtest to /);
      assert.match(
        deploy.stderr,
        /trawl: the config changed since this crawl's pages were read \(.+\); the stack's next scheduled refresh cycle applies it/,
      );
    } finally {
      writeFileSync(join(cwd, cfg), JSON.stringify(config));
    }
  });

  it('destroy removes its own stack and keeps the local cloud for another crawl deployed there', async () => {
    // Destroying one crawl used to stop the local cloud, losing every other crawl deployed to it.
    // The other crawl is a second deployment record on the same cloud (destroy reads only where
    // each record points; a second real deploy would take another minute).
    const dir = join(cwd, '.trawl', 'deployments');
    const record = JSON.parse(readFileSync(join(dir, 'deployedtest.json'), 'utf8'));
    writeFileSync(join(dir, 'neighbour.json'), JSON.stringify({ ...record, crawl: 'neighbour' }));
    // The local cloud unpacked each function's code into temporary folders: they go with the stack.
    const copies = () =>
      readdirSync(tmpdir()).filter((n) => n.startsWith('ministack-lambda-Trawl-deployedtest-'));
    assert.ok(copies().length > 0, 'the functions ran from copies in the temporary folder');
    const destroy = await trawl(['destroy', '-c', cfg, '--local']);
    assert.equal(destroy.code, 0, destroy.stderr.slice(-3000));
    assert.deepEqual(copies(), []);
    assert.match(
      destroy.stdout,
      /destroyed Trawl-deployedtest; the local cloud keeps running for "neighbour"/,
    );
    const cloud = JSON.parse(readFileSync(join(cwd, '.trawl', 'local-cloud.json'), 'utf8'));
    assert.ok(alive(cloud.pid), 'the local cloud runs on');
    assert.equal(existsSync(join(dir, 'deployedtest.json')), false);
    // The URL table and the bucket are the crawl's data: retained, and named with how to delete them.
    const { UrlsTableName: table, BucketName: bucket } = record.outputs;
    assert.ok(destroy.stdout.includes(`kept: URL table ${table} and bucket ${bucket}`), destroy.stdout);
    // The commands that delete them say where they are (run as printed they asked for a region,
    // or went to AWS): the local cloud's endpoint, region and credentials.
    assert.ok(
      destroy.stdout.includes(
        `AWS_ACCESS_KEY_ID=${cloud.accessKeyId} AWS_SECRET_ACCESS_KEY=test aws dynamodb delete-table --endpoint-url ${cloud.endpoint} --region ${cloud.region} --table-name ${table}`,
      ),
      destroy.stdout,
    );
    const clients = createAwsClients({ endpoint: cloud.endpoint, count: false });
    const kept = await clients.ddbRaw.send(new DescribeTableCommand({ TableName: table }));
    assert.equal(kept.Table?.TableName, table);
    // On AWS a deploy after this used to fail: the retained table kept its fixed name. Its name is
    // CloudFormation's now (test/infra/crawler-stack.test.ts), with a random suffix on AWS; this
    // local cloud derives generated names from the stack and would overwrite the table, so a
    // second deploy here could not show either.
    rmSync(join(dir, 'neighbour.json'));
    await stopLocalCloud(cwd);
    assert.equal(alive(cloud.pid), false);
  });
});
