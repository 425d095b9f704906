import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DemoSiteCounts, generateDemoSite } from '../../demo/generate-site.ts';

const ORIGIN = 'http://demo.test';
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'trawl-demo-site-'));
  dirs.push(d);
  return d;
};

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix))
    .sort()
    .flatMap((name) => {
      const rel = path.posix.join(prefix, name);
      return statSync(path.join(dir, rel)).isDirectory() ? listFiles(dir, rel) : [rel];
    });
}

const fileOf = (dir: string, pathname: string) =>
  path.join(dir, pathname.endsWith('/') ? `${pathname}index.html` : pathname);
const hrefs = (html: string) => [...html.matchAll(/<a\s[^>]*href="([^"]+)"/g)].map((m) => m[1]!);
const robotsOf = (html: string) => /<meta name="robots" content="([^"]+)">/.exec(html)?.[1] ?? '';

interface Walk {
  visited: Set<string>;
  broken: Set<string>;
  disallowed: Set<string>;
  variants: Set<string>;
}

// Breadth-first walk over the generated links. `crawler` mode behaves like a polite crawler:
// no /private/ (robots.txt), no links out of meta-nofollow pages, ignored extensions skipped.
function walk(dir: string, crawler: boolean): Walk {
  const w: Walk = { visited: new Set(['/']), broken: new Set(), disallowed: new Set(), variants: new Set() };
  const queue = ['/'];
  for (let page = queue.shift(); page !== undefined; page = queue.shift()) {
    const html = readFileSync(fileOf(dir, page), 'utf8');
    if (crawler && robotsOf(html).includes('nofollow')) continue;
    for (const href of hrefs(html)) {
      const url = new URL(href, ORIGIN + page);
      if (/\.(png|css)$/.test(url.pathname)) continue;
      if (crawler && url.pathname.startsWith('/private/')) {
        w.disallowed.add(url.pathname);
        continue;
      }
      if (url.search) w.variants.add(url.pathname + url.search);
      if (!existsSync(fileOf(dir, url.pathname))) w.broken.add(url.pathname);
      else if (!w.visited.has(url.pathname)) {
        w.visited.add(url.pathname);
        queue.push(url.pathname);
      }
    }
  }
  return w;
}

