import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  type ExtractHtmlInput,
  extractHtml,
  refreshTarget,
} from '../../../shared/crawl/extract/extract-html.ts';

const OPTIONS: ExtractHtmlInput['options'] = {
  removeElements: ['header', 'footer'],
  removeClasses: ['noindex'],
  honorMetaRobots: true,
  honorRelNofollow: true,
  honorCanonical: false,
  metadataMapping: {},
};
const PAGE = 'https://www.example.com/dir/page.html';

function extract(html: string, more: Partial<ExtractHtmlInput> = {}) {
  return extractHtml({ url: PAGE, html, options: OPTIONS, ...more });
}

describe('extractHtml links (seed 002 link detection, seed 004 discovery)', () => {
  const cases: [string, string, string[]][] = [
    ['a href in the head', '<head><a href="/h">x</a></head><body></body>', ['https://www.example.com/h']],
    [
      'a href inside <script> is ignored',
      '<script>var s = "<a href=\'/js\'>";</script><a href="b">b</a>',
      ['https://www.example.com/dir/b'],
    ],
    ['nothing from <style> or <template>', '<style>a{}</style><template><a href="/t">t</a></template>', []],
    [
      'frame src',
      '<frameset><frame src="f1.html"><frame src="/f2.html"></frameset>',
      ['https://www.example.com/dir/f1.html', 'https://www.example.com/f2.html'],
    ],
    [
      'iframe src and href (FDSE IFRAME HREF)',
      '<iframe src="/i1"></iframe><iframe href="/i2"></iframe>',
      ['https://www.example.com/i1', 'https://www.example.com/i2'],
    ],
    ['area href', '<map><area href="/area" shape="rect"></map>', ['https://www.example.com/area']],
    [
      'base href',
      '<head><base href="https://cdn.example.org/root/"></head><a href="x">x</a>',
      ['https://cdn.example.org/root/x'],
    ],
    ['relative base href', '<base href="/other/"><a href="x">x</a>', ['https://www.example.com/other/x']],
    [
      'links in a removed header are still found',
      '<header><a href="/home">Home</a></header>',
      ['https://www.example.com/home'],
    ],
    [
      'links in a removed class are still found',
      '<div class="noindex"><p><a href="/n">n</a></p></div>',
      ['https://www.example.com/n'],
    ],
    [
      'duplicates collapse in first-seen order',
      '<a href="/b"></a><a href="/a"></a><a href="/b"></a><a href="/a#x"></a>',
      ['https://www.example.com/b', 'https://www.example.com/a'],
    ],
    [
      'fragments are stripped',
      '<a href="/p#sec">p</a><a href="#top">top</a>',
      ['https://www.example.com/p', PAGE],
    ],
    [
      'opaque and unparsable links are dropped',
      '<a href="javascript:void(0)"></a><a href="mailto:a@b.c"></a><a href="data:text/plain,x"></a><a href="tel:+1"></a><a href="http://[bad"></a><a href="">e</a><a>none</a>',
      [],
    ],
    [
      'query strings are kept as written',
      '<a href="/s?b=2&amp;a=1">s</a>',
      ['https://www.example.com/s?b=2&a=1'],
    ],
    [
      'upper-case tags and attributes',
      '<A HREF="/upper">u</A><IFRAME SRC="/frame"></IFRAME>',
      ['https://www.example.com/upper', 'https://www.example.com/frame'],
    ],
    [
      'a meta refresh to another URL (relative to the base, any case)',
      '<head><base href="/b/"><META HTTP-EQUIV="Refresh" CONTENT="0; URL=next.html"></head>',
      ['https://www.example.com/b/next.html'],
    ],
    [
      'a refresh that only reloads the page, or is not one, adds nothing',
      '<meta http-equiv="refresh" content="300"><meta http-equiv="refresh" content="soon; url=/x"><meta name="refresh" content="0; url=/y">',
      [],
    ],
  ];
  for (const [label, html, links] of cases) {
    it(label, () => assert.deepEqual(extract(html).links, links));
  }
  it('<noscript> text is the content only of a page with no other text (a JavaScript app shell)', () => {
    const shell = extract(
      '<body><div id="root"></div><noscript><h1>Product 1</h1><p>Red <b>boots</b></p><header>Nav</header></noscript><noscript>More</noscript><script>app()</script></body>',
    );
    assert.equal(shell.content, 'Product 1 Red boots More');
    const page = extract('<body><p>Server text.</p><noscript>Enable JavaScript</noscript></body>');
    assert.equal(page.content, 'Server text.');
  });
  it('a refresh inside <noscript> (an "enable JavaScript" fallback) is no redirect and no link', () => {
    const page = extract(
      '<head><noscript><meta http-equiv="refresh" content="0; url=/enable-javascript"></noscript></head><body><noscript><p>Enable it.</p></noscript><p>Server-rendered text.</p></body>',
    );
    assert.equal(page.refresh, null);
    assert.deepEqual(page.links, []);
    assert.equal(page.content, 'Server-rendered text.');
  });
  it('a nofollow page follows its refresh no more than its links', () => {
    const page = extract(
      '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/r">',
    );
    assert.equal(page.robots.follow, false);
  });
});

