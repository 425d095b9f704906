// A clone of the repository must explain itself: no tracked file may point at documents or
// folders that only existed beside the repository where it was written, and every relative link
// in the README and docs/ must lead to a file (and heading) that exists. What those outside
// documents said lives in docs/specification.md and docs/design-facts.md.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..', '..');
// Spelled in pieces so this file does not flag itself.
const OUTSIDE_DOCS = ['FACTS', 'DESIGN-NOTES', 'STYLE', 'CONTRACT'].map((name) => `${name}.md`);
const OUTSIDE_ROOT = ['', 'work', ''].join('/');
const SKIPPED = [/(^|\/)node_modules\//, /(^|\/)package-lock\.json$/];
/** Markdown files whose relative links are checked. */
const LINKED_DOCS = /^(README\.md|docs\/[^/]+\.md|bench\/README\.md)$/;

/** What in `text` (the content of repository file `file`) refers to something outside the repository. */
function outsideReferences(file: string, text: string): string[] {
  const found: string[] = [];
  for (const name of OUTSIDE_DOCS) if (text.includes(name)) found.push(name);
  if (text.includes(OUTSIDE_ROOT)) found.push(OUTSIDE_ROOT);
  // `../shared/` is fine when it is the repository's own shared/ (imports); not when it climbs out.
  for (const m of text.matchAll(/((?:\.\.\/)+)shared\//g)) {
    const target = resolve(ROOT, dirname(file), m[1] as string, 'shared');
    if (relative(ROOT, target).startsWith('..')) found.push(`${m[0]} (outside the repository)`);
  }
  return found;
}

/** GitHub's heading anchors: lower-cased, punctuation dropped, spaces to dashes, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown without fenced code blocks, where `#` starts no heading and brackets are no links. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

/** Markdown without fenced code blocks and inline code. */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** Relative links of a markdown file (`file` relative to ROOT) that lead nowhere. */
function brokenLinks(file: string, markdown: string): string[] {
  const broken: string[] = [];
  for (const m of withoutCode(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const link = m[1] as string;
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
    const [path = '', anchor] = link.split('#');
    const target = resolve(ROOT, dirname(file), decodeURI(path));
    if (path !== '' && !existsSync(target)) {
      broken.push(`${link} (no such file)`);
      continue;
    }
    if (!anchor || !(path === '' || target.endsWith('.md'))) continue;
    const headings = anchorsOf(path === '' ? markdown : readFileSync(target, 'utf8'));
    if (!headings.has(anchor)) broken.push(`${link} (no such heading)`);
  }
  return broken;
}

/** Tracked text files, relative to ROOT. */
function trackedTextFiles(): { file: string; text: string }[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  const out: { file: string; text: string }[] = [];
  for (const file of files) {
    if (file === '' || SKIPPED.some((re) => re.test(file)) || !existsSync(join(ROOT, file))) continue;
    const bytes = readFileSync(join(ROOT, file));
    if (bytes.subarray(0, 8000).includes(0)) continue; // binary (archives, images, PDFs)
    out.push({ file, text: bytes.toString('utf8') });
  }
  return out;
}

describe('the repository is self-contained', () => {
  const files = trackedTextFiles();

  it('reads the tracked text files', () => {
    assert.ok(files.length > 100, `only ${files.length} tracked text files found`);
    assert.ok(files.some((f) => f.file === 'README.md'));
  });

  it('no tracked file refers to documents or folders outside the repository', () => {
    const offenders = files.flatMap(({ file, text }) =>
      outsideReferences(file, text).map((r) => `${file}: ${r}`),
    );
    assert.deepEqual(offenders, [], 'cite docs/specification.md or docs/design-facts.md instead');
  });

  it('every relative link in README.md and docs/*.md leads to an existing file and heading', () => {
    const checked = files.filter(({ file }) => LINKED_DOCS.test(file));
    assert.ok(checked.some(({ file }) => file.startsWith('docs/')));
    const broken = checked.flatMap(({ file, text }) => brokenLinks(file, text).map((l) => `${file}: ${l}`));
    assert.deepEqual(broken, []);
  });
});

describe('the self-containment checks catch what they should', () => {
  it('flags each outside document, the outside root and a ../shared/ that climbs out', () => {
    for (const name of OUTSIDE_DOCS) assert.deepEqual(outsideReferences('a.ts', `see ${name}`), [name]);
    assert.deepEqual(outsideReferences('a.ts', `read ${OUTSIDE_ROOT}shared/x`), [OUTSIDE_ROOT]);
    assert.equal(outsideReferences('README.md', 'serves ../shared/corpora/site').length, 1);
    assert.equal(outsideReferences('bench/sites.ts', "join('../../shared/corpora')").length, 1);
  });

  it('lets the repository own shared/ be imported', () => {
    assert.deepEqual(outsideReferences('test/unit/x.test.ts', "from '../../shared/config.ts'"), []);
    assert.deepEqual(outsideReferences('cli/main.ts', "from '../shared/errors.ts'"), []);
    assert.deepEqual(outsideReferences('docs/x.md', 'STYLE and FACTS without .md, shared/x'), []);
  });

  it('flags a missing file and a missing heading, not web links or code', () => {
    const md = [
      '[ok](docs/rules.md) [gone](docs/nowhere.md) [web](https://example.com/x.md)',
      '[anchor](docs/documents.md#url-states) [bad anchor](docs/documents.md#no-such-heading)',
      '`[code](nowhere.md)` [self](#a-heading) [self, wrong](#b-heading)',
      '```',
      '[fenced](nowhere.md)',
      '```',
      '## A heading',
    ].join('\n');
    assert.deepEqual(brokenLinks('README.md', md), [
      'docs/nowhere.md (no such file)',
      'docs/documents.md#no-such-heading (no such heading)',
      '#b-heading (no such heading)',
    ]);
  });

  it('computes GitHub heading anchors', () => {
    const anchors = anchorsOf(
      '# Crawl rules\n## seed 000 — domain names\n## `trawl docs`, again\n## Crawl rules',
    );
    assert.deepEqual(
      [...anchors],
      ['crawl-rules', 'seed-000--domain-names', 'trawl-docs-again', 'crawl-rules-1'],
    );
  });
});
