import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  normalizeUrl,
  normalizeUrlDetailed,
  stripFragment,
} from '../../../shared/crawl/url/normalize-url.ts';

/**
 * crawler-commons BasicURLNormalizer cases (its url_normalization cases.jsonl,
 * config "default") whose expectation fits seed 003's normalization: [input, expected].
 */
// biome-ignore format: one corpus case per line
const CORPUS: [string, string | null][] = [
  ["http://foo.com/%66oo.html", "http://foo.com/foo.html"],
  ["http://foo.com/%66oo.htm%6c", "http://foo.com/foo.html"],
  ["http://foo.com/%66oo.ht%6dl", "http://foo.com/foo.html"],
  ["http://foo.com/%66oo.ht%6d%6c", "http://foo.com/foo.html"],
  ["http://foo.com/%66oo.htm%C0", "http://foo.com/foo.htm%C0"],
  ["http://foo.com/%66oo.htm%1A", "http://foo.com/foo.htm%1A"],
  ["http://foo.com/%66oo.htm%c0", "http://foo.com/foo.htm%C0"],
  ["https://www.example.com/search/%2a/", "https://www.example.com/search/%2A/"],
  ["https://www.example.com/topic/9%2f11/", "https://www.example.com/topic/9%2F11/"],
  ["http://foo.com/you%20too.html", "http://foo.com/you%20too.html"],
  ["http://foo.com/you too.html", "http://foo.com/you%20too.html"],
  ["http://foo.com/file.html%23cz", "http://foo.com/file.html%23cz"],
  ["http://foo.com/fast/dir%2fcz", "http://foo.com/fast/dir%2Fcz"],
  ["http://foo.com/\u001a!", "http://foo.com/%1A!"],
  ["http://foo.com/\u0001!", "http://foo.com/%01!"],
  ["http://mydomain.com/en Español.aspx", "http://mydomain.com/en%20Espa%C3%B1ol.aspx"],
  ["http://x.com/s?m=10&q=a%26b", "http://x.com/s?m=10&q=a%26b"],
  ["http://x.com/show?http%3A%2F%2Fx.com%2Fb", "http://x.com/show?http%3A%2F%2Fx.com%2Fb"],
  ["http://google.com/search?q=c%2B%2B", "http://google.com/search?q=c%2B%2B"],
  ["http://x.com/s?q=a+b", "http://x.com/s?q=a+b"],
  ["http://bücher.de/", "http://xn--bcher-kva.de/"],
  ["http://êxample.com", "http://xn--xample-hva.com/"],
  ["https://нэб.рф/", "https://xn--90ax2c.xn--p1ai/"],
  ["https://www.0251-sachverst%c3%a4ndiger.de/", "https://www.xn--0251-sachverstndiger-ozb.de/"],
  ["http://x.com/./a/../%66.html", "http://x.com/f.html"],
  ["http://x.com/?x[y]=1", "http://x.com/?x%5By%5D=1"],
  ["http://x.com/foo", "http://x.com/foo%C2%80"],
  ["http://x.com/foo%c2%80", "http://x.com/foo%C2%80"],
  ["http://foo.com/", "http://foo.com/"],
  ["http://foo.com/", "http://foo.com/"],
  ["http://Foo.Com/index.html", "http://foo.com/index.html"],
  ["http://Foo.Com/index.html", "http://foo.com/index.html"],
  ["https://example%2Ecom/", "https://example.com/"],
  ["http://foo.com:80/index.html", "http://foo.com/index.html"],
  ["http://foo.com:81/", "http://foo.com:81/"],
  ["http://example.com:/", "http://example.com/"],
  ["https://example.com:/foobar.html", "https://example.com/foobar.html"],
  ["http://foo.com", "http://foo.com/"],
  ["http://foo.com/foo.html#ref", "http://foo.com/foo.html"],
  ["http://foo.com/%66oo.html", "http://foo.com/foo.html"],
  ["http://foo.com/aa/./foo.html", "http://foo.com/aa/foo.html"],
  ["http://foo.com/aa/../", "http://foo.com/"],
  ["http://foo.com/aa/bb/../", "http://foo.com/aa/"],
  ["http://foo.com/aa/..", "http://foo.com/"],
  ["http://foo.com/aa/bb/cc/../../foo.html", "http://foo.com/aa/foo.html"],
  ["http://foo.com/aa/bb/../cc/dd/../ee/foo.html", "http://foo.com/aa/cc/ee/foo.html"],
  ["http://foo.com/../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/../../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/../aa/../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/aa/../../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/aa/../bb/../foo.html/../../", "http://foo.com/"],
  ["http://foo.com/../aa/foo.html", "http://foo.com/aa/foo.html"],
  ["http://foo.com/../aa/../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/a..a/foo.html", "http://foo.com/a..a/foo.html"],
  ["http://foo.com/a..a/../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/foo.foo/../foo.html", "http://foo.com/foo.html"],
  ["http://foo.com/aa?referer=http://bar.com", "http://foo.com/aa?referer=http://bar.com"],
  ["http://foo.com/..", "http://foo.com/"],
  ["file:///foo/bar.txt", "file:///foo/bar.txt"],
  ["http://example.com?", "http://example.com/"],
  ["http://example.com?a=1", "http://example.com/?a=1"],
  ["http://example.com/?", "http://example.com/"],
  ["https://www.last.fm/music/Prefuse+73/_/90%+of+My+Mind+Is+With+You", "https://www.last.fm/music/Prefuse+73/_/90%25+of+My+Mind+Is+With+You"],
  ["http://foo.com/{{stuff}}", "http://foo.com/%7B%7Bstuff%7D%7D"],
  ["http://www.example.com/a/c/../b/search?q=foobar\"", "http://www.example.com/a/b/search?q=foobar%22"],
  ["http://www.example.com/a/c/../b/search?q=foobar%", "http://www.example.com/a/b/search?q=foobar%25"],
  ["http://www.example.com/a/c/../b/search?q=foobar<", "http://www.example.com/a/b/search?q=foobar%3C"],
  ["http://www.example.com/a/c/../b/search?q=foobar>", "http://www.example.com/a/b/search?q=foobar%3E"],
  ["http://www.example.com/a/c/../b/search?q=foobar^", "http://www.example.com/a/b/search?q=foobar%5E"],
  ["http://www.example.com/a/c/../b/search?q=foobar`", "http://www.example.com/a/b/search?q=foobar%60"],
  ["http://www.example.com/a/c/../b/search?q=foobar|", "http://www.example.com/a/b/search?q=foobar%7C"],
  ["http://www.example.com/p%zz%77%v", "http://www.example.com/p%25zzw%25v"],
  ["http://www.example.com/search?q=foobar%", "http://www.example.com/search?q=foobar%25"],
  ["http://www.example.com/search?q=foobar%2", "http://www.example.com/search?q=foobar%252"],
  ["http://www.example.com/search?q=foobar%25", "http://www.example.com/search?q=foobar%25"],
  ["http://www.example.com/search?q=foobar%252", "http://www.example.com/search?q=foobar%252"],
  ["HTTP://foo.com/", "http://foo.com/"],
  ["ftp://foo.com/index.html", "ftp://foo.com/index.html"],
  ["https://www.example.org./", "https://www.example.org/"],
  ["http://a.test..//", "http://a.test//"],
  ["http://foo.com/index?a=1&b=2", "http://foo.com/index?a=1&b=2"],
  ["https://foo.com/search?q=tl;dr", "https://foo.com/search?q=tl;dr"],
  ["http://foo.com/index?a=1&b", "http://foo.com/index?a=1&b"],
  ["http://foo.com/index?a=1&b#c", "http://foo.com/index?a=1&b"],
  ["http://example.com/?", "http://example.com/"],
  ["https://foo.com/?one/valid_query/without_%2F_params", "https://foo.com/?one/valid_query/without_%2F_params"],
  ["http://foo.com/asdf/page.php?article%2F1234", "http://foo.com/asdf/page.php?article%2F1234"],
  ["https://www.example.com/path/file-with-a-*.html", "https://www.example.com/path/file-with-a-*.html"],
  ["https://www.example.com/path/foo-$", "https://www.example.com/path/foo-$"],
  ["https://example%2Xcom/", null],
  ["https://abc%FEdef.org/", null],
  ["https://example.com/path/query.php?foo=bar&hello=world", "https://example.com/path/query.php?foo=bar&hello=world"],
  ["https://example.com/path/show.php?article300", "https://example.com/path/show.php?article300"],
  ["https://example.com/path/show.php?/category/3", "https://example.com/path/show.php?/category/3"],
  ["https://example.com/?categoryA/categoryB/this_%2F_that", "https://example.com/?categoryA/categoryB/this_%2F_that"],
  ["https://example.org/p%2d1/p%2d2/?q=f", "https://example.org/p-1/p-2/?q=f"],
  ["http://[::1]/", "http://[::1]/"],
  ["http://[::1]", "http://[::1]/"],
  ["http://[2001:db8::1]/path?q=1", "http://[2001:db8::1]/path?q=1"],
  ["http://[2001:DB8::1]/", "http://[2001:db8::1]/"],
  ["http://[::1]:80/", "http://[::1]/"],
  ["https://[::1]:443/", "https://[::1]/"],
  ["http://[::1]:8080/x", "http://[::1]:8080/x"],
  ["http://[::1]/a/../b", "http://[::1]/b"],
  ["http://user:pass@[::1]/x", "http://[::1]/x"],
  ["http://example.com/[x]", "http://example.com/%5Bx%5D"],
  ["http://[::1", null],
  ["http://[]/", null],
  ["http://[::1]./", null],
  ["http://[::%31]/", null],
];