describe('extractHtml rel=nofollow links (extract.honorRelNofollow)', () => {
  const html =
    '<a href="/a" rel="nofollow">a</a><a href="/b" REL="Sponsored NOFOLLOW">b</a>' +
    '<area href="/c" rel="nofollow"><a href="/d" rel="noopener">d</a>' +
    '<a href="/e" rel="nofollow">e</a><a href="/e">e again</a><iframe src="/f" rel="nofollow"></iframe>';
  it('leaves out a and area links whose rel says nofollow, case-insensitively, and counts them', () => {
    const page = extract(html);
    assert.deepEqual(page.links, [
      'https://www.example.com/d',
      'https://www.example.com/e',
      'https://www.example.com/f',
    ]);
    assert.equal(page.nofollowLinks, 3, '/a, /b and /c: /e is followed from its other link');
  });
  it('a nofollow link after a followed one to the same href leaves it followed', () => {
    const page = extract('<a href="/x">x</a><a href="/x" rel="nofollow">x</a>');
    assert.deepEqual(page.links, ['https://www.example.com/x']);
    assert.equal(page.nofollowLinks, 0);
  });
  it('honorRelNofollow: false and rogue mode follow them all', () => {
    for (const more of [{ options: { ...OPTIONS, honorRelNofollow: false } }, { rogue: true }]) {
      const page = extract(html, more);
      assert.equal(page.links.length, 6);
      assert.equal(page.nofollowLinks, 0);
    }
  });
});

describe("refreshTarget (the HTML standard's declarative refresh)", () => {
  const cases: [string, string | null][] = [
    ['0; url=/a', '/a'],
    ['0;URL=/a', '/a'],
    ['5, url = /a b', '/a b'],
    ["0; url='/q?x=1'", '/q?x=1'],
    ['0; url="/quoted" trailing', '/quoted'],
    ['0; /bare', '/bare'],
    ['0.5 ; url=https://other.example/', 'https://other.example/'],
    ['  3  ', null],
    ['0; url=', null],
    ['now; url=/x', null],
    ['', null],
  ];
  for (const [content, target] of cases) {
    it(JSON.stringify(content), () => assert.equal(refreshTarget(content), target));
  }
});

