import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RuleMatch } from '../../../shared/config.ts';
import {
  compileRules,
  firstMatchingRule,
  matchRule,
  type RuleActions,
  urlParts,
} from '../../../shared/crawl/rules/rules.ts';
import { parseXmlRules } from '../../../shared/crawl/rules/rules-xml.ts';

const parts = (url: string) => urlParts(url)!;
const xmlRule = (match: string) => `<Rules><Rule>${match}<Index/></Rule></Rules>`;

/** Seed 001 rule table, JSON and XML side by side: [label, JSON match, XML match, matching URLs, other URLs]. */
const MATCH_CASES: [string, RuleMatch, string, string[], string[]][] = [
  [
    'Atom path prefix norm=none /watch',
    { atom: { field: 'path', kind: 'prefix', norm: 'none', value: '/watch' } },
    '<Atom field="path" kind="prefix" norm="none" value="/watch" />',
    ['http://yt.com/watch?v=1', 'http://yt.com/watchlist'],
    ['http://yt.com/Watch', 'http://yt.com/a/watch'],
  ],
  [
    'Domain foo.com: foo.com and bar.foo.com, not barfoo.com',
    { domain: 'foo.com' },
    '<Domain val="foo.com" />',
    ['http://foo.com/', 'http://bar.foo.com/', 'https://a.b.FOO.com/x'],
    ['http://barfoo.com/', 'http://foo.com.evil.net/', 'http://fooxcom/'],
  ],
  [
    'Domain as the seed expands it (escaped regex atoms)',
    {
      or: [
        { atom: { field: 'host', kind: 'suffix', value: '\\.foo\\.com' } },
        { atom: { field: 'host', kind: 'exact', value: 'foo\\.com' } },
      ],
    },
    '<Or><Atom field="host" kind="suffix" value="\\.foo\\.com" /><Atom field="host" kind="exact" value="foo\\.com" /></Or>',
    ['http://foo.com/', 'http://bar.foo.com/'],
    ['http://barfoo.com/'],
  ],
  [
    'Path /cgi-bin (left anchored)',
    { path: '/cgi-bin' },
    '<Path val="/cgi-bin" />',
    ['http://h.com/cgi-bin/x.pl', 'http://h.com/CGI-BIN/x'],
    ['http://h.com/x/cgi-bin/', 'http://h.com/?/cgi-bin'],
  ],
  [
    'Ext .gif (right anchored on the path)',
    { ext: '.gif' },
    '<Ext val=".gif" />',
    ['http://h.com/a.gif', 'http://h.com/a.GIF'],
    ['http://h.com/agif', 'http://h.com/a.png?y=.gif', 'http://h.com/a.gif.html'],
  ],
  [
    'Host www.wikipedia.org (exact)',
    { host: 'www.wikipedia.org' },
    '<Host val="www.wikipedia.org" />',
    ['https://www.wikipedia.org/wiki'],
    ['https://en.wikipedia.org/', 'https://www.wikipedia.org.evil/', 'https://wwwxwikipedia.org/'],
  ],
  [
    'Url http://en.wikipedia.org/wiki (exact)',
    { url: 'http://en.wikipedia.org/wiki' },
    '<Url val="http://en.wikipedia.org/wiki" />',
    ['http://en.wikipedia.org/wiki'],
    ['http://en.wikipedia.org/wiki/X', 'https://en.wikipedia.org/wiki'],
  ],
  [
    'Url value compared in normalized form',
    { url: 'HTTP://Example.com:80' },
    '<Url val="HTTP://Example.com:80" />',
    ['http://example.com/'],
    ['http://example.com/a', 'http://example.com:8080/'],
  ],
  ['Scheme http (exact)', { scheme: 'http' }, '<Scheme val="http" />', ['http://a.b/'], ['https://a.b/']],
  // Written with its delimiter, the value never matched.
  [
    'Scheme "http:" (its colon left out)',
    { scheme: 'http:' },
    '<Scheme val="http:" />',
    ['http://a.b/'],
    ['https://a.b/'],
  ],
  [
    'Query "?q=foo" (its ? left out)',
    { query: '?q=foo' },
    '<Query val="?q=foo" />',
    ['http://a.b/s?q=foo'],
    ['http://a.b/s?q=food'],
  ],
  [
    'Query q=foo (exact)',
    { query: 'q=foo' },
    '<Query val="q=foo" />',
    ['http://a.b/s?q=foo'],
    ['http://a.b/s?q=foo&x=1', 'http://a.b/s?q=food'],
  ],
  [
    'InQuery q=foo (unanchored)',
    { inQuery: 'q=foo' },
    '<InQuery val="q=foo" />',
    ['http://a.b/s?q=foo', 'http://a.b/s?x=1&q=food'],
    ['http://a.b/q=foo', 'http://a.b/s?q=bar'],
  ],
  [
    'Length path [30:] (path length >= 30)',
    { length: { field: 'path', value: '[30:]' } },
    '<Length field="path" val="[30:]" />',
    [`http://a.b/${'x'.repeat(29)}`],
    [`http://a.b/${'x'.repeat(28)}`],
  ],
  [
    'Atom length [:10] on the host',
    { atom: { field: 'host', kind: 'length', value: '[:10]' } },
    '<Atom field="host" kind="length" value="[:10]" />',
    ['http://abcdef.gh/'],
    ['http://abcdefgh.ij/'],
  ],
  [
    'Atom length [11:12] on the query',
    { atom: { field: 'query', kind: 'length', value: '[11:12]' } },
    '<Atom field="query" kind="length" val="[11:12]" />',
    ['http://a.b/?abcdefghijk', 'http://a.b/?abcdefghijkl'],
    ['http://a.b/?abcdefghij', 'http://a.b/?abcdefghijklm'],
  ],
  [
    'Atom url inside regex, case-insensitive by default',
    { atom: { field: 'url', kind: 'inside', value: 'session[0-9]+' } },
    '<Atom field="url" kind="inside" value="session[0-9]+" />',
    ['http://a.b/x?SESSION42', 'http://a.b/session1/'],
    ['http://a.b/session/'],
  ],
  [
    'Atom norm=lower: field lower-cased, pattern case-sensitive',
    { atom: { field: 'path', kind: 'exact', norm: 'lower', value: '/abc' } },
    '<Atom field="path" kind="exact" norm="lower" value="/abc" />',
    ['http://a.b/ABC', 'http://a.b/abc'],
    ['http://a.b/abcd'],
  ],
  [
    'Atom norm=lower never matches upper-case pattern letters',
    { atom: { field: 'path', kind: 'exact', norm: 'lower', value: '/ABC' } },
    '<Atom field="path" kind="exact" norm="lower" value="/ABC" />',
    [],
    ['http://a.b/ABC', 'http://a.b/abc'],
  ],
  [
    'Atom norm=norm: the normalized URL, case-insensitive',
    { atom: { field: 'url', kind: 'exact', norm: 'norm', value: 'http://a\\.b/x/y' } },
    '<Atom field="url" kind="exact" norm="norm" value="http://a\\.b/x/y" />',
    ['http://A.B:80/x/./z/../Y#frag', 'http://a.b/x/y'],
    ['http://a.b/x/y/'],
  ],
  [
    'Atom suffix regex',
    { atom: { field: 'path', kind: 'suffix', value: '\\.(pdf|docx?)' } },
    '<Atom field="path" kind="suffix" value="\\.(pdf|docx?)" />',
    ['http://a.b/r.pdf', 'http://a.b/r.DOC', 'http://a.b/r.docx'],
    ['http://a.b/r.pdf.html', 'http://a.b/rxpdf'],
  ],
  [
    'And / Not: docs path but not PDFs',
    { and: [{ path: '/docs' }, { not: { ext: '.pdf' } }] },
    '<And><Path val="/docs"/><Not><Ext val=".pdf"/></Not></And>',
    ['http://a.b/docs/x.html'],
    ['http://a.b/docs/x.pdf', 'http://a.b/blog/x.html'],
  ],
  [
    'Or: any of two hosts',
    { or: [{ host: 'a.com' }, { host: 'b.com' }] },
    '<Or><Host val="a.com"/><Host val="b.com"/></Or>',
    ['http://a.com/', 'http://b.com/x'],
    ['http://c.com/'],
  ],
  [
    'shortcut values are literals; seed-style escapes mean the same',
    { or: [{ path: '/a.b(1)' }, { path: '/c\\.d' }] },
    '<Or><Path val="/a.b(1)"/><Path val="/c\\.d"/></Or>',
    ['http://h/a.b(1)/x', 'http://h/c.d'],
    ['http://h/axb(1)', 'http://h/cxd', 'http://h/c\\.d'],
  ],
  [
    'a shortcut value written as a regular expression also matches as one (seed 001: "the val attribute is a regular expression")',
    { or: [{ path: '/cgi-bin/.*\\.pl' }, { ext: '\\.(gif|png)' }, { domain: '(foo|bar)\\.com' }] },
    '<Or><Path val="/cgi-bin/.*\\.pl"/><Ext val="\\.(gif|png)"/><Domain val="(foo|bar)\\.com"/></Or>',
    [
      'http://h/cgi-bin/x.pl',
      'http://h/CGI-BIN/a/b.pl?x=1',
      'http://h/i/a.PNG',
      'http://a.bar.com/',
      'http://foo.com/',
    ],
    [
      'http://h/cgi-bin/x.txt',
      'http://h/docs/cgi-bin/x.pl',
      'http://h/i/agif',
      'http://barfoo.com/',
      'http://foo.com.x/',
    ],
  ],
  [
    'dots and question marks in shortcut values are themselves: a URL with its query, a host',
    { or: [{ url: 'http://h/a?b=1' }, { host: 'www.foo.com' }, { path: '/c++/' }] },
    '<Or><Url val="http://h/a?b=1"/><Host val="www.foo.com"/><Path val="/c++/"/></Or>',
    ['http://h/a?b=1', 'http://www.foo.com/x', 'http://h/c++/intro'],
    ['http://h/ab=1', 'http://h/a?b=12', 'http://wwwxfoo.com/', 'http://h/c/'],
  ],
  [
    'litteral="true": value matched literally (seed 001 sample)',
    { atom: { field: 'url', kind: 'prefix', norm: 'none', value: 'http://www\\.example\\.com/' } },
    '<ar:Atom litteral="true" value="http://www.example.com/" norm="none" kind="prefix" field="url"/>',
    ['http://www.example.com/', 'http://www.example.com/a/b'],
    ['http://wwwxexample.com/', 'https://www.example.com/'],
  ],
  [
    'literal: true matches regex characters as themselves (JSON form of litteral="true")',
    { atom: { field: 'path', kind: 'inside', value: '/a.b(1)+', literal: true } },
    '<Atom field="path" kind="inside" litteral="true" value="/a.b(1)+" />',
    ['http://h/x/a.b(1)+y', 'http://h/A.B(1)+'],
    ['http://h/axb1', 'http://h/a.b11', 'http://h/a.b(1)'],
  ],
  [
    'literal: false keeps the value a regular expression',
    { atom: { field: 'path', kind: 'exact', value: '/a.c', literal: false } },
    '<Atom field="path" kind="exact" litteral="false" value="/a.c" />',
    ['http://h/a.c', 'http://h/abc'],
    ['http://h/a.cd'],
  ],
  [
    'norm "non" is the seed\'s name for the default (case-insensitive)',
    { atom: { field: 'host', kind: 'exact', value: 'www\\.example\\.com' } },
    '<Atom field="host" kind="exact" norm="non" value="www\\.example\\.com" />',
    ['http://WWW.Example.com/'],
    ['http://www.example.org/'],
  ],
  [
    'Scheme https (seed 001: http|https)',
    { scheme: 'https' },
    '<Scheme val="https" />',
    ['https://a.b/'],
    ['http://a.b/'],
  ],
  [
    'Domain written in Unicode matches the punycode host URLs carry (IDN)',
    { domain: 'bücher.test' },
    '<Domain val="bücher.test" />',
    ['http://bücher.test/', 'http://www.BÜCHER.test/x', 'http://xn--bcher-kva.test/'],
    ['http://bucher.test/', 'http://xbücher.test/'],
  ],
  [
    'Host in Unicode and upper case (IDN)',
    { host: 'BÜCHER.test' },
    '<Host val="BÜCHER.test" />',
    ['http://bücher.test/a'],
    ['http://www.bücher.test/'],
  ],
  [
    'Path with non-ASCII characters and a space, as typed or escaped',
    { path: '/café/a b' },
    '<Path val="/café/a b" />',
    ['http://h.com/café/a b/x', 'http://h.com/caf%c3%a9/a%20b'],
    ['http://h.com/cafe/a b', 'http://h.com/café/ab'],
  ],
  [
    'Path already escaped',
    { path: '/caf%c3%a9' },
    '<Path val="/caf%c3%a9" />',
    ['http://h.com/café/x'],
    ['http://h.com/cafe/x'],
  ],
  [
    'Path with non-ASCII letters in any case (case-insensitive by default, seed 001)',
    { path: '/café' },
    '<Path val="/café" />',
    ['http://h.com/CAFÉ/x', 'http://h.com/Caf%C3%A9/x', 'http://h.com/CAF%c3%89'],
    ['http://h.com/CAFE/x', 'http://h.com/caf%E9/x'],
  ],
  [
    'Atom norm lower with a non-ASCII value',
    { atom: { field: 'path', kind: 'inside', norm: 'lower', value: 'über' } },
    '<Atom field="path" kind="inside" norm="lower" value="über"/>',
    ['http://h.com/x/ÜBER', 'http://h.com/%C3%BCber'],
    ['http://h.com/x/uber'],
  ],
  [
    'Atom norm none with a non-ASCII value stays case-sensitive',
    { atom: { field: 'path', kind: 'prefix', norm: 'none', value: '/Straße' } },
    '<Atom field="path" kind="prefix" norm="none" value="/Straße"/>',
    ['http://h.com/Straße/1', 'http://h.com/Stra%C3%9Fe'],
    ['http://h.com/straße/1', 'http://h.com/STRASSE'],
  ],
  [
    'InQuery with a space',
    { inQuery: 'q=a b' },
    '<InQuery val="q=a b" />',
    ['http://h.com/s?x=1&q=a b&z', 'http://h.com/s?q=a%20b'],
    ['http://h.com/s?q=ab'],
  ],
];

