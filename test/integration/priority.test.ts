import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { queueFor } from '../../shared/crawl/rules/decide.ts';
import { depsFromEnv, type StageDeps } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import type { FrontierMessage, UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const N = 100;

function tasks(base: string, dir: string, index: boolean, follow: boolean): UrlTask[] {
  const queue = queueFor(index, follow);
  return Array.from({ length: N }, (_, i) => ({
    url: `${base}/${dir}/${i}.html`,
    depth: 1,
    queue,
    index,
    follow,
    priority: 0,
  }));
}

/** Share of index-only URLs among the first N fetched. */
function indexShareOfFirst(order: { url: string }[]): number {
  return order.slice(0, N).filter((o) => o.url.includes('/idx/')).length / N;
}

describe('weighted polling on the fetch order (seed 001 How Priorities Work)', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-prio-'));
    for (const sub of ['idx', 'fol']) {
      mkdirSync(join(dir, sub));
      for (let i = 0; i < N; i++)
        writeFileSync(join(dir, sub, `${i}.html`), `<html><title>${sub} ${i}</title><p>${sub}</p></html>`);
    }
    writeFileSync(
      join(dir, 'index.html'),
      `<html><title>home</title>${[0, 1, 2].map((i) => `<a href="/idx/${i}.html">i</a><a href="/fol/${i}.html">f</a>`).join('')}</html>`,
    );
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  async function freshDeps(): Promise<StageDeps> {
    const config = parseConfig({
      name: uniqueCrawlName('prio'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    await openSession(config);
    return depsFromEnv();
  }

  it('100 index-only and 100 follow-only URLs waiting, one task per message: index-only first in the large majority', async () => {
    const deps = await freshDeps();
    // The follow-only URLs are put in first: FIFO order alone would fetch them first.
    for (const list of [tasks(site.url, 'fol', false, true), tasks(site.url, 'idx', true, false)]) {
      const messages = list.map((t) => ({ body: { tasks: [t] } satisfies FrontierMessage }));
      await deps.queues.send(deps.queueUrls.frontier[list[0]!.queue], messages);
    }
    const summary = await runFetchStage(deps, { deadline: Date.now() + 40_000 });
    assert.equal(summary.fetched, 2 * N);
    assert.equal(summary.drained, true);
    const share = indexShareOfFirst(summary.order);
    // Each round picks index with p = 1000/1010 while it has work: ~99 of the first 100 in expectation.
    assert.ok(share >= 0.8, `index-only share of the first ${N} fetched: ${share}`);
    assert.deepEqual([...new Set(summary.order.map((o) => o.source))].sort(), ['follow', 'index']);
  });

  it('bulks of 50 as sendTasks sends them, seeded random: the index source is drained first', async () => {
    const deps = await freshDeps();
    await sendTasks(deps, tasks(site.url, 'fol', false, true));
    await sendTasks(deps, tasks(site.url, 'idx', true, false));
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const summary = await runFetchStage({ ...deps, random }, { deadline: Date.now() + 40_000 });
    assert.equal(summary.fetched, 2 * N);
    assert.ok(indexShareOfFirst(summary.order) >= 0.9, `index share ${indexShareOfFirst(summary.order)}`);
  });

  it('rules put URLs into the source their actions imply (index only -> index, follow only -> follow)', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('prio-rules'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      rules: [
        { match: { path: '/idx/' }, actions: ['noFollow'] },
        { match: { path: '/fol/' }, actions: ['noIndex'] },
      ],
    });
    const session = await openSession(config);
    await crawl(session);
    const states = new Map<string, Record<string, unknown>>();
    for await (const s of urlStates(session)) states.set(new URL(s.url as string).pathname, s);
    assert.equal(states.size, 7);
    assert.equal(states.get('/')?.queue, 'user');
    for (const i of [0, 1, 2]) {
      assert.equal(states.get(`/idx/${i}.html`)?.queue, 'index');
      assert.equal(states.get(`/idx/${i}.html`)?.state, 'indexed');
      assert.equal(states.get(`/fol/${i}.html`)?.queue, 'follow');
      assert.equal(states.get(`/fol/${i}.html`)?.state, 'followed');
    }
  });

  it('a source found empty is polled again between rounds: a redirect target queued meanwhile is taken by the running fetcher', async () => {
    const deps = await freshDeps();
    // Forty slow follow-only pages, one a message: four rounds of ten, ~0.6 s each.
    for (let i = 0; i < 40; i++)
      site.route(`/slow/${i}`, {
        handler: (_req, res) =>
          setTimeout(
            () =>
              res
                .writeHead(200, { 'content-type': 'text/html' })
                .end(`<title>slow ${i}</title><p>slow ${i}</p>`),
            120,
          ),
      });
    const slow = Array.from({ length: 40 }, (_, i) => ({
      url: `${site.url}/slow/${i}`,
      depth: 1,
      queue: 'follow' as const,
      index: false,
      follow: true,
      priority: 0,
    }));
    await deps.queues.send(
      deps.queueUrls.frontier.follow,
      slow.map((t) => ({ body: { tasks: [t] } satisfies FrontierMessage })),
    );
    const target = {
      url: `${site.url}/idx/7.html`,
      depth: 1,
      queue: 'redir' as const,
      index: true,
      follow: false,
      priority: 0,
    };
    // The redirect target arrives once the fetcher has found every other source empty and works on the follow source.
    const running = runFetchStage(deps, { deadline: Date.now() + 60_000, recheckEmptyMs: 300 });
    while (!site.requests.some((r) => r.path.startsWith('/slow/')))
      await new Promise((r) => setTimeout(r, 20));
    await sendTasks(deps, [target]);
    const summary = await running;
    const order = summary.order.map((o) => o.url);
    assert.ok(
      order.includes(target.url),
      `the running fetcher took the redirect target: ${order.length} fetched`,
    );
    assert.ok(
      order.indexOf(target.url) < order.length - 10,
      `taken at a round's end, before the follow pages were done (position ${order.indexOf(target.url)} of ${order.length})`,
    );
  });
});