describe('extractHtml content (seed 004 removed elements)', () => {
  const cases: [string, string, string, Partial<ExtractHtmlInput['options']>?][] = [
    ['block elements separate words', '<p>a</p><p>b</p><div>c</div>d<br>e<li>f</li>', 'a b c d e f'],
    ['inline elements do not', '<p>one<b>two</b> three<span>four</span></p>', 'onetwo threefour'],
    ['whitespace collapses, entities decode', '<body>\n  x &amp;\t y&nbsp;&nbsp;z \n</body>', 'x & y z'],
    [
      'header and footer by name, with nested content',
      'a<header>h<div>h2<p>h3</p></div></header>b<footer>f</footer>c',
      'a b c',
    ],
    [
      'class noindex with nested content',
      'a<div class="box NoIndex wide">x<span>y</span><div>z</div></div>b',
      'a b',
    ],
    ['a class that merely contains the word is kept', '<div class="noindexed">kept</div>', 'kept'],
    [
      'nested removals close properly',
      '<header>1<footer>2</footer>3</header>after<footer>4</footer>end',
      'after end',
    ],
    [
      'script, style, noscript, template and title are not content',
      '<title>T</title><script>s()</script><style>p{}</style><noscript>n</noscript><template>t</template>body',
      'body',
    ],
    [
      'configured elements',
      '<nav>menu</nav><header>kept</header><aside class="ad">ad</aside>text',
      'kept text',
      { removeElements: ['NAV'], removeClasses: ['ad'] },
    ],
    ['unclosed removed element runs to the end', '<p>a</p><footer><p>b', 'a'],
  ];
  for (const [label, html, content, options] of cases) {
    it(label, () => assert.equal(extract(html, { options: { ...OPTIONS, ...options } }).content, content));
  }
});

describe('extractHtml text: what a reader sees', () => {
  it('drops soft hyphens, zero-width and bidi characters and controls from the title, the text and the description', () => {
    const html =
      '<html><head><title>inter&shy;national\u200b \u202eRTL\u202c</title>' +
      '<meta name="description" content="Caf\u00e9 &amp; th\u00e9\u200d &#1;desc"></head>' +
      '<body><p>hyphen&shy;ated p\u0000q \u001b[1mbold \u2066isolated\u2069 emoji\ufe0f</p></body></html>';
    const r = extract(html);
    assert.equal(r.title, 'international RTL');
    assert.equal(r.description, 'Café & thé desc');
    assert.equal(r.content, 'hyphenated pq [1mbold isolated emoji');
  });
  it('leaves out media fallback, ruby annotations and SVG descriptions; <search> separates words', () => {
    const r = extract(
      '<p>Intro</p><video src="v.mp4">Your browser does not support video</video><audio>no audio</audio>' +
        '<canvas>no canvas</canvas><p><ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp>字<rt>ji</rt></ruby></p>' +
        '<svg><title>chart</title><desc>a bar chart</desc><metadata>m</metadata><text>Sales</text></svg>' +
        '<search>searchA</search><search>searchB</search>',
    );
    assert.equal(r.content, 'Intro 漢字 Sales searchA searchB');
  });
  it('leaves out hidden elements, closed dialogs, iframe fallback and form options; until-found and open dialogs stay', () => {
    const r = extract(
      '<p>shown</p><div hidden><p>hidden para</p><ul><li>hidden item</li></ul></div>' +
        '<section hidden="until-found">found section</section><dialog>closed dialog</dialog>' +
        '<dialog open>open dialog</dialog><iframe src="f.html">no frames</iframe>' +
        '<label>Country <select name="c"><option>Albania</option><option>Zambia</option></select></label>' +
        '<input list="l"><datalist id="l"><option>suggestion</option></datalist><p>after</p>',
    );
    assert.equal(r.content, 'shown found section open dialog Country after');
    assert.ok(
      r.links.some((l) => l.endsWith('/dir/f.html')),
      "the iframe's page is still a link",
    );
  });
  it("an inline chart's labels and a formula's cells are words apart; a formula's TeX source is left out", () => {
    const r = extract(
      '<p>Sales<svg><text><tspan>Q1</tspan></text><text>Q2</text></svg>by quarter</p>' +
        '<p>E<math><semantics><mrow><mi>m</mi><mo>=</mo></mrow><annotation encoding="application/x-tex">E=mc^2</annotation></semantics></math>end</p>' +
        '<p><math><mtable><mtr><mtd><mn>1</mn></mtd><mtd><mn>2</mn></mtd></mtr></mtable></math></p>',
    );
    assert.equal(r.content, 'Sales Q1 Q2 by quarter E m= end 1 2');
  });
  it("a textarea's character references are decoded, as a browser shows them (htmlparser2 leaves them raw)", () => {
    const r = extract(
      '<p>A &amp; B</p><textarea>x &lt;b&gt; &amp;amp; &eacute;&#233;</textarea>' +
        '<div class="noindex"><textarea>hidden &amp;</textarea></div><textarea></textarea><p>end</p>',
    );
    assert.equal(r.content, 'A & B x <b> &amp; éé end');
  });
});

