/**
 * link-policy.ts: which config changes can admit links the crawl turned down before (its pages'
 * links are then read again) and which only narrow the crawl. Real configs through parseConfig.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import {
  documentChange,
  identityChanged,
  linkPolicy,
  linkPolicyChanges,
  storedDocumentPolicy,
  storedLinkPolicy,
  wideningReason,
} from '../../../shared/crawl/rules/link-policy.ts';

const base: CrawlConfigInput = { name: 'policy', startUrls: ['https://www.example.com/docs/'] };

/** The widening reason of the change from `before` to `after` (both over `base`). */
function change(before: Partial<CrawlConfigInput>, after: Partial<CrawlConfigInput>): string | null {
  const stored = storedLinkPolicy(linkPolicy(parseConfig({ ...base, ...before })));
  return wideningReason(stored, linkPolicy(parseConfig({ ...base, ...after })));
}

type Rule = Exclude<CrawlConfigInput['rules'], string | undefined>[number];
type Action = Rule['actions'][number];
const rule = (path: string, ...actions: Action[]): Rule => ({ match: { path }, actions });
const ignore = (path: string) => rule(path, 'ignore');
const noFollow = (path: string) => rule(path, 'noFollow');
const noIndex = (path: string) => rule(path, 'noIndex');
const accept = (path: string) => rule(path, 'accept');

