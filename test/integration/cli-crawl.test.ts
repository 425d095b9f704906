/**
 * The user's path through the real `trawl` command: crawl the bundled demo on the embedded
 * emulator (started by the CLI itself, in the background), read the index, stop the emulator,
 * and find the same state again after a restart (it is saved under .trawl/).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { engineInstalled } from '../../cli/search-engine.ts';
import { resourceNames } from '../../shared/topology.ts';
import { BIN, cliEnv, NODE, ROOT, trawlAsync } from '../helpers/cli.ts';

function trawl(cwd: string, ...args: string[]) {
  return trawlWith({}, cwd, ...args);
}

function trawlWith(env: Record<string, string>, cwd: string, ...args: string[]) {
  const r = spawnSync(NODE, [BIN, ...args], {
    cwd,
    env: cliEnv(cwd, env),
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/**
 * A real poison message in the demo crawl's extract queue: a page-bundle pointer whose object is not
 * gzip (a bundle that is gone is a temporary error of its pages, not a failed message).
 */
async function poisonExtract(cwd: string) {
  const { endpoint } = JSON.parse(readFileSync(join(cwd, '.trawl', 'emulator.json'), 'utf8'));
  const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
  const sqs = new SQSClient({ endpoint, region: 'us-east-1', credentials });
  const { QueueUrl: extract = '' } = await sqs.send(
    new GetQueueUrlCommand({ QueueName: resourceNames('demo').stageQueue('extract') }),
  );
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
  await s3.send(
    new PutObjectCommand({
      Bucket: resourceNames('demo').bucket,
      Key: 'pages/poison.jsonl.gz',
      Body: 'not gzip',
    }),
  );
  s3.destroy();
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: extract,
      MessageBody: JSON.stringify({ bundle: 'pages/poison.jsonl.gz', count: 1 }),
    }),
  );
  return { sqs, extract };
}