describe('extractHtml robots (seed 004 noindex/nofollow, seed 002 Rogue)', () => {
  const meta = (content: string) => `<head><meta name="robots" content="${content}"></head>`;
  const cases: [string, string, Record<string, string> | undefined, boolean, boolean][] = [
    ['no directives', '<p>x</p>', undefined, true, true],
    ['noindex, nofollow', meta('noindex, nofollow'), undefined, false, false],
    ['NOINDEX, follow', meta('NOINDEX, follow'), undefined, false, true],
    ['noindex only still follows', meta('noindex'), undefined, false, true],
    ['nofollow only still indexes', meta('nofollow'), undefined, true, false],
    ['none = noindex + nofollow', meta('None'), undefined, false, false],
    ['index, follow is the default', meta('index, follow'), undefined, true, true],
    ['all is the default', meta('all'), undefined, true, true],
    ['no space after the comma', meta('NoIndex,NoFollow'), undefined, false, false],
    ['space-separated', meta('noindex nofollow'), undefined, false, false],
    ['name compared case-insensitively', '<meta name="ROBOTS" content="nofollow">', undefined, true, false],
    ['two metas combine', meta('noindex') + meta('nofollow'), undefined, false, false],
    ['other robots metas are not ours', '<meta name="googlebot" content="noindex">', undefined, true, true],
    ['X-Robots-Tag noindex', '', { 'X-Robots-Tag': 'noindex' }, false, true],
    ['X-Robots-Tag header name case-insensitive', '', { 'x-robots-tag': 'none' }, false, false],
    ['X-Robots-Tag and meta combine', meta('nofollow'), { 'x-robots-tag': 'noindex' }, false, false],
    ['X-Robots-Tag for another agent', '', { 'x-robots-tag': 'googlebot: noindex, nofollow' }, true, true],
    [
      'X-Robots-Tag with a valued directive',
      '',
      { 'x-robots-tag': 'unavailable_after: 2030-01-01, nofollow' },
      true,
      false,
    ],
    // The fetcher keeps repeated X-Robots-Tag headers apart with a line break: an agent's prefix
    // covers its own header only (Google's reading); joined with ", " both were otherbot's.
    [
      'two X-Robots-Tag headers, the first for another agent',
      '',
      { 'x-robots-tag': 'otherbot: noindex\nnoindex, nofollow' },
      false,
      false,
    ],
    [
      'two X-Robots-Tag headers, the second for another agent',
      '',
      { 'x-robots-tag': 'nofollow\notherbot: noindex' },
      true,
      false,
    ],
    // An RFC 850 date's comma: `25-jun-2010 15` is no agent, and the noindex after it is everyone's.
    [
      'X-Robots-Tag with a dated unavailable_after',
      '',
      { 'x-robots-tag': 'unavailable_after: Friday, 25-Jun-2010 15:00:00 GMT, noindex' },
      false,
      true,
    ],
  ];
  for (const [label, html, headers, index, follow] of cases) {
    it(label, () => {
      const { robots } = extract(html, { headers });
      assert.deepEqual([robots.index, robots.follow], [index, follow]);
      assert.equal(robots.source.length > 0, !(index && follow));
    });
  }

  it("a meta and an X-Robots-Tag naming the crawler's own token apply to it; other crawlers' do not", () => {
    const agent = 'trawl';
    const own = extract('<meta name="Trawl" content="noindex, nofollow">', { agent });
    assert.deepEqual(own.robots, { index: false, follow: false, source: ['meta trawl: noindex, nofollow'] });
    const header = extract('', { agent, headers: { 'X-Robots-Tag': 'Trawl: nofollow' } });
    assert.deepEqual([header.robots.index, header.robots.follow], [true, false]);
    // "googlebot: noindex, trawl: nofollow": a token names the crawler for the directives after it.
    const mixed = extract('', { agent, headers: { 'x-robots-tag': 'googlebot: noindex, trawl: nofollow' } });
    assert.deepEqual([mixed.robots.index, mixed.robots.follow], [true, false]);
    const other = extract('<meta name="googlebot" content="noindex">', {
      agent,
      headers: { 'x-robots-tag': 'bingbot: none' },
    });
    assert.deepEqual([other.robots.index, other.robots.follow], [true, true]);
    // Without a token (or with "robots" as one) only the robots ones count, as before.
    assert.deepEqual(extract('<meta name="trawl" content="noindex">').robots.index, true);
  });
  it('an unavailable_after date passed at the fetch is a noindex (meta or header, any date form); a later one is not', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    const cases: [string, Partial<ExtractHtmlInput>, boolean][] = [
      [meta('unavailable_after: 2020-01-01'), {}, false],
      [meta('noarchive, unavailable_after: Friday, 25-Jun-2010 15:00:00 PST'), {}, false],
      ['', { headers: { 'x-robots-tag': 'unavailable_after: 25 Jun 2010 15:00:00 GMT, nofollow' } }, false],
      [meta('unavailable_after: 2030-01-01T00:00:00Z'), {}, true],
      // Another crawler's, a value with no year, or no fetch time: nothing.
      ['', { headers: { 'x-robots-tag': 'googlebot: unavailable_after: 2020-01-01' } }, true],
      [meta('unavailable_after: 1'), {}, true],
    ];
    for (const [html, more, index] of cases) {
      const { robots } = extract(html, { now, ...more });
      assert.equal(robots.index, index, `${html} ${JSON.stringify(more)}`);
      assert.equal(robots.source.length > 0, !robots.index || !robots.follow);
    }
    assert.equal(extract(meta('unavailable_after: 2020-01-01')).robots.index, true);
    assert.deepEqual(extract(meta('unavailable_after: 2020-01-01'), { now }).robots.source, [
      'meta robots: unavailable_after: 2020-01-01',
    ]);
  });
  it('source names what decided', () => {
    const { robots } = extract(meta('NOINDEX, follow'), { headers: { 'X-Robots-Tag': 'nofollow' } });
    assert.deepEqual(robots.source, ['meta robots: NOINDEX, follow', 'X-Robots-Tag: nofollow']);
  });
  it('rogue ignores the exclusion standard', () => {
    const { robots } = extract(meta('none'), { rogue: true, headers: { 'x-robots-tag': 'none' } });
    assert.deepEqual(robots, { index: true, follow: true, source: ['rogue'] });
  });
  it('honorMetaRobots: false ignores it too', () => {
    const { robots } = extract(meta('noindex'), { options: { ...OPTIONS, honorMetaRobots: false } });
    assert.deepEqual(robots, { index: true, follow: true, source: ['honorMetaRobots: false'] });
  });
});