describe('crawl rules: seed 001 matches (JSON and XML)', () => {
  for (const [label, json, xml, yes, no] of MATCH_CASES) {
    for (const [form, rules] of [
      ['JSON', [{ match: json, actions: ['index'] }]],
      ['XML', xmlRule(xml)],
    ] as const) {
      it(`${form}: ${label}`, () => {
        const [rule] = compileRules(rules as never);
        for (const url of yes) assert.equal(matchRule(rule!, parts(url)), true, `should match ${url}`);
        for (const url of no) assert.equal(matchRule(rule!, parts(url)), false, `should not match ${url}`);
      });
    }
  }
  it('XML litteral="true" converts to "literal": true', () => {
    const xml =
      '<Rules><Rule><Atom field="url" kind="prefix" litteral="true" value="http://a.b/" /><Index/></Rule></Rules>';
    assert.deepEqual(parseXmlRules(xml), [
      {
        match: { atom: { field: 'url', kind: 'prefix', value: 'http://a.b/', literal: true } },
        actions: ['index'],
      },
    ]);
  });
  it('XML reads field, kind and norm names in any case', () => {
    assert.deepEqual(
      parseXmlRules(
        xmlRule(
          '<And><Atom field="Path" kind="Prefix" norm="None" value="/x"/><Length field="PATH" val="[3:]"/></And>',
        ),
      ),
      [
        {
          match: {
            and: [
              { atom: { field: 'path', kind: 'prefix', norm: 'none', value: '/x' } },
              { length: { field: 'path', value: '[3:]' } },
            ],
          },
          actions: ['index'],
        },
      ],
    );
  });
  it('a <Length> without its field is an error that says so', () => {
    assert.throws(
      () => compileRules(parseXmlRules(xmlRule('<Length val="[3:]"/>')) as never),
      /rules\.0\.match\.length\.field: missing: name the field \(one of url\|scheme\|host\|path\|query\)/,
    );
  });
  it('XML converts to the JSON form', () => {
    assert.deepEqual(parseXmlRules(xmlRule('<And><Path val="/docs"/><Not><Ext val=".pdf"/></Not></And>')), [
      { match: { and: [{ path: '/docs' }, { not: { ext: '.pdf' } }] }, actions: ['index'] },
    ]);
  });
});

