/** infra/app.ts inputs: context → stack props, and the discovery schedule they drive (no bundling here). */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import { crawlerPropsFromContext, DEFAULT_CRAWL } from '../../infra/app-context.ts';
import { FUNCTIONS, resourceNames, SCHEDULES, type StageName } from '../../shared/topology.ts';
import { buildStack, grantsOf, logicalId } from '../helpers/infra-template.ts';

const dir = mkdtempSync(join(tmpdir(), 'trawl-infra-'));
function configFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const contextOf = (values: Record<string, unknown>) => (key: string) => values[key];

describe('crawlerPropsFromContext', () => {
  it('defaults to the demo crawl and the topology discovery rate', () => {
    assert.deepEqual(crawlerPropsFromContext(contextOf({})), { crawlName: DEFAULT_CRAWL });
    assert.deepEqual(crawlerPropsFromContext(contextOf({ crawl: 'docs' })), { crawlName: 'docs' });
  });

  const cases = [
    { name: 'boost', file: 'a.json', text: '{"name":"boost","startUrls":["https://x.test/"]}', minutes: 60 },
    {
      name: 'b',
      file: 'b.json',
      text: '{"name":"b","startUrls":["https://x.test/"],"refresh":{"discoveryInterval":"90s"}}',
      minutes: 2,
    },
    {
      name: 'c',
      file: 'c.yaml',
      text: 'name: c\nstartUrls: [https://x.test/]\nrefresh: { discoveryInterval: 10s }\n',
      minutes: 1,
    },
    {
      name: 'd',
      file: 'd.yml',
      text: 'name: d\nstartUrls: [https://x.test/]\nrefresh: { discoveryInterval: 2d }\n',
      minutes: 2880,
    },
  ];
  for (const c of cases) {
    it(`reads name and discovery interval (whole minutes, ≥ 1) from ${c.file}`, () => {
      const props = crawlerPropsFromContext(contextOf({ config: configFile(c.file, c.text) }));
      assert.equal(props.crawlName, c.name);
      assert.equal(props.discoveryIntervalMinutes, c.minutes);
      assert.equal(props.fetchReservedConcurrency, 4, 'fetch.maxInvocations default');
    });
  }

  it('runs the refresh cycle at a quarter of the shortest refresh interval, 1–60 minutes', () => {
    // It was hourly whatever the config said: with maxAge 20m a page was refreshed up to 80 minutes old.
    const minutes = (refresh: object, rules: object[] = []) =>
      crawlerPropsFromContext(
        contextOf({
          config: configFile(
            'cadence.json',
            JSON.stringify({ name: 'cadence', startUrls: ['https://x.test/'], refresh, rules }),
          ),
        }),
      ).refreshIntervalMinutes;
    assert.equal(minutes({}), 60, 'maxAge 48h');
    assert.equal(minutes({ maxAge: '2h' }), 30);
    assert.equal(minutes({ maxAge: '20m' }), 5);
    assert.equal(minutes({ maxAge: '90s' }), 1);
    assert.equal(minutes({ adaptive: { min: '1h', max: '7d' } }), 15);
    const fast = { match: { path: '/news' }, actions: [{ refresh: { min: '10m', max: '1h' } }] };
    assert.equal(minutes({}, [fast]), 3, 'a rule’s min: ceil(10m / 4)');
  });

  it('takes the fetch function reserved concurrency from fetch.maxInvocations', () => {
    const file = configFile(
      'many.json',
      '{"name":"many","startUrls":["https://x.test/"],"fetch":{"maxInvocations":25}}',
    );
    assert.equal(crawlerPropsFromContext(contextOf({ config: file })).fetchReservedConcurrency, 25);
    const zero = configFile(
      'zero.json',
      '{"name":"zero","startUrls":["https://x.test/"],"fetch":{"maxInvocations":0}}',
    );
    assert.throws(() => crawlerPropsFromContext(contextOf({ config: zero })), /maxInvocations/);
  });

  it('sizes the fetch function from the config: the default, more requests, fetch.memoryMb, /tmp for large bodies', () => {
    const props = (fetch: object) =>
      crawlerPropsFromContext(
        contextOf({
          config: configFile(
            'mem.json',
            JSON.stringify({ name: 'mem', startUrls: ['https://x.test/'], fetch }),
          ),
        }),
      );
    assert.equal(props({}).fetchMemoryMb, FUNCTIONS.fetch.memoryMb);
    assert.ok((props({ concurrency: 256 }).fetchMemoryMb ?? 0) > FUNCTIONS.fetch.memoryMb);
    assert.equal(props({ memoryMb: 1536 }).fetchMemoryMb, 1536);
    // Large bodies are read to /tmp: 64 requests of 50 MB pages need more than Lambda's 512 MB.
    assert.ok((props({}).fetchEphemeralMb ?? 0) <= 512);
    assert.equal(props({ concurrency: 64, maxBytes: 50 * 1024 * 1024 }).fetchEphemeralMb, 4000);
  });

  it('rejects an invalid config and a crawl name that contradicts the config', () => {
    const bad = configFile('bad.json', '{"name":"Bad Name","startUrls":[]}');
    assert.throws(() => crawlerPropsFromContext(contextOf({ config: bad })), /name/);
    const good = configFile('good.json', '{"name":"good","startUrls":["https://x.test/"]}');
    assert.throws(() => crawlerPropsFromContext(contextOf({ config: good, crawl: 'other' })), /differs/);
  });
});