describe('extractHtml title (seed 004 fallbacks)', () => {
  const cases: [string, string, string, string?][] = [
    ['<title> trimmed and collapsed', '<title>\n  A   &amp; B \n</title>', 'A & B'],
    ['first <title> wins', '<title>one</title><title>two</title>', 'one'],
    ['svg <title> is not the page title', '<svg><title>icon</title></svg><p>x</p>', 'page'],
    ['MathML <title> is not either', '<math><title>M</title></math><p>x</p>', 'page'],
    ['DC.title', '<title> </title><meta name="DC.title" content="Dublin">', 'Dublin'],
    ['DCTERMS.title', '<meta name="DCTERMS.title" content="Terms">', 'Terms'],
    ['og:title (property)', '<meta property="og:title" content="Open  Graph">', 'Open Graph'],
    ['twitter:title', '<meta name="twitter:title" content="Tweet">', 'Tweet'],
    [
      'Dublin Core before Open Graph',
      '<meta property="og:title" content="OG"><meta name="dc.title" content="DC">',
      'DC',
    ],
    ['last path segment, cleaned', '', 'my page name', 'https://example.com/a/my-page_name.html'],
    ['trailing slash', '', 'getting started', 'https://example.com/docs/getting-started/'],
    ['decoded segment', '', 'café menu', 'https://example.com/caf%C3%A9-menu.php?x=1'],
    ['no segment: the host', '', 'www.example.com', 'https://www.example.com/'],
  ];
  for (const [label, html, title, url] of cases) {
    it(label, () => assert.equal(extract(html, url ? { url } : {}).title, title));
  }
});

