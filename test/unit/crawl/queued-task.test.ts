/**
 * A task queued under another config, judged again under the current one (decide.ts
 * queuedTaskJudge) in the context discovery judged it in; and the scope version that tells the
 * fetch stage whether to judge it at all (scope-version.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import { queuedTaskJudge } from '../../../shared/crawl/rules/decide.ts';
import { scopeVersion } from '../../../shared/crawl/rules/scope-version.ts';
import type { UrlTask } from '../../../shared/types.ts';

const SITE = 'https://www.example.com';
const config = (extra: Partial<CrawlConfigInput> = {}) =>
  parseConfig({ name: 't', startUrls: [`${SITE}/docs/`], ...extra });
type Queued = Pick<UrlTask, 'url' | 'depth' | 'kind'>;

/** [label, config extras, task, expected reason (accepted when it is not a scope or rule rejection)]. */
// biome-ignore format: one case per line
const CASES: [string, Partial<CrawlConfigInput>, Queued, { accepted: boolean; reason: string }][] = [
  ['a link now excluded', { scope: { exclude: ['/private/'] } }, { url: `${SITE}/docs/private/a`, depth: 1 }, { accepted: false, reason: 'excluded' }],
  ['a link still in scope', { scope: { exclude: ['/private/'] } }, { url: `${SITE}/docs/a`, depth: 1 }, { accepted: true, reason: 'default' }],
  ['a link a new ignore rule matches', { rules: [{ match: { path: '/docs/old/' }, actions: ['ignore'] }] }, { url: `${SITE}/docs/old/a`, depth: 2 }, { accepted: false, reason: 'rule 0: ignore' }],
  ['a link past a lowered maxDepth', { scope: { maxDepth: 1 } }, { url: `${SITE}/docs/a/b`, depth: 2 }, { accepted: false, reason: 'max-depth' }],
  ['a sitemap entry (one below its sitemap) under maxDepth 0', { scope: { maxDepth: 0 } }, { url: `${SITE}/docs/a`, depth: 1 }, { accepted: false, reason: 'max-depth' }],
  ['an accept rule still bypasses the exclude', { scope: { exclude: ['/private/'] }, rules: [{ match: { path: '/docs/private/ok' }, actions: ['accept'] }] }, { url: `${SITE}/docs/private/ok`, depth: 1 }, { accepted: true, reason: 'rule 0: accept' }],
  ['but not maxDepth', { scope: { maxDepth: 1 }, rules: [{ match: { path: '/docs/' }, actions: ['accept'] }] }, { url: `${SITE}/docs/deep`, depth: 2 }, { accepted: false, reason: 'max-depth' }],
  ['a start URL the config names is accepted though excluded', { scope: { exclude: ['/docs/'] } }, { url: `${SITE}/docs/`, depth: 0 }, { accepted: true, reason: 'start-url' }],
  ['a URL the config names as a start URL now, queued as a link', { startUrls: [`${SITE}/docs/`, `${SITE}/other/`] }, { url: `${SITE}/other/`, depth: 3 }, { accepted: true, reason: 'start-url' }],
  ['a start URL no longer named is judged as any URL at its depth', { startUrls: [`${SITE}/docs/`], scope: { underStartPath: true } }, { url: `${SITE}/old/`, depth: 0 }, { accepted: false, reason: 'outside-start-path' }],
  ['a redirect target at a start URL\'s depth is no start URL', { scope: { exclude: ['/moved/'] } }, { url: `${SITE}/moved/`, depth: 0 }, { accepted: false, reason: 'excluded' }],
  ['a sitemap is read as seeded (.xml is an ignored extension for links)', {}, { url: `${SITE}/sitemap.xml`, depth: 0, kind: 'sitemap' }, { accepted: true, reason: 'start-url' }],
  ['a sitemap an ignore rule now matches', { rules: [{ match: { path: '/sitemap' }, actions: ['ignore'] }] }, { url: `${SITE}/sitemap.xml`, depth: 0, kind: 'sitemap' }, { accepted: false, reason: 'rule 0: ignore' }],
  ['a host removed with its start URL', { startUrls: [`${SITE}/docs/`] }, { url: 'https://other.example.org/a', depth: 1 }, { accepted: false, reason: 'offsite' }],
];

describe('queuedTaskJudge: a queued task judged again in its discovery context', () => {
  for (const [label, extra, task, expected] of CASES) {
    it(label, () => {
      const d = queuedTaskJudge(config(extra))(task);
      assert.deepEqual({ accepted: d.accepted, reason: d.reason }, expected);
    });
  }
});

describe('scopeVersion: the config a task was decided under', () => {
  it('is the same for the same config, parsed twice, and short', () => {
    const v = scopeVersion(config());
    assert.equal(v, scopeVersion(config()));
    assert.match(v, /^[\w-]{12}$/);
  });

  // biome-ignore format: one case per line
  const DECIDING: [string, Partial<CrawlConfigInput>][] = [
    ['scope.exclude', { scope: { exclude: ['/private/'] } }],
    ['scope.maxDepth', { scope: { maxDepth: 2 } }],
    ['rules', { rules: [{ match: { path: '/x' }, actions: ['ignore'] }] }],
    ['startUrls', { startUrls: [`${SITE}/docs/`, `${SITE}/b/`] }],
    ['domains', { domains: { generic: ['com'], additional: null } }],
    ['limits.ruleCount', { limits: { ruleCount: 5 } }],
  ];
  for (const [key, extra] of DECIDING)
    it(`changes with ${key}`, () => assert.notEqual(scopeVersion(config(extra)), scopeVersion(config())));

  // biome-ignore format: one case per line
  const OTHER: [string, Partial<CrawlConfigInput>][] = [
    ['refresh.maxAge', { refresh: { maxAge: '3d' } }],
    ['fetch.userAgent', { fetch: { userAgent: 'other' } }],
    ['extract.removeElements', { extract: { removeElements: [] } }],
    ['sitemaps', { sitemaps: [`${SITE}/sitemap.xml`] }],
  ];
  for (const [key, extra] of OTHER)
    it(`stays with ${key} (no URL's decision depends on it)`, () =>
      assert.equal(scopeVersion(config(extra)), scopeVersion(config())));
});