describe('CrawlerStack discovery schedule', () => {
  it('runs seed at discoveryIntervalMinutes when given, else at the topology rate', () => {
    for (const minutes of [15, undefined]) {
      const { stack, template } = buildStack('sched', { bundle: false, discoveryIntervalMinutes: minutes });
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: events.Schedule.rate(
          Duration.minutes(minutes ?? SCHEDULES.discovery.everyMinutes),
        ).expressionString,
        Targets: [{ Arn: { 'Fn::GetAtt': [logicalId(stack.functions.seed), 'Arn'] }, Id: 'Target0' }],
      });
      assert.equal(stack.stackName, resourceNames('sched').stack);
    }
  });

  it('runs refresh at refreshIntervalMinutes when given, else at the topology rate', () => {
    for (const minutes of [5, undefined]) {
      const { stack, template } = buildStack('refresh', { bundle: false, refreshIntervalMinutes: minutes });
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: events.Schedule.rate(Duration.minutes(minutes ?? SCHEDULES.refresh.everyMinutes))
          .expressionString,
        Targets: [{ Arn: { 'Fn::GetAtt': [logicalId(stack.functions.refresh), 'Arn'] }, Id: 'Target0' }],
      });
    }
  });

  it('gives the fetch function the reserved concurrency asked for, the others none', () => {
    const { stack, template } = buildStack('reserved', { bundle: false, fetchReservedConcurrency: 25 });
    const fns = template.findResources('AWS::Lambda::Function');
    assert.equal(fns[logicalId(stack.functions.fetch)]?.Properties.ReservedConcurrentExecutions, 25);
    for (const stage of ['seed', 'extract', 'index', 'refresh'] as const)
      assert.equal(
        fns[logicalId(stack.functions[stage])]?.Properties.ReservedConcurrentExecutions,
        undefined,
      );
  });

  it('gives the fetch function the memory and /tmp asked for, the others the topology’s and the default', () => {
    const { stack, template } = buildStack('memory', {
      bundle: false,
      fetchMemoryMb: 384,
      fetchEphemeralMb: 4000,
    });
    const fns = template.findResources('AWS::Lambda::Function');
    assert.equal(fns[logicalId(stack.functions.fetch)]?.Properties.MemorySize, 384);
    assert.deepEqual(fns[logicalId(stack.functions.fetch)]?.Properties.EphemeralStorage, { Size: 4000 });
    for (const stage of ['seed', 'extract', 'index', 'refresh'] as const)
      assert.equal(fns[logicalId(stack.functions[stage])]?.Properties.EphemeralStorage, undefined);
    // What every function has unasked is not written into the template.
    const plain = buildStack('memory2', { bundle: false, fetchEphemeralMb: 200 });
    const plainFns = plain.template.findResources('AWS::Lambda::Function');
    assert.equal(plainFns[logicalId(plain.stack.functions.fetch)]?.Properties.EphemeralStorage, undefined);
    for (const stage of ['seed', 'extract', 'index', 'refresh'] as const)
      assert.equal(fns[logicalId(stack.functions[stage])]?.Properties.MemorySize, FUNCTIONS[stage].memoryMb);
  });

  it('lets only the fetch role read the fetch.auth secrets, and only when the config names some', () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:intranet-token';
    const file = configFile(
      'auth.json',
      JSON.stringify({
        name: 'auth',
        startUrls: ['https://x.test/'],
        fetch: { auth: [{ urlPrefix: 'https://x.test/', bearer: { secretArn: arn } }] },
      }),
    );
    const props = crawlerPropsFromContext(contextOf({ config: file }));
    assert.deepEqual(props.authSecretArns, [arn]);
    const { stack, template, labels } = buildStack('auth', { bundle: false, authSecretArns: [arn] });
    const reads = (stage: StageName) =>
      grantsOf(template, stack, labels, stage).filter((g) => g.startsWith('secretsmanager:'));
    assert.deepEqual(reads('fetch'), [`secretsmanager:GetSecretValue ${arn}-??????`]);
    for (const stage of ['seed', 'extract', 'index', 'refresh'] as const) assert.deepEqual(reads(stage), []);
    const none = buildStack('noauth', { bundle: false });
    const all = JSON.stringify(none.template.toJSON());
    assert.ok(!all.includes('secretsmanager'), 'no secret grant without fetch.auth secrets');
  });

  it("lets the fetch and seed roles read fetch.proxy's password, and no other; fetch.auth's stays the fetch role's", () => {
    // The seed reads the start sites' robots.txt through the proxy too: without its login it met a
    // 407. fetch.auth's secrets are not its own (robots.txt is read without credentials).
    const proxyArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:proxy-login-AbCdEf';
    const siteArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:intranet-token';
    const file = configFile(
      'proxy.json',
      JSON.stringify({
        name: 'proxy',
        startUrls: ['https://x.test/'],
        fetch: {
          proxy: {
            host: 'proxy.corp',
            port: 3128,
            username: 'crawler',
            password: { secretArn: proxyArn, key: 'pw' },
          },
          auth: [{ urlPrefix: 'https://x.test/', bearer: { secretArn: siteArn } }],
        },
      }),
    );
    const props = crawlerPropsFromContext(contextOf({ config: file }));
    assert.deepEqual([props.authSecretArns, props.proxySecretArns], [[siteArn], [proxyArn]]);
    const { stack, template, labels } = buildStack('proxy', {
      bundle: false,
      authSecretArns: props.authSecretArns,
      proxySecretArns: props.proxySecretArns,
    });
    const reads = (stage: StageName) =>
      grantsOf(template, stack, labels, stage).filter((g) => g.startsWith('secretsmanager:'));
    // A full ARN (its random suffix given) is granted as is, and as a partial one: a name may end
    // in six letters after a hyphen itself (`db-secret`).
    assert.deepEqual(reads('fetch'), [
      `secretsmanager:GetSecretValue ${siteArn}-??????`,
      `secretsmanager:GetSecretValue ${proxyArn}`,
      `secretsmanager:GetSecretValue ${proxyArn}-??????`,
    ]);
    assert.deepEqual(reads('seed'), [
      `secretsmanager:GetSecretValue ${proxyArn}`,
      `secretsmanager:GetSecretValue ${proxyArn}-??????`,
    ]);
    for (const stage of ['extract', 'index', 'refresh'] as const) assert.deepEqual(reads(stage), []);
    // A proxy without a login, or whose password is not in Secrets Manager: no grant.
    const plain = configFile(
      'proxy-plain.json',
      JSON.stringify({
        name: 'proxy-plain',
        startUrls: ['https://x.test/'],
        fetch: { proxy: { host: 'p', port: 1 } },
      }),
    );
    assert.equal(crawlerPropsFromContext(contextOf({ config: plain })).proxySecretArns, undefined);
  });

  it('refuses a rate EventBridge cannot express', () => {
    assert.throws(
      () => buildStack('bad-rate', { bundle: false, discoveryIntervalMinutes: 0.5 }),
      /whole number/,
    );
  });
});