describe('extractHtml metadata (seed 004 metadata mapping)', () => {
  const html = `<head>
    <meta name="Category" content="News"><meta name="category" content=" Sport ">
    <meta property="og:type" content="article"><meta name="keywords" content="a,b">
    <meta name="dcterms.TITLE" content="T"><meta http-equiv="refresh" content="5"><meta name="empty">
  </head>`;

  it('rawMeta keeps every name/property, lower-cased, accumulated', () => {
    assert.deepEqual(extract(html).rawMeta, {
      category: ['News', 'Sport'],
      'og:type': ['article'],
      keywords: ['a,b'],
      'dcterms.title': ['T'],
    });
  });
  it('mapping matches case-insensitively; several metas on one field accumulate', () => {
    const metadataMapping = {
      category: 'extra_category',
      'OG:TYPE': 'extra_kind',
      keywords: 'extra_category',
      'DCTERMS.Title': 'doc_title',
    };
    const { meta } = extract(html, { options: { ...OPTIONS, metadataMapping } });
    assert.deepEqual(meta, {
      extra_category: ['News', 'Sport', 'a,b'],
      extra_kind: 'article',
      doc_title: 'T',
    });
  });
  it('a meta with both name and property counts once per field', () => {
    const metadataMapping = { 'og:title': 'headline', title: 'headline' };
    const { meta, rawMeta } = extract('<meta name="title" property="og:title" content="X">', {
      options: { ...OPTIONS, metadataMapping },
    });
    assert.deepEqual(meta, { headline: 'X' });
    assert.deepEqual(rawMeta, { title: ['X'], 'og:title': ['X'] });
  });
  it('itemprop is metadata too; an http-equiv is mapped when named; values have their whitespace collapsed', () => {
    const metadataMapping = { datepublished: 'published', 'last-modified': 'stated', generator: 'generator' };
    const { meta, rawMeta } = extract(
      '<meta itemprop="datePublished" content="2026-01-02"><meta http-equiv="Last-Modified" content="Fri, 02 Jan 2026">' +
        '<meta name="generator" content=" Hugo \n  0.1 ">',
      { options: { ...OPTIONS, metadataMapping } },
    );
    assert.deepEqual(meta, { published: '2026-01-02', stated: 'Fri, 02 Jan 2026', generator: 'Hugo 0.1' });
    assert.deepEqual(rawMeta, { datepublished: ['2026-01-02'], generator: ['Hugo 0.1'] });
  });
  it('a hostile meta name is plain data', () => {
    assert.deepEqual(
      extract('<meta name="__proto__" content="x">').rawMeta,
      JSON.parse('{"__proto__":["x"]}'),
    );
  });
});

