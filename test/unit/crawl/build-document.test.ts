import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import {
  applyMapping,
  type BuildDocumentInput,
  buildDocument,
} from '../../../shared/crawl/extract/build-document.ts';
import type { HtmlExtraction } from '../../../shared/crawl/extract/extract-html.ts';

const extraction: HtmlExtraction = {
  links: ['https://example.com/b'],
  nofollowLinks: 0,
  nofollowSample: [],
  canonical: 'https://example.com/a',
  refresh: null,
  robots: { index: true, follow: true, source: [] },
  title: 'Page A',
  content: 'Hello world',
  meta: { category: 'News', tags: ['x', 'y'] },
  rawMeta: { category: ['News'] },
  description: 'A page about A',
  language: 'en-GB',
};

function input(more: Partial<BuildDocumentInput> = {}): BuildDocumentInput {
  return {
    url: 'https://example.com/a',
    extraction,
    headers: {
      'Content-Type': 'text/html; charset=ISO-8859-1',
      'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT',
    },
    size: 1234,
    depth: 2,
    source: 'docs',
    addMeta: [],
    indexedAt: '2026-01-02T03:04:05.000Z',
    hash: 'sha256:abc',
    ...more,
  };
}

describe('buildDocument', () => {
  it('fills every documented field (docs/documents.md)', () => {
    assert.deepEqual(buildDocument(input()), {
      url: 'https://example.com/a',
      title: 'Page A',
      content: 'Hello world',
      contentType: 'text/html; charset=ISO-8859-1',
      mimeType: 'text/html',
      charset: 'iso-8859-1',
      lastModified: '2025-07-01T10:00:00.000Z',
      size: 1234,
      hash: 'sha256:abc',
      depth: 2,
      source: 'docs',
      meta: { category: 'News', tags: ['x', 'y'] },
      indexedAt: '2026-01-02T03:04:05.000Z',
      description: 'A page about A',
      language: 'en-GB',
      canonical: 'https://example.com/a',
    });
  });
  it('a document without an extraction takes its language from Content-Language', () => {
    const pdf = buildDocument(
      input({
        extraction: null,
        text: 'x',
        headers: { 'Content-Type': 'application/pdf', 'Content-Language': 'de-de, en' },
      }),
    );
    assert.equal(pdf.language, 'de-DE');
    assert.equal(pdf.description, null);
    assert.equal(buildDocument(input({ extraction: null, text: 'x', headers: {} })).language, null);
  });
  it('addMeta values accumulate into arrays (seed 004)', () => {
    const addMeta = [
      { name: 'category', value: 'Sport' },
      { name: 'tags', value: 'z' },
      { name: 'site', value: 'docs' },
    ];
    assert.deepEqual(buildDocument(input({ addMeta })).meta, {
      category: ['News', 'Sport'],
      tags: ['x', 'y', 'z'],
      site: 'docs',
    });
    assert.deepEqual(extraction.meta, { category: 'News', tags: ['x', 'y'] }, 'extraction left untouched');
  });
  it('non-HTML documents: text and title given, no headers', () => {
    const doc = buildDocument(
      input({
        extraction: null,
        text: 'pdf text',
        title: 'Report',
        headers: {},
        compoundPath: ['https://example.com/a.zip'],
      }),
    );
    assert.deepEqual(
      [
        doc.title,
        doc.content,
        doc.contentType,
        doc.mimeType,
        doc.charset,
        doc.lastModified,
        doc.meta,
        doc.compoundPath,
        'canonical' in doc,
      ],
      ['Report', 'pdf text', null, null, null, null, {}, ['https://example.com/a.zip'], false],
    );
  });
  it('text written decomposed (NFD: a macOS file name, some editors) is indexed composed (NFC)', () => {
    const nfd = 'Cafe\u0301 Mu\u0308ller'; // "Café Müller" as e + U+0301, u + U+0308
    const doc = buildDocument(
      input({
        extraction: {
          ...extraction,
          title: nfd,
          content: `${nfd} text`,
          description: nfd,
          meta: { by: nfd },
        },
      }),
    );
    const composed = 'Caf\u00e9 M\u00fcller';
    assert.deepEqual(
      [doc.title, doc.content, doc.description, doc.meta.by],
      [composed, `${composed} text`, composed, composed],
    );
    assert.equal(buildDocument(input({ extraction: null, text: nfd, title: nfd })).title, composed);
  });

  it('an unparsable Last-Modified becomes null', () => {
    assert.equal(buildDocument(input({ headers: { 'Last-Modified': 'yesterday-ish' } })).lastModified, null);
  });

  it('a Last-Modified more than a day after the crawl read the page is a wrong clock: null', () => {
    // indexedAt is 2026-01-02T03:04:05Z
    const at = (date: string) => buildDocument(input({ headers: { 'Last-Modified': date } })).lastModified;
    assert.equal(at('Tue, 01 Jan 2999 00:00:00 GMT'), null);
    assert.equal(at('Sat, 03 Jan 2026 04:00:00 GMT'), null);
    // A server a few hours ahead is kept (clock skew within a day).
    assert.equal(at('Fri, 02 Jan 2026 20:00:00 GMT'), '2026-01-02T20:00:00.000Z');
  });
});

describe('applyMapping (SMILA job mapping, config index.mapping)', () => {
  const doc = buildDocument(input());
  it('renames mapped fields and keeps the others', () => {
    const out = applyMapping(doc, { url: 'Path', content: 'Content' });
    assert.equal(out.Path, 'https://example.com/a');
    assert.equal(out.Content, 'Hello world');
    assert.equal(out.title, 'Page A');
    assert.ok(!('url' in out) && !('content' in out));
  });
  it('an empty mapping is the document itself', () => {
    assert.deepEqual(applyMapping(doc, {}), { ...doc });
  });
  it('"meta.<name>" lifts a metadata value to a field', () => {
    const out = applyMapping(doc, { 'meta.category': 'extra_category' });
    assert.equal(out.extra_category, 'News');
    assert.deepEqual(out.meta, { tags: ['x', 'y'] });
    assert.deepEqual(doc.meta, { category: 'News', tags: ['x', 'y'] }, 'document left untouched');
  });
  it('the fields added later: renamable, and a metadata value lifted to one of their names takes its place', () => {
    const config = (mapping: Record<string, string>) =>
      parseConfig({ name: 'm', startUrls: ['https://example.com/'], index: { mapping } }).index.mapping;
    assert.equal(applyMapping(doc, config({ description: 'summary' })).summary, 'A page about A');
    // A mapping written before the field existed still validates, and means what it meant.
    const lifted = applyMapping(doc, config({ 'meta.category': 'description' }));
    assert.equal(lifted.description, 'News');
  });
});