/** Seed 001 actions table: [label, XML actions, JSON actions, expected compiled actions]. */
// biome-ignore format: one row per seed table line
const ACTION_CASES: [string, string, unknown[], Record<string, unknown>][] = [
  ['Index and follow', '<Index/><Follow/><Accept/>', ['index', 'follow', 'accept'], { index: true, follow: true, accept: true }],
  ["Index and don't follow", '<Index/><NoFollow/><Accept/>', ['index', 'noFollow', 'accept'], { index: true, follow: false, accept: true }],
  ['Follow but don’t index', '<NoIndex/><Follow/><Accept/>', ['noIndex', 'follow', 'accept'], { index: false, follow: true, accept: true }],
  ['Index', '<Index/><Accept/>', ['index', 'accept'], { index: true, follow: null, accept: true }],
  ['Follow', '<Follow/><Accept/>', ['follow', 'accept'], { index: null, follow: true, accept: true }],
  ["Don't index", '<NoIndex/>', ['noIndex'], { index: false, follow: null, accept: false }],
  ["Don't follow", '<NoFollow/>', ['noFollow'], { index: null, follow: false, accept: false }],
  ['Ignore', '<NoIndex/><NoFollow/><Ignore/>', ['noIndex', 'noFollow', 'ignore'], { index: false, follow: false, ignore: true }],
  ['Source', '<Source name="intranet"/>', [{ source: 'intranet' }], { source: 'intranet' }],
  ['Add meta', '<AddMeta value="v1" name="team"/>', [{ addMeta: { name: 'team', value: 'v1' } }], { addMeta: [{ name: 'team', value: 'v1' }] }],
  ['Priority -2 highest', '<Priority shift="-2"/>', [{ priority: -2 }], { priority: -2 }],
  ['Priority -1 higher', '<Priority shift="-1"/>', [{ priority: -1 }], { priority: -1 }],
  ['Priority 0 normal', '<Priority shift="0"/>', [{ priority: 0 }], { priority: 0 }],
  ['Priority 1 lower', '<Priority shift="1"/>', [{ priority: 1 }], { priority: 1 }],
  ['Priority +1, signed', '<Priority shift="+1"/>', [{ priority: 1 }], { priority: 1 }],
  ['Add meta with an empty value', '<AddMeta name="team" value=""/>', [{ addMeta: { name: 'team', value: '' } }], { addMeta: [{ name: 'team', value: '' }] }],
  ['Priority 2 lowest', '<Priority shift="2"/>', [{ priority: 2 }], { priority: 2 }],
];