describe('trawl CLI on the embedded emulator', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'trawl-cli-'));
  });
  after(() => {
    trawl(cwd, 'emulator', 'stop');
    trawl(cwd, 'search-engine', 'stop'); // the demo ends with a search when the engine is installed
  });

  it('crawl --demo drains, prints a summary and starts the emulator in the background', () => {
    const r = trawl(cwd, 'crawl', '-c', join(ROOT, 'demo', 'trawl.json'), '--demo', '--no-progress');
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /using the embedded emulator/);
    assert.match(r.out, /Trawl crawl "demo" finished/);
    assert.match(r.out, /documents: 293 new/);
    assert.match(r.out, /S3 PUTs per indexed page: 0\.0\d\d/);
    assert.doesNotMatch(r.err, /^\s+at /m);
    // The demo ends by searching its own site in the embedded engine (when setup installed one).
    if (engineInstalled())
      assert.match(r.err, /npx trawl search .*--limit 3\n\{"url":"http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('with the feed sink, search says only --demo runs update the index, and reindex is refused', () => {
    const demo = join(ROOT, 'demo', 'trawl.json');
    // A reindex built an index that later crawls never updated: searches answered stale pages.
    const reindex = trawl(cwd, 'reindex', '-c', demo);
    assert.equal(reindex.code, 2);
    assert.match(
      reindex.err,
      /trawl\.json: index\.sink is "feed", so crawls and refreshes would not keep a rebuilt index up to date: set index\.sink to "opensearch" first/,
    );
    if (!engineInstalled()) return;
    const found = trawl(cwd, 'search', '-c', demo, 'page', '--limit', '1');
    assert.equal(found.code, 0, found.err);
    assert.equal(found.out.trim().split('\n').length, 1);
    // A query that starts with an exclusion is a query, not an unknown option of the command.
    const excluding = trawl(cwd, 'search', '-c', demo, '-nosuchwordanywhere', '--limit', '2');
    assert.equal(excluding.code, 0, excluding.err);
    assert.equal(excluding.out.trim().split('\n').length, 2, 'every page but those with the word');
    assert.match(
      found.err,
      /warning: .*trawl\.json has index\.sink "feed": only --demo runs update index trawl-demo/,
    );
    const other = join(cwd, 'feed-only.json');
    writeFileSync(other, JSON.stringify({ name: 'feed-only', startUrls: ['http://127.0.0.1:9/'] }));
    const none = trawl(cwd, 'search', '-c', other, 'page');
    assert.equal(none.code, 2);
    assert.match(
      none.err,
      /no search index trawl-feed-only: .*feed-only\.json has index\.sink "feed" \(documents go to the change feed only\): set it to "opensearch", then crawl or run trawl reindex/,
    );
  });

  it('docs prints one JSON document per line with the contract fields', () => {
    const r = trawl(cwd, 'docs', '-c', join(ROOT, 'demo', 'trawl.json'));
    assert.equal(r.code, 0, r.err);
    const docs = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(docs.length, 293);
    for (const field of [
      'url',
      'title',
      'content',
      'contentType',
      'mimeType',
      'charset',
      'size',
      'hash',
      'depth',
      'meta',
      'indexedAt',
    ]) {
      assert.ok(field in docs[0], `missing ${field}`);
    }
  });

  it('status reads a crawl run here (no deployment): queues, URL states, documents, its last run', () => {
    const r = trawl(cwd, 'status', '-c', join(ROOT, 'demo', 'trawl.json'), '--wait', '--timeout', '60');
    assert.equal(r.code, 0, r.err);
    const s = JSON.parse(r.out);
    assert.equal(s.crawl, 'demo');
    assert.equal(s.stack, null);
    assert.equal(s.documents, 293);
    assert.equal(s.urls.indexed, 293);
    assert.equal(s.urls['error/permanent'], 10);
    assert.equal(s.idle, true);
    assert.deepEqual(s.queues['frontier/user'], { visible: 0, inFlight: 0 });
    assert.deepEqual(s.queues.wake, { visible: 0, inFlight: 0 }, 'the wake-up calls are read too');
    assert.equal(s.deadLetters.wake, 0, "and their dead-letter queue's depth");
    assert.ok(Date.parse(s.lastScheduleRuns.discovery) > 0, 'the crawl is the last discovery cycle');
    assert.equal(s.lastScheduleRuns.refresh, null);
    // A crawl with no state here is named, and nothing is made for it.
    const none = join(cwd, 'none.json');
    writeFileSync(none, JSON.stringify({ name: 'never-crawled', startUrls: ['http://127.0.0.1:9/'] }));
    const missing = trawl(cwd, 'status', '-c', none);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /crawl "never-crawled" has no state here: run "trawl crawl -c .*none\.json"/);
    // The readers too: they used to make the crawl's resources and print nothing (a typo in the
    // name read as an empty index), after which status --wait waited for ever.
    // And a refresh: it made them and refreshed nothing, exit 0 (its dry run too).
    for (const command of ['docs', 'urls', 'changes', 'clear-errors', 'refresh', 'refresh --dry-run']) {
      const r = trawl(cwd, ...command.split(' '), '-c', none);
      assert.equal(r.code, 2, `${command}: ${r.err}`);
      assert.match(r.err, /crawl "never-crawled" has no state here/);
    }
    assert.equal(trawl(cwd, 'status', '-c', none).code, 2, 'still nothing made for it');
    // A --now before the crawl's own time, on a crawl no --now ever moved: the warning says the
    // crawl is at the real time (it blamed "an earlier --now").
    const past = trawl(
      cwd,
      'refresh',
      '-c',
      join(ROOT, 'demo', 'trawl.json'),
      '--dry-run',
      '--now',
      '2020-01-01T00:00:00Z',
    );
    assert.equal(past.code, 0, past.err);
    assert.match(past.err, /on its own clock \(the real time: no --now has moved it\); it does not go back/);
    // A --since that is not a time was compared as text with the records' times: nothing, exit 0.
    const demo = join(ROOT, 'demo', 'trawl.json');
    const since = trawl(cwd, 'changes', '-c', demo, '--since', 'yesterday');
    assert.equal(since.code, 2);
    assert.match(since.err, /--since: not an ISO time \(e\.g\. 2026-03-01T12:00:00Z\): yesterday/);
    const all = trawl(cwd, 'changes', '-c', demo).out.trim().split('\n');
    assert.equal(all.length, 293, 'every document new once');
    // A time with an offset names the same instant as in UTC (it was compared as text).
    const at = JSON.parse(all[0] as string).at as string;
    const later = new Date(Date.parse(at) + 1).toISOString().replace('Z', '+00:00');
    const after = trawl(cwd, 'changes', '-c', demo, '--since', later).out.trim().split('\n').filter(Boolean);
    assert.equal(after.length, all.filter((l) => (JSON.parse(l).at as string) > at).length);
  });

  it('urls shows states, and the state survives an emulator stop and restart', () => {
    const before = trawl(cwd, 'urls', '-c', join(ROOT, 'demo', 'trawl.json'));
    const states = before.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(states.filter((s) => s.state === 'error' && s.httpStatus === 404).length, 10);
    // Every command saved what it changed: the stop has nothing left to save.
    const stop = trawl(cwd, 'emulator', 'stop');
    assert.equal(stop.code, 0, stop.err);
    assert.match(stop.out, /emulator stopped \(its state was already saved in \.trawl\/\)/);
    assert.match(trawl(cwd, 'emulator', 'status').out, /not running/);
    const again = trawl(cwd, 'urls', '-c', join(ROOT, 'demo', 'trawl.json'));
    assert.equal(again.code, 0, again.err);
    assert.match(again.err, /restored the emulator's saved state/);
    assert.deepEqual(again.out, before.out);
  });

  it('urls --state, --host and --error-code keep the lines that match them all; an unknown state is exit 2', () => {
    const demo = join(ROOT, 'demo', 'trawl.json');
    const lines = (...filters: string[]) => {
      const r = trawl(cwd, 'urls', '-c', demo, ...filters);
      assert.equal(r.code, 0, r.err);
      return r.out.trim().split('\n').filter(Boolean);
    };
    const all = lines();
    const parsed = all.map((l) => JSON.parse(l));
    const where = (keep: (u: Record<string, unknown>) => boolean) => all.filter((_, i) => keep(parsed[i]));
    const { host } = new URL(parsed[0].url);
    const missing = where((u) => u.errorCode === 'http-404');
    assert.equal(missing.length, 10);
    // Unchanged lines, in the same order; the options AND together.
    assert.deepEqual(
      lines('--state', 'error/permanent', '--host', host, '--error-code', 'http-404'),
      missing,
    );
    assert.deepEqual(
      lines('--state', 'indexed'),
      where((u) => u.state === 'indexed'),
    );
    assert.deepEqual(
      lines('--host', host.replace(/:\d+$/, '')),
      where((u) => new URL(String(u.url)).host === host),
    );
    assert.deepEqual(lines('--state', 'error/temporary', '--error-code', 'http-404'), []);
    assert.deepEqual(lines('--host', 'other.test'), []);
    // Any case of an error code, and a URL given for its host (helper-53: both matched nothing).
    assert.deepEqual(lines('--error-code', 'HTTP-404', '--host', `http://${host}/some/page`), missing);
    const typo = trawl(cwd, 'urls', '-c', demo, '--state', 'indexd');
    assert.equal(typo.code, 2);
    assert.match(
      typo.err,
      /trawl: urls: unknown --state "indexd": one of pending, indexed, followed, ignored, error, duplicate, error\/permanent, error\/temporary/,
    );
  });

  it('clear-errors forgets URLs in error state', () => {
    // A command killed before its save left its marker (`<crawl>.<pid>`, the pid gone): the next
    // command that saves the crawl clears it, and a stop then has nothing to save (it saved the
    // crawl again at every stop).
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(join(cwd, '.trawl', 'unsaved', `demo.${dead}`), '');
    const r = trawl(cwd, 'clear-errors', '-c', join(ROOT, 'demo', 'trawl.json'));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /forgot 10 URL/);
    assert.equal(existsSync(join(cwd, '.trawl', 'unsaved', `demo.${dead}`)), false);
    const states = trawl(cwd, 'urls', '-c', join(ROOT, 'demo', 'trawl.json'))
      .out.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(states.filter((s) => s.state === 'error').length, 0);
  });

  it('a message that fails every retry: crawl exits 1 naming redrive, which moves it back', async () => {
    const { sqs, extract } = await poisonExtract(cwd);
    // Failed records come back after the lease: 1 s here, so the five receives take seconds.
    const crawl = trawlAsync(
      cwd,
      { TRAWL_LEASE_SECONDS: '1' },
      'crawl',
      '-c',
      join(ROOT, 'demo', 'trawl.json'),
      '--demo',
      '--no-progress',
    );
    const r = await crawl;
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /dead-lettered this run \(failed every retry, their URLs left pending\): 1/);
    assert.match(
      r.err,
      /after a fix, "trawl redrive -c [^"]+" puts them back and "trawl crawl -c [^"]+" resumes them/,
    );
    const moved = trawl(cwd, 'redrive', '-c', join(ROOT, 'demo', 'trawl.json'));
    assert.equal(moved.code, 0, moved.err);
    assert.match(
      moved.out,
      /^moved 1 dead-lettered message\(s\) back \(extract 1\): "trawl crawl -c .*" resumes them\n$/,
    );
    const back = await sqs.send(new ReceiveMessageCommand({ QueueUrl: extract, VisibilityTimeout: 0 }));
    assert.deepEqual(JSON.parse(back.Messages?.[0]?.Body ?? 'null'), {
      bundle: 'pages/poison.jsonl.gz',
      count: 1,
    });
    await sqs.send(new PurgeQueueCommand({ QueueUrl: extract }));
    assert.match(
      trawl(cwd, 'redrive', '-c', join(ROOT, 'demo', 'trawl.json')).out,
      /^no dead-lettered messages\n$/,
    );
    sqs.destroy();
  });

  it('a crawl whose output pipe closes (`| head -1`) still ends as it would: exit 1 for a dead letter, nothing unsaved', async () => {
    // Until 2026-11-28 the closed pipe exited 0 at the summary, before the run record, the
    // snapshot save and the dead-letter check that come after it.
    const { sqs, extract } = await poisonExtract(cwd);
    const child = spawn(
      NODE,
      [BIN, 'crawl', '-c', join(ROOT, 'demo', 'trawl.json'), '--demo', '--no-progress'],
      {
        cwd,
        env: cliEnv(cwd, { TRAWL_LEASE_SECONDS: '1' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // The reader goes away before the command has written anything: every write is an EPIPE.
    child.stdout.destroy();
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    const code = await new Promise<number | null>((done) => child.on('exit', (c) => done(c)));
    assert.equal(code, 1, err);
    assert.match(err, /"trawl redrive -c [^"]+" puts them back/);
    const unsaved = join(cwd, '.trawl', 'unsaved');
    const left = existsSync(unsaved) ? readdirSync(unsaved).filter((f) => f.startsWith('demo.')) : [];
    assert.deepEqual(left, [], 'the snapshot was saved at the end of the command');
    assert.equal(trawl(cwd, 'redrive', '-c', join(ROOT, 'demo', 'trawl.json')).code, 0);
    // Taken off the queue by hand: one PurgeQueue a minute (the test before used it).
    const back = await sqs.send(new ReceiveMessageCommand({ QueueUrl: extract, WaitTimeSeconds: 1 }));
    for (const m of back.Messages ?? [])
      await sqs.send(new DeleteMessageCommand({ QueueUrl: extract, ReceiptHandle: m.ReceiptHandle }));
    assert.equal(back.Messages?.length, 1);
    sqs.destroy();
  });

  it('bad input exits 2 with the file and field, no stack trace', () => {
    const bad = join(cwd, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({ name: 'x', startUrls: ['http://a.example/'], fetch: { timeout: 5 } }),
    );
    const r = trawl(cwd, 'crawl', '-c', bad);
    assert.equal(r.code, 2);
    assert.match(r.err, /bad\.json: fetch\.timeout: unknown key/);
    assert.doesNotMatch(r.err, /^\s+at /m);
    const missing = trawl(cwd, 'docs', '-c', join(cwd, 'nope.json'));
    assert.equal(missing.code, 2);
    assert.match(missing.err, /nope\.json: cannot read/);
    assert.equal(trawl(cwd, 'crawl', '--bogus').code, 2);
    // A report to where it cannot be written: said before the report is built, no stack trace.
    const demo = join(ROOT, 'demo', 'trawl.json');
    for (const [out, why] of [
      [join(cwd, 'no-such-folder', 'r.html'), /ENOENT: its folder .*no-such-folder/],
      [cwd, /a folder/],
    ] as const) {
      const report = trawl(cwd, 'report', '-c', demo, '-o', out);
      assert.equal(report.code, 2, report.err);
      assert.match(report.err, /^trawl: -o: cannot write /);
      assert.match(report.err, why);
      assert.doesNotMatch(report.err, /^\s+at /m);
    }
  });

  it('a search endpoint without a scheme, or one that does not answer: exit 2 before anything is crawled', () => {
    // "localhost:9200" passed as a URL and failed in the client with a stack trace; an engine that
    // was down failed every index batch until their retries ran out: the pages were lost.
    const write = (name: string, endpoint: string) => {
      const file = join(cwd, `${name}.json`);
      const index = { sink: 'opensearch', opensearch: { endpoint } };
      writeFileSync(file, JSON.stringify({ name, startUrls: ['http://127.0.0.1:9/'], index }));
      return file;
    };
    const schemeless = trawl(cwd, 'crawl', '-c', write('noscheme', 'localhost:9200'));
    assert.equal(schemeless.code, 2);
    assert.match(
      schemeless.err,
      /noscheme\.json: index\.opensearch\.endpoint: an http:\/\/ or https:\/\/ URL/,
    );
    const down = trawl(cwd, 'crawl', '-c', write('enginedown', 'http://127.0.0.1:9/'), '--no-progress');
    assert.equal(down.code, 2, down.err);
    assert.match(
      down.err,
      /index\.opensearch\.endpoint http:\/\/127\.0\.0\.1:9\/ does not answer \(.*ECONNREFUSED/,
    );
    assert.doesNotMatch(down.err, /^\s+at /m);
    assert.doesNotMatch(down.out, /finished/);
  });

  it('a fetch.auth secret that does not resolve exits 2 before the crawl starts, naming the field', () => {
    // The fetch function found it instead, failed every invocation, and the crawl never ended.
    const config = join(cwd, 'secret.json');
    writeFileSync(
      config,
      JSON.stringify({
        name: 'secret-check',
        startUrls: ['http://127.0.0.1:9/'],
        fetch: {
          allowPrivateNetworks: true,
          auth: [
            {
              urlPrefix: 'http://127.0.0.1:9/',
              basic: { username: 'u', password: { env: 'TRAWL_NOT_SET' } },
            },
          ],
        },
      }),
    );
    const r = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(r.code, 2, r.err);
    assert.match(
      r.err,
      /secret\.json: fetch\.auth\.0\.basic\.password: environment variable TRAWL_NOT_SET is not set/,
    );
    assert.doesNotMatch(r.err, /^\s+at /m);
    // Found before the crawl's resources were made: nothing of it is left for `status` to show
    // (until 2026-11-28 its tables and queues were made first, and status showed a crawl never run).
    const status = trawl(cwd, 'status', '-c', config);
    assert.equal(status.code, 2, status.out);
    assert.match(status.err, /secret-check/);
  });

  it('credentials sent over plain http: one warning, in words (the fetch stage repeated it as a JSON log line)', () => {
    const config = join(cwd, 'cleartext.json');
    writeFileSync(
      config,
      JSON.stringify({
        name: 'cleartext-warning',
        startUrls: ['http://127.0.0.1:9/'],
        fetch: {
          allowPrivateNetworks: true,
          auth: [
            {
              urlPrefix: 'http://127.0.0.1:9/',
              basic: { username: 'u', password: { env: 'TRAWL_CLEARTEXT_PW' } },
            },
          ],
        },
      }),
    );
    const r = trawlWith(
      { TRAWL_CLEARTEXT_PW: 'pw', POWERTOOLS_LOG_LEVEL: 'WARN' },
      cwd,
      'crawl',
      '-c',
      config,
      '--no-progress',
    );
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.err,
      /trawl: warning: .*cleartext\.json: fetch\.auth\.0 \(http:\/\/127\.0\.0\.1:9\/\) sends its credentials over plain http/,
    );
    assert.equal(r.err.match(/plain http/g)?.length, 1, r.err);
    // The fetch stage did set up its logins (an unresolved secret there fails the crawl).
    assert.match(trawl(cwd, 'urls', '-c', config).out, /connection-refused|"error"/);
  });

  it("fetch.proxy's password that does not resolve exits 2 before the crawl starts, naming the field", () => {
    const config = join(cwd, 'proxy-secret.json');
    const proxy = {
      host: '127.0.0.1',
      port: 9,
      username: 'crawler',
      password: { env: 'TRAWL_PROXY_NOT_SET' },
    };
    writeFileSync(
      config,
      JSON.stringify({ name: 'proxy-secret-check', startUrls: ['http://127.0.0.1:9/'], fetch: { proxy } }),
    );
    const r = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(r.code, 2, r.err);
    assert.match(
      r.err,
      /proxy-secret\.json: fetch\.proxy\.password: environment variable TRAWL_PROXY_NOT_SET is not set/,
    );
    assert.doesNotMatch(r.err, /^\s+at /m);
    assert.doesNotMatch(r.out, /finished/);
  });

  it('a start URL that leads nowhere is named in a warning, though the crawl finishes', () => {
    // An empty crawl used to end "finished", exit 0, with no word why (a start URL that redirects
    // out of scope says `ignored: redirect target rejected (offsite): …` the same way).
    const config = join(cwd, 'nowhere.json');
    writeFileSync(config, JSON.stringify({ name: 'nowhere', startUrls: ['http://no-such-host.invalid/'] }));
    const r = trawlWith({ POWERTOOLS_LOG_LEVEL: 'DEBUG' }, cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /finished in/);
    // The handlers' log lines, every level, go to stderr: stdout is the command's output.
    assert.match(r.err, /\{"level":"INFO","message":"fetch done"/);
    assert.doesNotMatch(r.out, /"level":/);
    assert.match(
      r.err,
      /trawl: warning: start URL http:\/\/no-such-host\.invalid\/ led nowhere \(error: .*dns-not-found/,
    );
    // A host not found is a permanent error (seed 001), not "robots.txt unavailable", a temporary one.
    const [state] = trawl(cwd, 'urls', '-c', config)
      .out.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual([state.errorKind, state.errorCode], ['permanent', 'dns-not-found']);
    // `status --wait` says it too once the crawl has drained: a deployed crawl's only word on it
    // (`trawl deploy` seeds the crawl, and the deployed functions fetch it later).
    const waited = trawl(cwd, 'status', '-c', config, '--wait', '--timeout', '30');
    assert.equal(waited.code, 0, waited.err);
    assert.match(
      waited.err,
      /trawl: warning: start URL http:\/\/no-such-host\.invalid\/ led nowhere \(error: .*dns-not-found/,
    );
    // clear-errors forgets its error and queues it again: the next crawl tries it (and warns again).
    const cleared = trawl(cwd, 'clear-errors', '-c', config);
    assert.match(
      cleared.out,
      /^forgot 1 URL\(s\) in error state and queued them again: "trawl crawl -c .*" fetches them\n$/,
    );
    const pending = JSON.parse(trawl(cwd, 'status', '-c', config).out);
    assert.deepEqual(pending.urls, { pending: 1 });
    const again = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(again.code, 0, again.err);
    assert.match(again.err, /start URL http:\/\/no-such-host\.invalid\/ led nowhere/);
    const s = trawl(cwd, 'status', '-c', config, '--wait', '--timeout', '30');
    assert.equal(s.code, 0, s.err);
    assert.equal(JSON.parse(s.out).idle, true);
  });

  it('a crawl run again under a changed config says the next refresh applies it to the pages read before', () => {
    const config = join(cwd, 'changing.json');
    const input = { name: 'changing', startUrls: ['http://no-such-host.invalid/'] };
    writeFileSync(config, JSON.stringify({ ...input, scope: { exclude: ['/private/'] } }));
    const first = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(first.code, 0, first.err);
    assert.doesNotMatch(first.err, /config changed/);
    writeFileSync(config, JSON.stringify(input));
    const widened = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(widened.code, 0, widened.err);
    assert.match(
      widened.err,
      /trawl: the config changed since this crawl's pages were read \(scope\.exclude lost \/private\/\); "trawl refresh -c .*changing\.json" applies it to them/,
    );
    assert.equal(trawl(cwd, 'refresh', '-c', config, '--no-progress').code, 0);
    assert.doesNotMatch(trawl(cwd, 'crawl', '-c', config, '--no-progress').err, /config changed/);
    // A narrowing change is named too (it said only "the scope, rules or refresh times changed").
    writeFileSync(config, JSON.stringify({ ...input, scope: { exclude: ['/drafts/'] } }));
    const narrowed = trawl(cwd, 'crawl', '-c', config, '--no-progress');
    assert.equal(narrowed.code, 0, narrowed.err);
    assert.match(narrowed.err, /pages were read \(scope\.exclude gained "\/drafts\/"\)/);
  });
});
