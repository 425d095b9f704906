import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import { type DomainLists, domainOf, registrableDomain } from '../../../shared/crawl/url/domains.ts';

const SEED_LISTS: DomainLists = { generic: ['com', 'gov', 'org'], additional: ['co.uk', 'ma.us', 'ca'] };

/** Seed 000, every example: [host or URL, lists, expected domain, DEBUG message or null]. */
const SEED: [string, DomainLists, string, string | null][] = [
  // http://www.xyz.com: one-term generic TLD com -> xyz.com
  ['www.xyz.com', SEED_LISTS, 'xyz.com', null],
  // http://www.xyz.co.uk with co.uk in additional: www.xyz.co.uk, xyz.co.uk, then co.uk matches -> xyz.co.uk
  ['www.xyz.co.uk', SEED_LISTS, 'xyz.co.uk', null],
  // add ca when crawling www.xyz.ca
  ['www.xyz.ca', SEED_LISTS, 'xyz.ca', null],
  // the generic list "such as com, gov, or org": the last two terms
  ['http://www.xyz.gov', SEED_LISTS, 'xyz.gov', null],
  ['http://www.xyz.org/', SEED_LISTS, 'xyz.org', null],
  ['www.town.ma.us', SEED_LISTS, 'town.ma.us', null],
  // taking only the last term would wrongly give co.uk: without co.uk listed, the last two terms are
  // returned and the DEBUG message is logged
  [
    'www.xyz.co.uk',
    { generic: ['com'], additional: [] },
    'co.uk',
    'Failed to get the domain name for url: www.xyz.co.uk using co.uk as the default domain name',
  ],
  [
    'http://www.xyz.co.uk/page.html',
    { generic: ['com'], additional: ['ma.us'] },
    'co.uk',
    'Failed to get the domain name for url: http://www.xyz.co.uk/page.html using co.uk as the default domain name',
  ],
  // the generic list is checked first: uk is not generic, so the additional list decides
  ['www.xyz.co.uk', { generic: ['com', 'uk'], additional: ['co.uk'] }, 'co.uk', null],
  // the whole host is checked first, then shorter suffixes
  ['www.xyz.co.uk', { generic: [], additional: ['xyz.co.uk', 'co.uk'] }, 'www.xyz.co.uk', null],
  ['xyz.co.uk', { generic: [], additional: ['co.uk'] }, 'xyz.co.uk', null],
  ['co.uk', { generic: [], additional: ['co.uk'] }, 'co.uk', null],
  ['a.b.xyz.uk', { generic: [], additional: ['uk'] }, 'xyz.uk', null],
  // a null list counts as empty when the other one is configured
  ['deep.www.xyz.com', { generic: ['com'], additional: null }, 'xyz.com', null],
  ['www.xyz.co.uk', { generic: null, additional: ['co.uk'] }, 'xyz.co.uk', null],
  // case, port, trailing dot and a leading dot in list entries do not matter
  ['WWW.XYZ.CO.UK:8080', { generic: ['COM'], additional: ['.Co.Uk'] }, 'xyz.co.uk', null],
  ['www.xyz.com.', SEED_LISTS, 'xyz.com', null],
  // IP addresses and single-label hosts are their own domain (deviation: the seed would cut "0.1")
  ['127.0.0.1', SEED_LISTS, '127.0.0.1', null],
  ['[::1]:8080', SEED_LISTS, '[::1]', null],
  ['localhost', SEED_LISTS, 'localhost', null],
];

const PSL_LISTS: DomainLists = { generic: null, additional: null };

