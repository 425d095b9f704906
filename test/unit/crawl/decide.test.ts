import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import {
  createUrlDecider,
  type DecideContext,
  explainKnown,
  explainUrl,
  QUEUE_ORDER,
  queueFor,
  shiftQueue,
  type UrlDecision,
} from '../../../shared/crawl/rules/decide.ts';
import { ConfigError } from '../../../shared/errors.ts';
import type { SourceName } from '../../../shared/types.ts';
import { EXPLAIN_FIELDS } from '../../helpers/contract.ts';

const START = 'https://www.example.com/docs/';
const config = (extra: Partial<CrawlConfigInput> = {}) =>
  parseConfig({ name: 't', startUrls: [START], ...extra });
const link: DecideContext = { depth: 1 };

/** [label, config extras, URL, context, expected decision fields]. */
// biome-ignore format: one case per line
const CASES: [string, Partial<CrawlConfigInput>, string, DecideContext, Partial<UrlDecision>][] = [
  ['malformed URL', {}, 'http://[::1', link, { accepted: false, reason: 'malformed-url', normalized: null, domain: null }],
  ['relative link without base', {}, '/docs/a', link, { accepted: false, reason: 'malformed-url' }],
  ['opaque URL (seed 003)', {}, 'mailto:a@example.com', { depth: 1, base: START }, { accepted: false, reason: 'opaque-url' }],
  [
    'relative link resolved against the base, defaults: index and follow',
    {},
    '../blog/Post.html#c',
    { depth: 1, base: 'https://www.example.com/docs/a.html' },
    {
      accepted: true,
      reason: 'default',
      normalized: 'https://www.example.com/blog/Post.html',
      domain: 'example.com',
      index: true,
      follow: true,
      queue: 'index_follow',
      priorityShift: 0,
      source: null,
      addMeta: [],
    },
  ],
  ['scope rejects offsite links', {}, 'https://other.org/', link, { accepted: false, reason: 'offsite', domain: 'other.org', index: false, follow: false }],
  ['scope: ignored extension', {}, 'https://www.example.com/a.png', link, { accepted: false, reason: 'ignored-extension' }],
  ['hard limit: scheme', {}, 'ftp://www.example.com/x', link, { accepted: false, reason: 'scheme-not-allowed' }],
  ['rule ignore (seed 001 Ignore)', { rules: [{ match: { path: '/private' }, actions: ['noIndex', 'noFollow', 'ignore'] }] }, 'https://www.example.com/private/x', link, { accepted: false, reason: 'rule 0: noIndex, noFollow, ignore' }],
  ['rule ignore alone', { rules: [{ match: { path: '/a' }, actions: ['index'] }, { match: { path: '/private' }, actions: ['ignore'] }] }, 'https://www.example.com/private/x', link, { accepted: false, reason: 'rule 1: ignore' }],
  ['noIndex + noFollow rejects like ignore', { rules: [{ match: { ext: '.cgi' }, actions: ['noIndex', 'noFollow'] }] }, 'https://www.example.com/a.cgi', link, { accepted: false, reason: 'rule 0: noIndex, noFollow' }],
  ['first matching rule wins', { rules: [{ match: { path: '/docs' }, actions: ['accept'] }, { match: { path: '/docs/x' }, actions: ['ignore'] }] }, 'https://www.example.com/docs/x', link, { accepted: true, reason: 'rule 0: accept' }],
  ['accept bypasses scope filters', { rules: [{ match: { domain: 'partner.org' }, actions: ['accept'] }] }, 'https://cdn.partner.org/a.png', link, { accepted: true, reason: 'rule 0: accept', queue: 'index_follow', domain: 'partner.org' }],
  ['accept does not bypass maxDepth', { scope: { maxDepth: 1 }, rules: [{ match: { path: '/' }, actions: ['accept'] }] }, 'https://www.example.com/a', { depth: 2 }, { accepted: false, reason: 'max-depth' }],
  ['accept does not bypass schemes', { rules: [{ match: { path: '/' }, actions: ['accept'] }] }, 'ftp://www.example.com/a', link, { accepted: false, reason: 'scheme-not-allowed' }],
  ['accept does not bypass maxUrlLength', { scope: { maxUrlLength: 30 }, rules: [{ match: { path: '/' }, actions: ['accept'] }] }, `https://www.example.com/${'x'.repeat(10)}`, link, { accepted: false, reason: 'url-too-long' }],
  ['a rule without accept leaves scope in charge', { rules: [{ match: { host: 'other.org' }, actions: ['noFollow'] }] }, 'https://other.org/', link, { accepted: false, reason: 'offsite' }],
  ['noFollow -> queue index', { rules: [{ match: { ext: '.pdf' }, actions: ['index', 'noFollow'] }] }, 'https://www.example.com/a.pdf', link, { accepted: true, reason: 'rule 0: index, noFollow', index: true, follow: false, queue: 'index' }],
  ['noIndex -> queue follow', { rules: [{ match: { path: '/' }, actions: ['noIndex'] }] }, 'https://www.example.com/list', link, { accepted: true, index: false, follow: true, queue: 'follow' }],
  ['priority -1 moves index_follow up to index', { rules: [{ match: { path: '/' }, actions: [{ priority: -1 }] }] }, 'https://www.example.com/a', link, { queue: 'index', priorityShift: -1 }],
  ['priority -2 moves index_follow up to redir', { rules: [{ match: { path: '/' }, actions: [{ priority: -2 }] }] }, 'https://www.example.com/a', link, { queue: 'redir', priorityShift: -2 }],
  ['priority 2 is clamped at follow', { rules: [{ match: { path: '/' }, actions: [{ priority: 2 }] }] }, 'https://www.example.com/a', link, { queue: 'follow', priorityShift: 2 }],
  ['source and addMeta', { rules: [{ match: { path: '/docs' }, actions: [{ source: 'manuals' }, { addMeta: { name: 'team', value: 'docs' } }, { addMeta: { name: 'team', value: 'web' } }] }] }, 'https://www.example.com/docs/a', link, { accepted: true, source: 'manuals', addMeta: [{ name: 'team', value: 'docs' }, { name: 'team', value: 'web' }] }],
  ['start URL: accepted into fifo user', {}, START, { depth: 0, isStart: true }, { accepted: true, reason: 'start-url', queue: 'user', index: true, follow: true }],
  ['start URL: scope filters do not apply', { scope: { mustContain: ['/blog/'] } }, START, { depth: 0, isStart: true }, { accepted: true, reason: 'start-url' }],
  ['start URL: rule flags apply, queue stays user', { rules: [{ match: { path: '/' }, actions: ['noIndex', { priority: 1 }] }] }, START, { depth: 0, isStart: true }, { accepted: true, reason: 'start-url', index: false, follow: true, queue: 'user', priorityShift: 1 }],
  ['start URL: an ignoring rule rejects it', { rules: [{ match: { path: '/docs' }, actions: ['ignore'] }] }, START, { depth: 0, isStart: true }, { accepted: false, reason: 'rule 0: ignore' }],
  ['seed 004 keepQueryParams drops calendar parameters', { scope: { keepQueryParams: ['id'] } }, 'https://www.example.com/cal?year=2018&id=3&day=8', link, { accepted: true, normalized: 'https://www.example.com/cal?id=3' }],
  ['rules see the normalized URL', { rules: [{ match: { url: 'https://www.example.com/b' }, actions: ['noFollow'] }] }, 'HTTPS://WWW.EXAMPLE.COM:443/a/../b#x', link, { accepted: true, reason: 'rule 0: noFollow', queue: 'index' }],
  ['XML rules', { rules: '<Rules><Rule><Ext val=".pdf"/><Index/><NoFollow/><Priority shift="-1"/></Rule></Rules>' }, 'https://www.example.com/a.pdf', link, { accepted: true, queue: 'redir', priorityShift: -1, follow: false }],
  ['seed 003 sample job: the start URL is exempt from its include pattern', { startUrls: ['http://wiki.eclipse.org/SMILA'], scope: { include: ['http://wiki\\.eclipse\\.org/SMILA/.*'] } } as Partial<CrawlConfigInput>, 'http://wiki.eclipse.org/SMILA', { depth: 0, isStart: true }, { accepted: true, reason: 'start-url' }],
  ['seed 003 sample job: links below it are included', { startUrls: ['http://wiki.eclipse.org/SMILA'], scope: { include: ['http://wiki\\.eclipse\\.org/SMILA/.*'] } } as Partial<CrawlConfigInput>, '/SMILA/Documentation#Web', { depth: 1, base: 'http://wiki.eclipse.org/SMILA' }, { accepted: true, normalized: 'http://wiki.eclipse.org/SMILA/Documentation', domain: 'eclipse.org' }],
  ['seed 003 opaque javascript:void(0) is filtered out', {}, 'javascript:void(0)', { depth: 1, base: START }, { accepted: false, reason: 'opaque-url' }],
  ['seed 004 item?id=12345: id is honoured', { scope: { keepQueryParams: ['id'] } }, 'https://www.example.com/item?id=12345&nr=3', link, { accepted: true, normalized: 'https://www.example.com/item?id=12345' }],
  ['literal atom (seed 001 litteral="true")', { rules: [{ match: { atom: { field: 'url', kind: 'prefix', norm: 'none', value: 'https://www.example.com/docs/', literal: true } }, actions: ['index', 'noFollow'] }] }, 'https://www.example.com/docs/a', link, { accepted: true, reason: 'rule 0: index, noFollow', queue: 'index' }],
  ['domain from the seed 000 lists', { domains: { generic: ['com'], additional: ['co.uk'] }, scope: { followOffsite: true } }, 'http://www.xyz.co.uk/', link, { accepted: true, domain: 'xyz.co.uk' }],
];

