/**
 * Issue #3 end to end, crawl rules (seed 001): the same rules in the JSON and the XML form, each
 * crawled once over test/helpers/scope-site.ts's `/rules/` section through cli/session.ts; the
 * same crawl through the real CLI (`trawl crawl` summary, `trawl urls` queues); and the calendar
 * trap without keepQueryParams, bounded only by maxDepth.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import type { Rule } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import {
  type CrawlResult,
  crawlSite,
  pathsOf,
  rejections,
  type ScopeSites,
  startScopeSites,
} from '../helpers/scope-site.ts';

const exactPath = (path: string) => ({
  atom: { field: 'path' as const, kind: 'exact' as const, value: path.replace(/\./g, '\\.') },
});

/** One rule per seed 001 action, first match wins; scope.exclude rejects /rules/special and /rules/excluded. */
const JSON_RULES: Rule[] = [
  { match: { path: '/rules/private' }, actions: ['noIndex', 'noFollow', 'ignore'] },
  { match: exactPath('/rules/list.html'), actions: ['noIndex', 'follow'] },
  { match: exactPath('/rules/leaf.html'), actions: ['index', 'noFollow'] },
  { match: { path: '/rules/special' }, actions: ['accept'] },
  {
    match: { path: '/rules/manuals' },
    actions: [
      { source: 'manuals' },
      { addMeta: { name: 'team', value: 'docs' } },
      { addMeta: { name: 'team', value: 'web' } },
    ],
  },
  { match: { path: '/rules/urgent' }, actions: [{ priority: -2 }] },
  { match: { path: '/rules/later' }, actions: [{ priority: 1 }] },
];

/** The same rules in the seed's XML form. */
const XML_RULES = `<Rules group="scope-test" key="auto">
  <Rule><Path val="/rules/private"/><NoIndex/><NoFollow/><Ignore/></Rule>
  <Rule><Atom field="path" kind="exact" value="/rules/list\\.html"/><NoIndex/><Follow/></Rule>
  <Rule><Atom field="path" kind="exact" value="/rules/leaf\\.html"/><Index/><NoFollow/></Rule>
  <Rule><Path val="/rules/special"/><Accept/></Rule>
  <Rule><Path val="/rules/manuals"/><Source name="manuals"/><AddMeta name="team" value="docs"/><AddMeta name="team" value="web"/></Rule>
  <Rule><Path val="/rules/urgent"/><Priority shift="-2"/></Rule>
  <Rule><Path val="/rules/later"/><Priority shift="1"/></Rule>
</Rules>`;

const SCOPE = { exclude: ['/rules/(special|excluded)'] };