describe('crawl rule actions: seed 001 table (JSON and XML)', () => {
  for (const [label, xml, json, expected] of ACTION_CASES) {
    it(label, () => {
      const [fromXml] = compileRules(`<Rules><Rule><Path val="/"/>${xml}</Rule></Rules>`);
      const [fromJson] = compileRules([{ match: { path: '/' }, actions: json as never }]);
      assert.deepEqual(fromXml!.actions, fromJson!.actions);
      for (const [key, value] of Object.entries(expected)) {
        assert.deepEqual(fromJson!.actions[key as keyof RuleActions], value, key);
      }
    });
  }
  it('the seed sample: namespaced ar:Atom, litteral, Index/Follow/Accept', () => {
    const xml = `<Rules group="example" key="auto" xmlns:ar="exa:com.exalead.actionrules.v21">
      <Rule>
        <ar:Atom litteral="true" value="http://www.example.com/"
          norm="none" kind="prefix" field="url"/>
        <Index/>
        <Follow/>
        <Accept/>
      </Rule>
    </Rules>`;
    const [rule] = compileRules(xml);
    assert.deepEqual(rule!.actions.names, ['index', 'follow', 'accept']);
    assert.equal(matchRule(rule!, parts('http://www.example.com/page')), true);
    assert.equal(matchRule(rule!, parts('http://www.example.org/')), false);
  });
  it('first matching rule wins', () => {
    const rules = compileRules([
      { match: { path: '/a/private' }, actions: ['ignore'] },
      { match: { path: '/a' }, actions: ['index', 'accept'] },
    ]);
    assert.equal(firstMatchingRule(rules, parts('http://h/a/private/x'))?.index, 0);
    assert.equal(firstMatchingRule(rules, parts('http://h/a/public'))?.index, 1);
    assert.equal(firstMatchingRule(rules, parts('http://h/b')), null);
  });
});