describe('extractHtml description and language', () => {
  it('description: the meta description, else Open Graph, Twitter, Dublin Core; whitespace collapsed', () => {
    const og = '<meta property="og:description" content="OG  summary">';
    assert.equal(
      extract(`<meta name="Description" content=" The\n summary "> ${og}`).description,
      'The summary',
    );
    assert.equal(extract(`<meta name="description" content="  "> ${og}`).description, 'OG summary');
    assert.equal(extract('<meta name="twitter:description" content="T">').description, 'T');
    assert.equal(extract('<p>no summary</p>').description, null);
  });
  it('language: <html lang>, else meta content-language, else the header; as a BCP 47 tag in its usual case', () => {
    assert.equal(extract('<html lang="EN-us"><body>x</body></html>').language, 'en-US');
    assert.equal(extract('<html xml:lang="zh-hant-tw"><body>x</body></html>').language, 'zh-Hant-TW');
    const meta = '<meta http-equiv="Content-Language" content="fr-CA, en">';
    assert.equal(extract(`<html><head>${meta}</head></html>`).language, 'fr-CA');
    assert.equal(extract('<p>x</p>', { headers: { 'content-language': 'de' } }).language, 'de');
    // The page's own declaration wins over the header's.
    assert.equal(
      extract('<html lang="it"><p>x</p>', { headers: { 'content-language': 'de' } }).language,
      'it',
    );
    // Malformed or empty: none, and the next source is asked.
    assert.equal(
      extract('<html lang="not a language"><p>x</p>', { headers: { 'content-language': 'nl' } }).language,
      'nl',
    );
    assert.equal(extract('<html lang=""><p>x</p>').language, null);
    // An empty lang is "unknown": the meta and the header are not asked.
    assert.equal(
      extract(`<html lang=""><head>${meta}</head><p>x</p>`, { headers: { 'content-language': 'nl' } })
        .language,
      null,
    );
    // A language that is no ISO 639 code is not a tag; extension subtags keep their lower case.
    assert.equal(
      extract('<html lang="english"><p>x</p>', { headers: { 'content-language': 'fr' } }).language,
      'fr',
    );
    assert.equal(extract('<html lang="de-de-u-CO-phonebk"><p>x</p>').language, 'de-DE-u-co-phonebk');
    assert.equal(extract(`<html lang="${'a'.repeat(100)}"><p>x</p>`).language, null);
  });
});

describe('extractHtml canonical', () => {
  const cases: [string, string, string | null][] = [
    ['relative, resolved absolute', '<link rel="canonical" href="/c?x=1">', 'https://www.example.com/c?x=1'],
    [
      'rel compared case-insensitively',
      '<link rel="Canonical" href="https://other.example/">',
      'https://other.example/',
    ],
    [
      'against <base href>',
      '<base href="https://b.example/x/"><link rel="canonical" href="c">',
      'https://b.example/x/c',
    ],
    [
      'first one wins',
      '<link rel="canonical" href="/one"><link rel="canonical" href="/two">',
      'https://www.example.com/one',
    ],
    ['absent', '<link rel="alternate" href="/alt">', null],
  ];
  for (const [label, html, canonical] of cases) {
    it(label, () => assert.equal(extract(html).canonical, canonical));
  }
  it("a Link header names one when the page does not (RFC 8288); the page's own wins", () => {
    const link = { Link: '</print.html>; rel="alternate", </c/canonical?x=1>; rel="canonical"' };
    assert.equal(extract('<p>x</p>', { headers: link }).canonical, 'https://www.example.com/c/canonical?x=1');
    assert.equal(
      extract('<link rel="canonical" href="/own">', { headers: link }).canonical,
      'https://www.example.com/own',
    );
    const unquoted = { link: '<https://other.example/doc>; REL=Canonical' };
    assert.equal(extract('', { headers: unquoted }).canonical, 'https://other.example/doc');
    assert.equal(extract('', { headers: { Link: '</a>; rel="next"' } }).canonical, null);
  });
});