/** Runs bin/trawl.mjs in `cwd` against this file's emulator (AWS_ENDPOINT_URL is inherited). */
function trawl(cwd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(PROJECT_ROOT, 'bin', 'trawl.mjs');
  const env = { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN' };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd, env, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe('crawl rules end to end (seed 001)', () => {
  let emu: TestEmulator;
  let sites: ScopeSites;

  before(async () => {
    emu = await startTestEmulator();
    sites = await startScopeSites();
  });
  after(async () => {
    await sites?.close();
    await emu?.stop();
  });

  for (const [form, rules] of [
    ['JSON', JSON_RULES],
    ['XML', XML_RULES],
  ] as const) {
    describe(`${form} rules`, () => {
      let r: CrawlResult;
      const url = (path: string) => r.urls.find((u) => u.url === `${sites.a.url}${path}`);
      const doc = (path: string) => r.docs.find((d) => d.url === `${sites.a.url}${path}`);
      before(async () => {
        r = await crawlSite(sites, '/rules/index.html', { scope: SCOPE, rules });
      });
      it('fetches what the rules and scope allow, each once', () => {
        assert.deepEqual(r.seenA.sort(), [
          '/rules/index.html',
          '/rules/later.html',
          '/rules/leaf.html',
          '/rules/list-child.html',
          '/rules/list.html',
          '/rules/manuals/m.html',
          '/rules/special.html',
          '/rules/urgent.html',
        ]);
        assert.ok(r.urls.every((u) => u.state !== 'pending'));
      });
      it('ignore: the link never enters the frontier and is counted by reason', () => {
        assert.equal(url('/rules/private/x.html'), undefined);
        assert.deepEqual(rejections(r.stats), { 'rule: noIndex, noFollow, ignore': 1, excluded: 1 });
      });
      it('noIndex: followed, not indexed (state followed, queue follow); its links are followed', () => {
        assert.equal(url('/rules/list.html')?.state, 'followed');
        assert.equal(url('/rules/list.html')?.queue, 'follow');
        assert.equal(doc('/rules/list.html'), undefined);
        assert.equal(doc('/rules/list-child.html')?.depth, 2);
      });
      it('noFollow: indexed (queue index), its links are not followed', () => {
        assert.equal(url('/rules/leaf.html')?.state, 'indexed');
        assert.equal(url('/rules/leaf.html')?.queue, 'index');
        assert.ok(doc('/rules/leaf.html'));
        assert.ok(!r.seenA.includes('/rules/leaf-child.html'));
      });
      it('accept overrides scope.exclude; the excluded sibling is not fetched', () => {
        assert.equal(url('/rules/special.html')?.state, 'indexed');
        assert.equal(url('/rules/excluded.html'), undefined);
      });
      it('source and addMeta land on the document; repeated names accumulate (seed 004)', () => {
        const manual = doc('/rules/manuals/m.html');
        assert.equal(manual?.source, 'manuals');
        assert.deepEqual((manual?.meta as Record<string, unknown> | undefined)?.team, ['docs', 'web']);
        assert.equal(doc('/rules/leaf.html')?.source, null);
      });
      it('priority shifts move the queue recorded for the URL (seed 001 How Priorities Work)', () => {
        assert.equal(url('/rules/urgent.html')?.queue, 'redir');
        assert.equal(url('/rules/later.html')?.queue, 'follow');
        assert.equal(url('/rules/manuals/m.html')?.queue, 'index_follow');
        assert.equal(url('/rules/index.html')?.queue, 'user');
      });
    });
  }

  it('trawl crawl prints rejected links by reason; trawl urls shows the queues the rules chose', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'trawl-rules-cli-'));
    const config = {
      name: uniqueCrawlName('cli-rules'),
      startUrls: [`${sites.a.url}/rules/index.html`],
      scope: SCOPE,
      rules: JSON_RULES,
      fetch: { allowPrivateNetworks: true },
    };
    writeFileSync(join(cwd, 'trawl.json'), JSON.stringify(config));
    const crawled = await trawl(cwd, ['crawl', '-c', 'trawl.json', '--no-progress']);
    assert.equal(crawled.code, 0, crawled.stderr);
    const line =
      crawled.stdout
        .split('\n')
        .find((l) => l.includes('links discovered:'))
        ?.trim() ?? '';
    assert.match(line, /^links discovered: 7; rejected: /);
    for (const part of ['rule: noIndex, noFollow, ignore 1', 'excluded 1'])
      assert.ok(line.includes(part), line);
    const listed = await trawl(cwd, ['urls', '-c', 'trawl.json']);
    assert.equal(listed.code, 0, listed.stderr);
    const urls = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    const byPath = Object.fromEntries(
      urls.map((u) => [u.url!.replace(sites.a.url, ''), `${u.state} ${u.queue}`]),
    );
    assert.deepEqual(byPath, {
      '/rules/index.html': 'indexed user',
      '/rules/later.html': 'indexed follow',
      '/rules/leaf.html': 'indexed index',
      '/rules/list-child.html': 'indexed index_follow',
      '/rules/list.html': 'followed follow',
      '/rules/manuals/m.html': 'indexed index_follow',
      '/rules/special.html': 'indexed index_follow',
      '/rules/urgent.html': 'indexed redir',
    });
  });

  it('without keepQueryParams the calendar trap runs until maxDepth stops it (seed 004)', async () => {
    const r: CrawlResult = await crawlSite(sites, '/query/index.html', { scope: { maxDepth: 4 } });
    const cal = r.seenA.filter((p) => p.startsWith('/cal'));
    // depth 1 (linked from the hub) to depth 4: a new URL each month
    assert.deepEqual(cal, [
      '/cal?year=2018&month=11&day=8&id=7',
      '/cal?year=2018&month=12&day=8&id=7',
      '/cal?year=2019&month=1&day=8&id=7',
      '/cal?year=2019&month=2&day=8&id=7',
    ]);
    assert.deepEqual(rejections(r.stats), { 'max-depth': 1 });
    assert.deepEqual(pathsOf(sites, r.docs).filter((p) => p.startsWith('/cal')).length, 4);
  });
});