describe('createUrlDecider().decide', () => {
  for (const [label, extra, url, ctx, expected] of CASES) {
    it(label, () => {
      const decision = createUrlDecider(config(extra)).decide(url, ctx);
      for (const [key, value] of Object.entries(expected)) {
        assert.deepEqual(decision[key as keyof UrlDecision], value, `${key} of ${JSON.stringify(decision)}`);
      }
    });
  }
  it('throws ConfigError naming the path for a bad rule (at load, before any decider)', () => {
    const bad = () =>
      createUrlDecider(
        config({
          rules: [
            { match: { path: '/' }, actions: ['index'] },
            { match: { atom: { field: 'url', kind: 'inside', value: '(' } }, actions: ['index'] },
          ],
        }),
      );
    assert.throws(
      bad,
      (e: unknown) =>
        e instanceof ConfigError &&
        /: rules\.1\.match\.atom\.value: invalid regular expression/.test(e.message),
    );
  });
  it('returns a fresh addMeta array per decision', () => {
    const decider = createUrlDecider(
      config({ rules: [{ match: { path: '/' }, actions: [{ addMeta: { name: 'a', value: 'b' } }] }] }),
    );
    const first = decider.decide(START, link);
    first.addMeta.push({ name: 'x', value: 'y' });
    assert.deepEqual(decider.decide(START, link).addMeta, [{ name: 'a', value: 'b' }]);
  });
});