/** Public Suffix List tests (corpora/psl/cases.jsonl): [host, registrable domain or null]. */
const PSL: [string, string | null][] = [
  ['COM', null],
  ['example.COM', 'example.com'],
  ['WwW.example.COM', 'example.com'],
  ['.com', null],
  ['.example', null],
  ['.example.com', null],
  ['.example.example', null],
  ['example', null],
  ['example.example', 'example.example'],
  ['b.example.example', 'example.example'],
  ['a.b.example.example', 'example.example'],
  ['biz', null],
  ['domain.biz', 'domain.biz'],
  ['b.domain.biz', 'domain.biz'],
  ['a.b.domain.biz', 'domain.biz'],
  ['com', null],
  ['example.com', 'example.com'],
  ['b.example.com', 'example.com'],
  ['a.b.example.com', 'example.com'],
  ['uk.com', null],
  ['example.uk.com', 'example.uk.com'],
  ['b.example.uk.com', 'example.uk.com'],
  ['a.b.example.uk.com', 'example.uk.com'],
  ['test.ac', 'test.ac'],
  ['mm', null],
  ['c.mm', null],
  ['b.c.mm', 'b.c.mm'],
  ['a.b.c.mm', 'b.c.mm'],
  ['jp', null],
  ['test.jp', 'test.jp'],
  ['www.test.jp', 'test.jp'],
  ['ac.jp', null],
  ['test.ac.jp', 'test.ac.jp'],
  ['www.test.ac.jp', 'test.ac.jp'],
  ['kyoto.jp', null],
  ['test.kyoto.jp', 'test.kyoto.jp'],
  ['ide.kyoto.jp', null],
  ['b.ide.kyoto.jp', 'b.ide.kyoto.jp'],
  ['a.b.ide.kyoto.jp', 'b.ide.kyoto.jp'],
  ['c.kobe.jp', null],
  ['b.c.kobe.jp', 'b.c.kobe.jp'],
  ['a.b.c.kobe.jp', 'b.c.kobe.jp'],
  ['city.kobe.jp', 'city.kobe.jp'],
  ['www.city.kobe.jp', 'city.kobe.jp'],
  ['ck', null],
  ['test.ck', null],
  ['b.test.ck', 'b.test.ck'],
  ['a.b.test.ck', 'b.test.ck'],
  ['www.ck', 'www.ck'],
  ['www.www.ck', 'www.ck'],
  ['us', null],
  ['test.us', 'test.us'],
  ['www.test.us', 'test.us'],
  ['ak.us', null],
  ['test.ak.us', 'test.ak.us'],
  ['www.test.ak.us', 'test.ak.us'],
  ['k12.ak.us', null],
  ['test.k12.ak.us', 'test.k12.ak.us'],
  ['www.test.k12.ak.us', 'test.k12.ak.us'],
  ['食狮.com.cn', '食狮.com.cn'],
  ['食狮.公司.cn', '食狮.公司.cn'],
  ['www.食狮.公司.cn', '食狮.公司.cn'],
  ['shishi.公司.cn', 'shishi.公司.cn'],
  ['公司.cn', null],
  ['食狮.中国', '食狮.中国'],
  ['www.食狮.中国', '食狮.中国'],
  ['shishi.中国', 'shishi.中国'],
  ['中国', null],
  ['xn--85x722f.com.cn', 'xn--85x722f.com.cn'],
  ['xn--85x722f.xn--55qx5d.cn', 'xn--85x722f.xn--55qx5d.cn'],
  ['www.xn--85x722f.xn--55qx5d.cn', 'xn--85x722f.xn--55qx5d.cn'],
  ['shishi.xn--55qx5d.cn', 'shishi.xn--55qx5d.cn'],
  ['xn--55qx5d.cn', null],
  ['xn--85x722f.xn--fiqs8s', 'xn--85x722f.xn--fiqs8s'],
  ['www.xn--85x722f.xn--fiqs8s', 'xn--85x722f.xn--fiqs8s'],
  ['shishi.xn--fiqs8s', 'shishi.xn--fiqs8s'],
  ['xn--fiqs8s', null],
];

describe('domainOf with TLD lists (seed 000)', () => {
  for (const [host, lists, expected, message] of SEED) {
    it(`${host} with ${JSON.stringify(lists)} -> ${expected}`, () => {
      const logged: string[] = [];
      assert.equal(
        domainOf(host, lists, (m) => logged.push(m)),
        expected,
      );
      assert.deepEqual(logged, message === null ? [] : [message]);
    });
  }
});

describe('the TLD lists in the config', () => {
  it("take seed 000's space-delimited form as well as a list, and decide alike", () => {
    const base = { name: 'd', startUrls: ['http://a.example/'] };
    const spaced = parseConfig({
      ...base,
      domains: { generic: ' com  gov\torg', additional: 'co.uk ma.us ca\n' },
    });
    const listed = parseConfig({ ...base, domains: SEED_LISTS });
    assert.deepEqual(spaced.domains, SEED_LISTS);
    assert.deepEqual(listed.domains, SEED_LISTS);
    assert.equal(domainOf('www.xyz.ma.us', spaced.domains), 'xyz.ma.us');
    assert.deepEqual(parseConfig(base).domains, { generic: null, additional: null });
    assert.throws(() => parseConfig({ ...base, domains: { generic: 7 } }), /domains\.generic/);
  });
});

describe('registrableDomain (Public Suffix List test file)', () => {
  for (const [host, expected] of PSL) {
    it(`${host} -> ${expected}`, () => assert.equal(registrableDomain(host), expected));
  }
});

describe('domainOf without TLD lists (Public Suffix List)', () => {
  // a public suffix itself has no registrable domain: domainOf falls back to the host
  for (const [host, expected] of PSL.filter(([h]) => !h.startsWith('.'))) {
    const want = expected ?? host.toLowerCase();
    it(`${host} -> ${want}`, () => assert.equal(domainOf(host, PSL_LISTS), want));
  }
  const extra: [string, string][] = [
    ['www.xyz.co.uk', 'xyz.co.uk'],
    ['https://docs.example.com:8443/a', 'example.com'],
    ['foo.blogspot.com', 'foo.blogspot.com'],
    ['192.168.1.10', '192.168.1.10'],
    ['[2001:db8::1]', '[2001:db8::1]'],
    ['localhost', 'localhost'],
    ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
  ];
  for (const [host, want] of extra)
    it(`${host} -> ${want}`, () => assert.equal(domainOf(host, PSL_LISTS), want));
  it('never logs', () => {
    const logged: string[] = [];
    domainOf('a.b.unknown-tld-zz', PSL_LISTS, (m) => logged.push(m));
    assert.deepEqual(logged, []);
  });
});