/**
 * Corpus cases where Trawl deliberately differs from crawler-commons: [input, crawler-commons
 * expects, Trawl gives, why]. Seed 003 asks for absolute URLs, resolved dot segments, lower-cased
 * scheme and host, no fragment and no default port; it does not ask for sorted or cleaned queries.
 */
// biome-ignore format: one corpus case per line
const DEVIATIONS: [string, string | null, string | null, string][] = [
  ["http://foo.com//aa/bb/foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com//aa/bb/foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http://foo.com/aa//bb/foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com/aa//bb/foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http://foo.com/aa/bb//foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com/aa/bb//foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http://foo.com//aa//bb//foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com//aa//bb//foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http://foo.com////aa////bb//foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com////aa////bb//foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http://foo.com////aa////bb////foo.html", "http://foo.com/aa/bb/foo.html", "http://foo.com////aa////bb////foo.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["ftp:/", "ftp:/", null, 'WHATWG URL parser: a special scheme without host is malformed'],
  ["http:////", "http:/", null, 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["http:///////", "http:/", null, 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["foo.com/index.html", "http://foo.com/index.html", null, 'no scheme and no base: malformed (no guessing of http://)'],
  ["file:/path/index.html", "file:/path/index.html", "file:///path/index.html", 'WHATWG serializes file URLs as file:///…; empty segments kept'],
  ["file:/var/www/html/////./bar/index.html", "file:/var/www/html/bar/index.html", "file:///var/www/html/////bar/index.html", 'empty path segments kept (RFC 3986 6.2.2; seed 003 normalizes only dot segments)'],
  ["file:/var/www/html/foo/../bar/index.html", "file:/var/www/html/bar/index.html", "file:///var/www/html/bar/index.html", 'WHATWG serializes file URLs as file:///…; empty segments kept'],
  ["http://example.com/?b=1&a=1", "http://example.com/?a=1&b=1", "http://example.com/?b=1&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/foo.html?b=1&a=1", "http://foo.com/foo.html?a=1&b=1", "http://foo.com/foo.html?b=1&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?b=2&a=1", "http://foo.com/index?a=1&b=2", "http://foo.com/index?b=2&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?b=2&a=1#c", "http://foo.com/index?a=1&b=2", "http://foo.com/index?b=2&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?a=1&b=", "http://foo.com/index?a=1&b", "http://foo.com/index?a=1&b=", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?b&a=1", "http://foo.com/index?a=1&b", "http://foo.com/index?b&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?b=&a=1", "http://foo.com/index?a=1&b", "http://foo.com/index?b=&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?b=1&a=1&", "http://foo.com/index?a=1&b=1", "http://foo.com/index?b=1&a=1&", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?&b=1&a=1", "http://foo.com/index?a=1&b=1", "http://foo.com/index?&b=1&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?&=1&a=1", "http://foo.com/index?a=1", "http://foo.com/index?&=1&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://foo.com/index?=1&b=1&a=1", "http://foo.com/index?a=1&b=1", "http://foo.com/index?=1&b=1&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["https://example.com/path/query.php?hello=world&foo=bar", "https://example.com/path/query.php?foo=bar&hello=world", "https://example.com/path/query.php?hello=world&foo=bar", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["https://example.org/p%2d1/p%2d2/?b=2&a=1", "https://example.org/p-1/p-2/?a=1&b=2", "https://example.org/p-1/p-2/?b=2&a=1", 'query kept as written: parameters not sorted, empty values and "&" kept (seed 004: a page is new if its complete url, parameters included, is new)'],
  ["http://[::ffff:127.0.0.1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", 'WHATWG serializes IPv4-mapped IPv6 addresses in hex'],
];

/** Seed 003's own examples and the brief's additions: [href, base, expected]. */
const SEED: [string, string | undefined, string | null][] = [
  ['/relative/link', 'http://my.domain.de/start', 'http://my.domain.de/relative/link'],
  ['http://host.de/path/../path2', undefined, 'http://host.de/path2'],
  ['HTTP://WWW.Host.de/Path', undefined, 'http://www.host.de/Path'],
  ['http://host.de/path#fragment', undefined, 'http://host.de/path'],
  ['http://host.de:80/x', undefined, 'http://host.de/x'],
  ['https://host.de:443/x', undefined, 'https://host.de/x'],
  ['https://host.de:80/x', undefined, 'https://host.de:80/x'],
  ['javascript:void(0)', 'http://host.de/', null],
  ['mailto:andreas.weber@empolis.com', 'http://host.de/', null],
  ['data:text/plain,hello', undefined, null],
  ['tel:+4912345', undefined, null],
  ['urn:isbn:0451450523', undefined, null],
  ['b.html', 'http://host.de/a/index.html', 'http://host.de/a/b.html'],
  ['../c/d.html?x=1#top', 'http://host.de/a/b/index.html', 'http://host.de/a/c/d.html?x=1'],
  ['?q=2', 'http://host.de/a/b?q=1', 'http://host.de/a/b?q=2'],
  ['#only-fragment', 'http://host.de/a/b?q=1#x', 'http://host.de/a/b?q=1'],
  ['//other.org/p', 'https://host.de/', 'https://other.org/p'],
  ['  http://host.de/x  ', undefined, 'http://host.de/x'],
  ['/relative', undefined, null],
  ['http://', undefined, null],
  ['http://exa mple.com/', undefined, null],
  ['http://host.de/a?', undefined, 'http://host.de/a'],
  ['http://user:secret@host.de/a', undefined, 'http://host.de/a'],
  ['http://host.de/%7euser/%41%2F', undefined, 'http://host.de/~user/A%2F'],
];

/** Seed 004 query-string filter (calendar traps): [url, keepQueryParams, expected]. */
const KEEP_QUERY: [string, string[] | null, string][] = [
  ['http://h.nl/calendar?year=2018&month=11&day=8', ['id'], 'http://h.nl/calendar'],
  ['http://h.nl/item?id=12345&nr=2&day=8', ['id'], 'http://h.nl/item?id=12345'],
  ['http://h.nl/item?nr=2&day=8&id=12345', ['id', 'nr'], 'http://h.nl/item?nr=2&id=12345'],
  ['http://h.nl/item?id=1&day=8', null, 'http://h.nl/item?id=1&day=8'],
  ['http://h.nl/item?id=1&day=8', [], 'http://h.nl/item'],
  ['http://h.nl/item?i%64=7&x=1', ['id'], 'http://h.nl/item?id=7'],
];

describe('normalizeUrl: crawler-commons corpus', () => {
  for (const [input, expected] of CORPUS) {
    it(`${JSON.stringify(input)} -> ${expected}`, () => assert.equal(normalizeUrl(input), expected));
  }
});

describe('normalizeUrl: documented deviations from crawler-commons', () => {
  for (const [input, commons, trawl, why] of DEVIATIONS) {
    it(`${JSON.stringify(input)} -> ${trawl} (crawler-commons: ${commons}; ${why})`, () => {
      assert.equal(normalizeUrl(input), trawl);
      assert.notEqual(trawl, commons);
    });
  }
});

describe('normalizeUrl: seed 003 rules', () => {
  for (const [href, base, expected] of SEED) {
    it(`${JSON.stringify(href)} on ${base ?? '(no base)'} -> ${expected}`, () =>
      assert.equal(normalizeUrl(href, base), expected));
  }
  it('is idempotent on its own output', () => {
    for (const [input] of CORPUS) {
      const once = normalizeUrl(input);
      if (once !== null) assert.equal(normalizeUrl(once), once);
    }
    for (const input of ['http://a.test..//', 'http://A.test.../x?', 'http://bücher.test.:80/a b']) {
      const once = normalizeUrl(input);
      assert.equal(normalizeUrl(once ?? ''), once, input);
    }
  });
});

describe('normalizeUrl: keepQueryParams (seed 004)', () => {
  for (const [url, keep, expected] of KEEP_QUERY) {
    it(`${url} keeping ${JSON.stringify(keep)} -> ${expected}`, () =>
      assert.equal(normalizeUrl(url, undefined, { keepQueryParams: keep }), expected));
  }
});

describe('normalizeUrlDetailed', () => {
  const cases: [string, string | undefined, string][] = [
    ['javascript:void(0)', undefined, 'opaque-url'],
    ['MAILTO:a@b.c', undefined, 'opaque-url'],
    ['news:comp.lang.misc', undefined, 'opaque-url'],
    ['/x', undefined, 'malformed-url'],
    ['http://[::1', undefined, 'malformed-url'],
    ['x', 'not a base', 'malformed-url'],
  ];
  for (const [href, base, reason] of cases) {
    it(`${href} -> ${reason}`, () => assert.deepEqual(normalizeUrlDetailed(href, base), { reason }));
  }
});

describe('stripFragment', () => {
  const cases: [string, string][] = [
    ['http://a.b/c#d', 'http://a.b/c'],
    ['http://a.b/c?x#d#e', 'http://a.b/c?x'],
    ['http://a.b/c', 'http://a.b/c'],
  ];
  for (const [url, expected] of cases)
    it(`${url} -> ${expected}`, () => assert.equal(stripFragment(url), expected));
});

describe('normalizeUrl: session ids (scope.stripSessionIds)', () => {
  const cases: [string, string][] = [
    ['http://a.b/cart.html;jsessionid=0A1B2C3D4E5F60718293A4B5C6D7E8F9', 'http://a.b/cart.html'],
    ['http://a.b/cart.html;JSESSIONID=abc.node0?item=3', 'http://a.b/cart.html?item=3'],
    ['http://a.b/shop;jsessionid=x/list.html', 'http://a.b/shop/list.html'],
    ['http://a.b/p;sid=1;lang=en', 'http://a.b/p;lang=en'],
    ['http://a.b/p?PHPSESSID=9f8e7d6c5b4a39281706f5e4d3c2b1a0&page=2', 'http://a.b/p?page=2'],
    ['http://a.b/p?page=2&jsessionid=x', 'http://a.b/p?page=2'],
    ['http://a.b/p?ASPSESSIONIDQSCTDRTA=ABCDEFGHIJKLMNOPQRSTUVWX', 'http://a.b/p'],
    ['http://a.b/p?CFID=12&CFTOKEN=34&x=1', 'http://a.b/p?x=1'],
    ['http://a.b/p?sid=a1b2c3d4e5f6a7b8c9d0', 'http://a.b/p'],
    // Not session ids: a short `sid` (a site id), names that only contain one, other path parameters.
    ['http://a.b/p?sid=42', 'http://a.b/p?sid=42'],
    ['http://a.b/p?mysessionid=1&sidebar=on', 'http://a.b/p?mysessionid=1&sidebar=on'],
    ['http://a.b/matrix;color=red', 'http://a.b/matrix;color=red'],
  ];
  for (const [url, expected] of cases)
    it(`${url} -> ${expected}`, () => assert.equal(normalizeUrl(url), expected));

  it('keeps them with stripSessionIds: false', () => {
    const url = 'http://a.b/cart.html;jsessionid=abc?PHPSESSID=def';
    assert.equal(normalizeUrl(url, undefined, { stripSessionIds: false }), url);
  });
});