describe('extractHtml language versions', () => {
  it('<link rel=alternate hreflang> names a link; other alternates (a feed, a print view) and a canonical do not', () => {
    const r = extract(
      '<link rel="canonical" href="/en/"><link rel="alternate" hreflang="de" href="/de/">' +
        '<link rel="Alternate" hreflang="x-default" href="https://www.example.com/">' +
        '<link rel="alternate" type="application/rss+xml" href="/feed.xml"><link rel="alternate" media="print" href="/print">' +
        '<link rel="stylesheet" hreflang="de" href="/s.css">',
    );
    assert.deepEqual(r.links, ['https://www.example.com/de/', 'https://www.example.com/']);
    assert.equal(r.canonical, 'https://www.example.com/en/');
  });
});

describe('extractHtml on a full page (fixture)', () => {
  const html = readFileSync(new URL('../../fixtures/html/seed-004-page.html', import.meta.url), 'utf8');
  const result = extractHtml({ url: 'https://www.example.com/news/example.html', html, options: OPTIONS });

  it('finds every link once, none from script', () => {
    assert.deepEqual(result.links, [
      'https://www.example.com/from-head',
      'https://www.example.com/in-header',
      'https://www.example.com/in-noindex',
      'https://www.example.com/news/frame.html',
      'https://www.example.com/embedded',
      'https://www.example.com/imprint',
    ]);
  });
  it('leaves removed elements out of the content', () => {
    assert.equal(
      result.content,
      'links may appear in the head (seed 004) Headline First paragraph. Second paragraph with boldtext. Home again Mail After footer.',
    );
  });
  it('reads title, canonical and metadata', () => {
    assert.equal(result.title, 'Example title');
    assert.equal(result.canonical, 'https://www.example.com/news/example');
    assert.deepEqual(result.rawMeta.category, ['News', 'Sport']);
    assert.deepEqual(result.robots, { index: true, follow: true, source: [] });
  });
});

describe("extractHtml: a link's query in the page's encoding (URL standard, as browsers send it)", () => {
  const links = (html: string, charset: string | null) => extract(html, { charset }).links;
  it('windows-1252: é in a query is %E9, in a path UTF-8', () => {
    assert.deepEqual(links('<a href="/s?q=café">q</a><a href="/café">p</a>', 'windows-1252'), [
      'https://www.example.com/s?q=caf%E9',
      'https://www.example.com/caf%C3%A9',
    ]);
  });
  it('UTF-8, UTF-16 and no charset: the URL parser’s UTF-8', () => {
    for (const charset of ['utf-8', 'UTF-16LE', null, 'x-no-such-charset'])
      assert.deepEqual(
        links('<a href="/s?q=café">q</a>', charset),
        ['https://www.example.com/s?q=caf%C3%A9'],
        String(charset),
      );
  });
  it('a character the encoding lacks is sent as its numeric reference; a ? in the fragment is no query', () => {
    assert.deepEqual(links('<a href="/s?q=日">q</a><a href="/f#a?é">f</a>', 'windows-1251'), [
      'https://www.example.com/s?q=%26%2326085%3B',
      'https://www.example.com/f',
    ]);
  });
  it('canonical, <base href> and meta refresh targets too', () => {
    const ex = extract(
      '<head><base href="/b/?x=ü"><link rel="canonical" href="/c?q=ü"><meta http-equiv="refresh" content="0; url=/r?q=ü"></head><a href="l">l</a>',
      { charset: 'iso-8859-1' },
    );
    assert.equal(ex.canonical, 'https://www.example.com/c?q=%FC');
    assert.equal(ex.refresh?.target, 'https://www.example.com/r?q=%FC');
    assert.deepEqual(ex.links, ['https://www.example.com/r?q=%FC', 'https://www.example.com/b/l']);
  });
});