describe('queueFor and shiftQueue (seed 001 How Priorities Work)', () => {
  const queues: [boolean, boolean, SourceName][] = [
    [true, true, 'index_follow'],
    [true, false, 'index'],
    [false, true, 'follow'],
  ];
  for (const [index, follow, queue] of queues) {
    it(`index=${index} follow=${follow} -> ${queue}`, () => assert.equal(queueFor(index, follow), queue));
  }
  const shifts: [SourceName, number, SourceName][] = [
    ['index_follow', 0, 'index_follow'],
    ['index_follow', -1, 'index'],
    ['index_follow', -2, 'redir'],
    ['index_follow', 1, 'follow'],
    ['index_follow', 2, 'follow'],
    ['index', -2, 'user'],
    ['follow', -2, 'index'],
    ['follow', 1, 'follow'],
    ['user', -1, 'user'],
    ['refresh', -2, 'refresh'],
  ];
  for (const [queue, shift, expected] of shifts) {
    it(`${queue} shifted ${shift} -> ${expected}`, () => assert.equal(shiftQueue(queue, shift), expected));
  }
  it('the order is the seed fifo order', () =>
    assert.deepEqual(QUEUE_ORDER, ['user', 'redir', 'index', 'index_follow', 'follow']));
});

describe('explainUrl (trawl explain)', () => {
  it('returns exactly the documented fields', () => {
    assert.deepEqual(Object.keys(explainUrl(config(), 'https://www.example.com/a')), EXPLAIN_FIELDS);
  });
  const cases: [string, Partial<CrawlConfigInput>, string, Record<string, unknown>][] = [
    [
      'a link at depth 1',
      {},
      'https://www.example.com/a',
      { accepted: true, reason: 'default', queue: 'index_follow' },
    ],
    [
      'a start URL (depth 0), written differently',
      {},
      'HTTPS://www.example.com:443/docs/#top',
      { accepted: true, reason: 'start-url', queue: 'user' },
    ],
    [
      'maxDepth 0 rejects links',
      { scope: { maxDepth: 0 } },
      'https://www.example.com/a',
      { accepted: false, reason: 'max-depth' },
    ],
    [
      'maxDepth 0 keeps start URLs',
      { scope: { maxDepth: 0 } },
      START,
      { accepted: true, reason: 'start-url' },
    ],
    [
      'a malformed URL',
      {},
      'not a url',
      { accepted: false, reason: 'malformed-url', normalized: null, domain: null },
    ],
  ];
  for (const [label, extra, url, expected] of cases) {
    it(label, () => {
      const out = explainUrl(config(extra), url);
      for (const [key, value] of Object.entries(expected)) assert.deepEqual(out[key], value, key);
    });
  }
  it('--depth judges the URL at that depth: maxDepth rejects past it', () => {
    const c = config({ scope: { maxDepth: 2 } });
    assert.deepEqual(pick(explainUrl(c, 'https://www.example.com/deep/3.html')), [true, 'default', 1]);
    assert.deepEqual(pick(explainUrl(c, 'https://www.example.com/deep/3.html', { depth: 2 })), [
      true,
      'default',
      2,
    ]);
    assert.deepEqual(pick(explainUrl(c, 'https://www.example.com/deep/3.html', { depth: 3 })), [
      false,
      'max-depth',
      3,
    ]);
  });
  it('a URL longer than the URLs table can key (2048 bytes) is rejected, a start URL too; maxUrlLength cannot go past it', () => {
    const long = `https://www.example.com/${'x'.repeat(2100)}`;
    const d = createUrlDecider(config());
    assert.equal(d.decide(long, { depth: 0, isStart: true }).reason, 'url-too-long');
    assert.equal(d.decide(long, { depth: 1, sitemap: true, isStart: true }).reason, 'url-too-long');
    assert.throws(() => config({ scope: { maxUrlLength: 4096 } }), /maxUrlLength/);
  });
  it('--state: a known URL is judged at the depth the crawl found it, unless --depth says', () => {
    const c = config({ scope: { maxDepth: 2 } });
    const url = 'https://www.example.com/deep/3.html';
    const state = { url, state: 'indexed', depth: 3 };
    assert.deepEqual(pick(explainKnown(c, url, undefined, state)), [false, 'max-depth', 3]);
    assert.equal(explainKnown(c, url, undefined, state).queue, null, 'a rejected URL is queued nowhere');
    assert.deepEqual(pick(explainKnown(c, url, 1, state)), [true, 'default', 1]);
    assert.deepEqual(explainKnown(c, url, undefined, state).state, state);
    assert.deepEqual(pick(explainKnown(c, url, undefined, null)), [true, 'default', 1]);
    // No state: the answer says it is for an assumed depth, and what maxDepth may have done.
    assert.match(
      String(explainKnown(c, url, undefined, null).stateNote),
      /^the crawl has no state for it: never queued .*deeper than scope\.maxDepth \(2\) was rejected as max-depth; judged here at depth 1 \(--depth sets another\)$/,
    );
    assert.equal(explainKnown(c, url, undefined, state).stateNote, undefined);
    assert.doesNotMatch(String(explainKnown(config(), url, 4, null).stateNote), /maxDepth|--depth/);
  });
  it('a URL the crawl read as a sitemap (an index child: --state says so) is judged as one, not by its .xml', () => {
    const child = 'https://www.example.com/sitemaps/news.xml';
    assert.deepEqual(pick(explainUrl(config(), child)), [false, 'ignored-extension', 1]);
    const asSitemap = explainUrl(config(), child, { sitemap: true });
    assert.deepEqual(
      [asSitemap.accepted, asSitemap.reason, asSitemap.index, asSitemap.follow],
      [true, 'sitemap', false, true],
    );
    // Out of scope all the same (another host): the scope's reason, not "sitemap".
    const offsite = explainUrl(config(), 'https://other.example.org/s.xml', { sitemap: true });
    assert.deepEqual([offsite.accepted, offsite.reason], [false, 'offsite']);
  });
  it('a sitemap the config names is read whatever its extension, and not indexed, as the seed stage queues it', () => {
    const c = config({ sitemaps: ['https://www.example.com/feeds/atom.xml'] });
    const out = explainUrl(c, 'https://www.example.com/feeds/atom.xml');
    assert.deepEqual(
      [...pick(out), out.index, out.follow, out.queue],
      [true, 'sitemap', 0, false, true, 'user'],
    );
    // Any other .xml URL is still an ignored extension.
    assert.deepEqual(pick(explainUrl(c, 'https://www.example.com/feeds/other.xml')), [
      false,
      'ignored-extension',
      1,
    ]);
  });
  it("discovery: false follows no links, not even a start page's", () => {
    const c = config({ discovery: false });
    assert.equal(explainUrl(c, 'https://www.example.com/a').follow, false);
    assert.equal(explainUrl(c, START).follow, false);
    assert.equal(explainUrl(config(), START).follow, true);
  });
});

const pick = (o: Record<string, unknown>) => [o.accepted, o.reason, o.depth];