describe('link policy: widening and narrowing config changes', () => {
  it('the same config, or one that differs only outside the link policy, widens nothing', () => {
    assert.equal(change({}, {}), null);
    assert.equal(change({}, { refresh: { maxAge: '3d' }, extract: { removeElements: [] } }), null);
  });

  it('scope: lists that reject lose entries, lists that admit gain them, limits rise — widening', () => {
    assert.equal(change({ scope: { exclude: ['/private/'] } }, {}), 'scope.exclude lost /private/');
    assert.equal(change({ scope: { mustNotContain: ['x'] } }, {}), 'scope.mustNotContain lost x');
    assert.equal(
      change({ scope: { include: ['/a/'] } }, { scope: { include: ['/a/', '/b/'] } }),
      'scope.include gained /b/',
    );
    assert.equal(change({ scope: { include: ['/a/'] } }, {}), 'scope.include emptied');
    assert.equal(change({ scope: { maxDepth: 2 } }, { scope: { maxDepth: 3 } }), 'scope.maxDepth raised');
    assert.equal(change({ scope: { maxDepth: 2 } }, {}), 'scope.maxDepth raised');
    assert.equal(change({ scope: { underStartPath: true } }, {}), 'scope.underStartPath turned off');
    assert.equal(change({}, { scope: { followOffsite: true } }), 'scope.followOffsite turned on');
    assert.equal(change({ scope: { followQueryStrings: false } }, {}), 'scope.followQueryStrings turned on');
    assert.equal(change({ scope: { traps: { maxPathDepth: 5 } } }, {}), 'scope.traps.maxPathDepth raised');
    assert.equal(change({}, { scope: { keepQueryParams: ['id'] } }), 'scope.keepQueryParams changed');
    assert.equal(change({ discovery: false }, {}), 'discovery turned on');
    assert.equal(
      change({}, { startUrls: [...base.startUrls, 'https://other.example.org/'] }),
      'start URL https://other.example.org/ added',
    );
    assert.equal(change({ limits: { linksPerPage: 10 } }, {}), 'limits.linksPerPage raised');
    assert.equal(change({}, { extract: { honorRelNofollow: false } }), 'extract.honorRelNofollow turned off');
    assert.equal(change({}, { domains: { generic: ['com'], additional: [] } }), 'domains changed');
  });

  it('scope: the opposite changes narrow', () => {
    assert.equal(change({}, { scope: { exclude: ['/private/'] } }), null);
    assert.equal(change({}, { scope: { include: ['/a/'] } }), null);
    assert.equal(change({ scope: { include: ['/a/', '/b/'] } }, { scope: { include: ['/a/'] } }), null);
    assert.equal(change({}, { scope: { maxDepth: 3 } }), null);
    assert.equal(change({}, { scope: { underStartPath: true } }), null);
    assert.equal(change({}, { discovery: false }), null);
    assert.equal(change({ startUrls: [...base.startUrls, 'https://other.example.org/'] }, {}), null);
    // With offsite links followed anyway, a new start URL admits no other links.
    assert.equal(
      change(
        { scope: { followOffsite: true } },
        { scope: { followOffsite: true }, startUrls: [...base.startUrls, 'https://other.example.org/'] },
      ),
      null,
    );
  });

  it('rules: added rules that ignore, or that are no wider than every old rule, narrow', () => {
    assert.equal(change({}, { rules: [ignore('/a'), noIndex('/g')] }), null);
    assert.equal(
      change({ rules: [noIndex('/g')] }, { rules: [ignore('/a'), noIndex('/g'), ignore('/z')] }),
      null,
    );
    // A kept rule that now follows less.
    assert.equal(change({ rules: [noIndex('/g')] }, { rules: [rule('/g', 'noIndex', 'noFollow')] }), null);
    // Dropping an accept rule hands its URLs to narrower ones.
    assert.equal(change({ rules: [accept('/a'), noIndex('/g')] }, { rules: [noIndex('/g')] }), null);
  });

  it('rules: dropped ignoring rules, added accept rules, and new rules in front of an ignoring one widen', () => {
    assert.match(change({ rules: [ignore('/a')] }, {}) ?? '', /rule 0 of the old rules was removed/);
    assert.match(change({}, { rules: [accept('/a')] }) ?? '', /^rules\.0 admits/);
    // First match wins: a noIndex rule ahead of an ignoring one takes some of its URLs.
    assert.match(
      change({ rules: [ignore('/a')] }, { rules: [noIndex('/a/b'), ignore('/a')] }) ?? '',
      /^rules\.0 admits/,
    );
    assert.match(change({ rules: [noFollow('/a')] }, { rules: [noIndex('/a')] }) ?? '', /^rules\.0 admits/);
    // The same rules in another order.
    assert.match(
      change({ rules: [ignore('/a'), accept('/a/b')] }, { rules: [accept('/a/b'), ignore('/a')] }) ?? '',
      /admits|removed/,
    );
    // The XML form is compared the same way.
    const xml = '<Rules><Rule><Atom field="path" kind="prefix" value="/a"/><Ignore/></Rule></Rules>';
    assert.equal(change({ rules: xml }, { rules: xml }), null);
    assert.match(change({ rules: xml }, {}) ?? '', /removed/);
  });

  it('redirects: followRedirects turned on and maxRedirects raised widen; a policy recorded without them does not', () => {
    assert.equal(change({ fetch: { followRedirects: false } }, {}), 'fetch.followRedirects turned on');
    assert.equal(
      change({ fetch: { maxRedirects: 2 } }, { fetch: { maxRedirects: 3 } }),
      'fetch.maxRedirects raised',
    );
    assert.equal(change({}, { fetch: { followRedirects: false, maxRedirects: 1 } }), null);
    const legacy = linkPolicy(parseConfig(base));
    delete legacy.reading.followRedirects;
    delete legacy.reading.maxRedirects;
    assert.equal(wideningReason(storedLinkPolicy(legacy), linkPolicy(parseConfig(base))), null);
  });

  it('extract.honorCanonical turned on widens (canonicals are fetched); the default leaves stored policies as they were', () => {
    assert.equal(change({}, { extract: { honorCanonical: true } }), 'extract.honorCanonical turned on');
    assert.equal(change({ extract: { honorCanonical: true } }, {}), null);
    assert.equal(change({ extract: { honorCanonical: true } }, { extract: { honorCanonical: true } }), null);
    // Policies stored before the option had no such key: the default adds none, so they do not change.
    assert.ok(!storedLinkPolicy(linkPolicy(parseConfig(base))).includes('honorCanonical'));
    assert.ok(!storedDocumentPolicy(parseConfig(base)).includes('honorCanonical'));
  });

  it('a policy too large to store is kept as a digest: any change to it counts as widening', () => {
    const many = Array.from({ length: 8000 }, (_, i) => `/excluded/path/number/${i}/with/some/length/`);
    const big = linkPolicy(parseConfig({ ...base, scope: { exclude: many } }));
    const stored = storedLinkPolicy(big);
    assert.ok(/^sha256:[0-9a-f]{64}$/.test(stored), `stored as ${stored.length} characters`);
    assert.equal(wideningReason(stored, big), null);
    const narrower = linkPolicy(parseConfig({ ...base, scope: { exclude: [...many, '/more/'] } }));
    assert.equal(wideningReason(stored, narrower), 'the link policy changed');
  });

  it('document policy: what makes documents changed, named; rules count only for what they add', () => {
    const doc = (before: Partial<CrawlConfigInput>, after: Partial<CrawlConfigInput>) =>
      documentChange(
        storedDocumentPolicy(parseConfig({ ...base, ...before })),
        parseConfig({ ...base, ...after }),
      );
    assert.equal(doc({}, {}), null);
    assert.equal(doc({}, { scope: { exclude: ['/x/'] }, refresh: { maxAge: '3d' } }), null);
    assert.equal(doc({}, { extract: { removeElements: ['header'] } }), 'extract.removeElements changed');
    assert.equal(
      doc({}, { extract: { metadataMapping: { author: 'author' } } }),
      'extract.metadataMapping changed',
    );
    assert.equal(doc({}, { extract: { honorRelNofollow: false } }), null, 'links only');
    // Which pages are documents: both ways.
    assert.equal(doc({}, { extract: { honorCanonical: true } }), 'extract.honorCanonical changed');
    assert.equal(doc({ extract: { honorCanonical: true } }, {}), 'extract.honorCanonical changed');
    assert.equal(
      doc({}, { limits: { titleChars: 10 } }),
      'limits (titleChars, metaValueChars, pdf…, archive…) changed',
    );
    assert.equal(doc({}, { index: { foldDuplicates: false } }), 'index.foldDuplicates changed');
    assert.equal(
      doc({}, { extract: { removeElements: ['aside'], removeClasses: ['ad'] }, fetch: { maxBytes: 1000 } }),
      'extract.removeElements changed, extract.removeClasses changed, fetch.maxBytes changed',
      'every change named',
    );
    assert.equal(doc({}, { scope: { ignoredMimeTypes: ['text/plain'] } }), 'scope.ignoredMimeTypes changed');
    // Rules that add nothing to documents do not count; one that adds metadata does.
    assert.equal(doc({}, { rules: [ignore('/a'), noIndex('/g')] }), null);
    assert.equal(
      doc({}, { rules: [rule('/d', { addMeta: { name: 'section', value: 'docs' } })] }),
      'what the rules add to documents (source, addMeta) changed',
    );
  });

  it('identity: keepQueryParams or stripSessionIds changed', () => {
    const stored = storedLinkPolicy(linkPolicy(parseConfig(base)));
    assert.equal(identityChanged(stored, linkPolicy(parseConfig(base))), false);
    assert.equal(
      identityChanged(stored, linkPolicy(parseConfig({ ...base, scope: { keepQueryParams: ['id'] } }))),
      true,
    );
    assert.equal(
      identityChanged(stored, linkPolicy(parseConfig({ ...base, scope: { stripSessionIds: false } }))),
      true,
    );
    assert.equal(
      identityChanged(stored, linkPolicy(parseConfig({ ...base, scope: { exclude: ['/x'] } }))),
      false,
    );
  });
});

describe('linkPolicyChanges: what a change that widens nothing changed, said', () => {
  const said = (before: Partial<CrawlConfigInput>, after: Partial<CrawlConfigInput>) =>
    linkPolicyChanges(
      storedLinkPolicy(linkPolicy(parseConfig({ ...base, ...before }))),
      linkPolicy(parseConfig({ ...base, ...after })),
    );
  it('names the lists gained and lost, the values changed, and rules', () => {
    assert.equal(said({}, { scope: { exclude: ['/drafts/'] } }), 'scope.exclude gained "/drafts/"');
    assert.equal(said({ scope: { maxDepth: 5 } }, { scope: { maxDepth: 2 } }), 'scope.maxDepth 5 → 2');
    assert.equal(said({}, { rules: [ignore('/old/')] }), 'rules changed');
    assert.equal(
      said({ startUrls: ['https://www.example.com/docs/', 'https://www.example.com/b/'] }, {}),
      'startUrls lost "https://www.example.com/b/"',
    );
  });
  it('nothing when the link policy is the same (the change is elsewhere: refresh times)', () => {
    assert.equal(said({}, { refresh: { maxAge: '1h' } }), null);
  });
});