describe('generateDemoSite', () => {
  let dir = '';
  let counts: DemoSiteCounts;
  before(() => {
    dir = tempDir();
    counts = generateDemoSite(dir);
  });
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('writes the default 300 pages and reports consistent counts', () => {
    const html = listFiles(dir).filter((f) => f.endsWith('.html'));
    assert.equal(counts.pages, 300);
    assert.equal(html.length, counts.pages);
    assert.equal(counts.brokenLinks, 10);
    assert.equal(counts.disallowed, html.filter((f) => f.startsWith('private/')).length);
    const noindex = html.filter((f) => robotsOf(readFileSync(path.join(dir, f), 'utf8')) === 'noindex');
    assert.equal(noindex.length, 1);
    assert.equal(counts.expectedIndexed, counts.pages - counts.disallowed - noindex.length);
  });

  it('is deterministic for a seed and varies with it', () => {
    const [a, b, c] = [tempDir(), tempDir(), tempDir()];
    assert.deepEqual(
      generateDemoSite(a, { pages: 60, seed: 7 }),
      generateDemoSite(b, { pages: 60, seed: 7 }),
    );
    generateDemoSite(c, { pages: 60, seed: 8 });
    assert.deepEqual(listFiles(a), listFiles(b));
    for (const f of listFiles(a))
      assert.deepEqual(readFileSync(path.join(a, f)), readFileSync(path.join(b, f)), f);
    assert.notEqual(
      readFileSync(path.join(a, 'index.html'), 'utf8'),
      readFileSync(path.join(c, 'index.html'), 'utf8'),
    );
  });

  it('makes every page reachable from / by links', () => {
    const w = walk(dir, false);
    const html = listFiles(dir).filter((f) => f.endsWith('.html'));
    const asUrlPath = (f: string) => `/${f}`.replace(/(^|\/)index\.html$/, '$1');
    assert.deepEqual([...w.visited].sort(), html.map(asUrlPath).sort());
  });

  it('matches what a robots-respecting crawler finds', () => {
    const w = walk(dir, true);
    const indexable = [...w.visited].filter(
      (p) => robotsOf(readFileSync(fileOf(dir, p), 'utf8')) !== 'noindex',
    );
    assert.equal(indexable.length, counts.expectedIndexed);
    assert.equal(w.broken.size, counts.brokenLinks);
    assert.equal(w.disallowed.size, counts.disallowed);
    assert.equal(w.variants.size, counts.queryVariants);
    assert.ok([...w.variants].every((v) => v.endsWith('?utm_source=x')));
  });

  it('writes robots.txt, a sitemap with lastmod, a tiny png and a stylesheet', () => {
    const robots = readFileSync(path.join(dir, 'robots.txt'), 'utf8');
    assert.match(robots, /^User-agent: \*$/m);
    assert.match(robots, /^Disallow: \/private\/$/m);
    assert.match(robots, /^Sitemap: \/sitemap\.xml$/m);
    const sitemap = readFileSync(path.join(dir, 'sitemap.xml'), 'utf8');
    const locs = [...sitemap.matchAll(/<loc>([^<]+)<\/loc><lastmod>(\d{4}-\d\d-\d\d)<\/lastmod>/g)];
    assert.equal(locs.length, counts.expectedIndexed);
    assert.ok(locs.every((m) => !m[1]!.startsWith('/private/') && existsSync(fileOf(dir, m[1]!))));
    assert.deepEqual(
      [...readFileSync(path.join(dir, 'images/diagram.png')).subarray(1, 4)],
      [0x50, 0x4e, 0x47],
    );
    assert.ok(existsSync(path.join(dir, 'styles/site.css')));
  });

  it('gives pages a title, header, footer, description, links and some categories', () => {
    const pages = listFiles(dir).filter((f) => f.endsWith('.html'));
    let categories = 0;
    for (const f of pages) {
      const html = readFileSync(path.join(dir, f), 'utf8');
      assert.match(html, /<title>[^<]+<\/title>/, f);
      assert.match(html, /<header><nav><a href="\/">/, f);
      assert.match(html, /<footer><nav>/, f);
      assert.match(html, /<meta name="description" content="[^"]+">/, f);
      const main = html.slice(html.indexOf('<main>'), html.indexOf('</main>'));
      assert.ok(hrefs(main).length >= 5, `${f} has at least 5 links`);
      if (html.includes('<meta name="category"')) categories++;
    }
    assert.ok(categories > 50 && categories < pages.length, `${categories} pages with a category`);
    assert.equal(
      pages.filter((f) => robotsOf(readFileSync(path.join(dir, f), 'utf8')) === 'nofollow').length,
      1,
    );
  });

  it('writes absolute sitemap URLs when given a base URL', () => {
    const d = tempDir();
    generateDemoSite(d, { pages: 20, baseUrl: 'http://127.0.0.1:9999/' });
    assert.match(
      readFileSync(path.join(d, 'robots.txt'), 'utf8'),
      /^Sitemap: http:\/\/127\.0\.0\.1:9999\/sitemap\.xml$/m,
    );
    assert.match(
      readFileSync(path.join(d, 'sitemap.xml'), 'utf8'),
      /<loc>http:\/\/127\.0\.0\.1:9999\/<\/loc>/,
    );
  });

  it('keeps every page reachable and the counts right across seeds and sizes', () => {
    for (const [pages, seed] of [
      [12, 1],
      [12, 2],
      [25, 3],
      [80, 4],
      [150, 5],
    ] as const) {
      const d = tempDir();
      const c = generateDemoSite(d, { pages, seed });
      assert.equal(walk(d, false).visited.size, pages, `pages=${pages} seed=${seed}`);
      const w = walk(d, true);
      assert.equal(w.broken.size, c.brokenLinks);
      assert.equal(w.disallowed.size, c.disallowed);
      assert.equal(w.variants.size, c.queryVariants);
      assert.equal(w.visited.size, c.expectedIndexed + 1, 'the noindex page is visited, not indexed');
    }
  });

  it('honours linksPerPage and refuses too few pages', () => {
    const d = tempDir();
    const small = generateDemoSite(d, { pages: 40, linksPerPage: 3, seed: 3 });
    assert.equal(small.pages, 40);
    assert.equal(walk(d, false).visited.size, 40);
    assert.throws(() => generateDemoSite(tempDir(), { pages: 11 }), RangeError);
  });

  it('runs from the command line and prints the counts as JSON', () => {
    const d = tempDir();
    const script = path.resolve(import.meta.dirname, '../../demo/generate-site.ts');
    const cwd = path.resolve(import.meta.dirname, '../..');
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, d, '40'], { cwd, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as DemoSiteCounts;
    assert.equal(printed.pages, 40);
    assert.deepEqual(printed, generateDemoSite(tempDir(), { pages: 40 }));
  });
});
