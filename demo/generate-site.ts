// The bundled demo website: seeded, interlinked HTML pages with the traps a crawler must handle
// (404s, robots.txt, meta robots, query noise, fragments, ignored extensions, a sitemap).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Options of {@link generateDemoSite}. */
export interface DemoSiteOptions {
  /** HTML pages to write (at least 12) @default 300 */
  pages?: number;
  /** PRNG seed @default 1 */
  seed?: number;
  /** links to other pages per page besides the spanning-tree ones; unset: 5–15 at random */
  linksPerPage?: number;
  /** absolute origin for sitemap.xml `<loc>` and the robots.txt `Sitemap:` line; unset: root-relative */
  baseUrl?: string;
}

/** What a crawl of the site from `/` should find. */
export interface DemoSiteCounts {
  /** HTML pages written, all reachable from `/` by links */
  pages: number;
  /** distinct linked URLs that answer 404 */
  brokenLinks: number;
  /** pages under /private/ (Disallow in robots.txt), all linked from crawlable pages */
  disallowed: number;
  /** pages reachable, not disallowed, not noindex (distinct paths, query noise aside) */
  expectedIndexed: number;
  /** distinct `?utm_source=x` URLs of indexable pages that a crawler following links meets */
  queryVariants: number;
}

interface Page {
  path: string;
  title: string;
  section: string;
  robots?: 'noindex' | 'nofollow';
  category?: string;
  links: string[];
  lastmod: string;
}

type Rng = () => number;

const SECTIONS = ['/guide/', '/api/', '/blog/2023/', '/blog/2024/'];
const SECTION_WEIGHTS = [...SECTIONS, '/guide/', '/api/'];
/** links to files of extensions a crawler ignores by default */
const IGNORED_LINKS = [
  '<a href="/images/diagram.png">Diagram</a>',
  '<a href="/styles/site.css">Stylesheet</a>',
];
const FIXED = '/ /about.html /contact.html /guide/ /api/ /blog/ /blog/2023/ /blog/2024/ /private/'.split(' ');
const WORDS = (
  'crawler frontier queue lambda worker index search document page link robots sitemap scope rule ' +
  'domain host schedule refresh fetch extract parse normalize filter table bucket message batch retry ' +
  'timeout header footer metadata content title anchor fragment query redirect status delta hash ' +
  'priority depth budget policy storage archive stream event partition shard cluster region latency'
).split(' ');
const FILLER = 'the a of to and in for with on by from that this each every when then also only'.split(' ');
const CATEGORIES: Record<string, string[]> = {
  '/guide/': ['tutorial', 'how-to'],
  '/api/': ['reference'],
  '/blog/2023/': ['news', 'engineering'],
  '/blog/2024/': ['news', 'engineering'],
};
const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const BROKEN_LINKS = 10;

/** mulberry32: a small seeded PRNG (no Math.random: the site must be reproducible). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(rnd: Rng, list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
const titleCase = (s: string) =>
  s.replace(/(^|-)(\w)/g, (_m, dash: string, c: string) => (dash ? ' ' : '') + c.toUpperCase());
const isPrivate = (p: Page) => p.section === '/private/';
/** a crawler follows this page's links (robots.txt allows it, no meta nofollow) */
const followable = (p: Page) => !isPrivate(p) && p.robots !== 'nofollow';
const indexable = (p: Page) => !isPrivate(p) && p.robots !== 'noindex';

function newPage(rnd: Rng, pagePath: string, title: string, section: string): Page {
  const year = section.startsWith('/blog/20') ? Number(section.slice(6, 10)) : 2024;
  const day = new Date(Date.UTC(year, 0, 1 + Math.floor(rnd() * 365)));
  const cats = CATEGORIES[section];
  const category = cats && rnd() < 0.6 ? pick(rnd, cats) : undefined;
  return { path: pagePath, title, section, category, links: [], lastmod: day.toISOString().slice(0, 10) };
}

function fixedPages(rnd: Rng): Page[] {
  const names: Record<string, string> = {
    '/': 'Trawl Demo Site',
    '/api/': 'API',
    '/private/': 'Private Area',
  };
  return FIXED.map((p) => {
    const name = names[p] ?? titleCase(p.replace('.html', '').split('/').filter(Boolean).join('-'));
    const section = p.startsWith('/private/') ? '/private/' : (SECTIONS.find((s) => p.startsWith(s)) ?? '/');
    return newPage(rnd, p, name, section);
  });
}

function contentPages(rnd: Rng, count: number, privateCount: number): Page[] {
  const used = new Set<string>();
  const out: Page[] = [];
  for (let i = 0; i < count + privateCount; i++) {
    const section = i >= count ? '/private/' : pick(rnd, SECTION_WEIGHTS);
    let slug = `${pick(rnd, WORDS)}-${pick(rnd, WORDS)}`;
    if (used.has(section + slug)) slug += `-${i}`;
    used.add(section + slug);
    out.push(newPage(rnd, `${section}${slug}.html`, titleCase(slug), section));
  }
  return out;
}

// Spanning tree first (a page's parent is always a page a crawler follows, so everything but the
// tree's leaves under /private/ is reachable by a robots-respecting crawler), then random extras.
function linkPages(rnd: Rng, pages: Page[], linksPerPage: number | undefined): void {
  const byPath = new Map(pages.map((p) => [p.path, p]));
  const placed: Page[] = [];
  for (const page of pages) {
    if (page.path !== '/') parentOf(rnd, page, placed, byPath).links.push(page.path);
    placed.push(page);
  }
  for (const page of pages) {
    const want = linksPerPage ?? 5 + Math.floor(rnd() * 11);
    for (let tries = 0; page.links.length < want && tries < want * 4; tries++) {
      const target = pick(rnd, pages).path;
      if (target !== page.path && !page.links.includes(target)) page.links.push(target);
    }
  }
}

function parentOf(rnd: Rng, page: Page, placed: Page[], byPath: Map<string, Page>): Page {
  const fixed: Record<string, string> = { '/blog/2023/': '/blog/', '/blog/2024/': '/blog/' };
  if (FIXED.includes(page.path) && page.path !== '/private/') return byPath.get(fixed[page.path] ?? '/')!;
  const crawlable = placed.filter(followable);
  const notRoot = crawlable.filter((p) => p.path !== '/');
  if (isPrivate(page)) return pick(rnd, notRoot);
  const sameSection = crawlable.filter((p) => p.section === page.section && p.path !== page.section);
  const index = byPath.get(page.section)!;
  return sameSection.length === 0 || rnd() < 0.4 ? index : pick(rnd, sameSection);
}

function markSpecial(rnd: Rng, content: Page[]): void {
  const candidates = content.filter((p) => !isPrivate(p));
  const noindex = pick(rnd, candidates);
  noindex.robots = 'noindex';
  noindex.title = `Draft: ${noindex.title}`;
  const others = candidates.filter((p) => p !== noindex);
  pick(rnd, others).robots = 'nofollow';
}

function relativeHref(from: string, to: string): string {
  const fromDir = from.endsWith('/') ? from : path.posix.dirname(from);
  const rel = path.posix.relative(fromDir, to.endsWith('/') ? to.slice(0, -1) || '/' : to);
  if (!to.endsWith('/')) return rel;
  return rel === '' ? './' : `${rel}/`;
}

function sentence(rnd: Rng): string {
  const words = Array.from({ length: 6 + Math.floor(rnd() * 9) }, () =>
    pick(rnd, rnd() < 0.35 ? FILLER : WORDS),
  );
  return `${words.join(' ').replace(/^\w/, (c) => c.toUpperCase())}.`;
}

const paragraph = (rnd: Rng) =>
  Array.from({ length: 3 + Math.floor(rnd() * 3) }, () => sentence(rnd)).join(' ');

interface RenderContext {
  rnd: Rng;
  byPath: Map<string, Page>;
  /** pages some links to which carry `?utm_source=x` */
  noiseTargets: Set<string>;
  /** `path?utm_source=x` URLs linked from pages, with whether a crawler would meet them */
  noise: Map<string, boolean>;
}

function anchor(ctx: RenderContext, from: Page, to: string): string {
  const { rnd } = ctx;
  const target = ctx.byPath.get(to);
  let href = rnd() < 0.5 ? to : relativeHref(from.path, to);
  if (ctx.noiseTargets.has(to) && rnd() < 0.3) {
    href += '?utm_source=x';
    const seen = ctx.noise.get(to) ?? false;
    ctx.noise.set(to, seen || followable(from));
  }
  if (target && to.endsWith('.html') && rnd() < 0.1) href += `#section-${1 + Math.floor(rnd() * 2)}`;
  return `<a href="${href}">${target?.title ?? 'Archived page'}</a>`;
}

function renderPage(ctx: RenderContext, page: Page, broken: string[]): string {
  const { rnd } = ctx;
  const meta = [
    `<meta name="description" content="${page.title}: ${sentence(rnd).slice(0, -1).toLowerCase()}">`,
    page.category ? `<meta name="category" content="${page.category}">` : '',
    page.robots ? `<meta name="robots" content="${page.robots}">` : '',
  ].filter(Boolean);
  const links = [...page.links, ...broken].map((to) => anchor(ctx, page, to));
  const extras = page.path === '/' || rnd() < 0.08 ? IGNORED_LINKS : [];
  const sectionCount = 2 + Math.floor(rnd() * 2);
  const sections = Array.from({ length: sectionCount }, (_v, i) => {
    const link = links[i] ? ` See ${links[i]}.` : '';
    return `<h2 id="section-${i + 1}">${titleCase(pick(rnd, WORDS))}</h2>\n<p>${paragraph(rnd)}${link}</p>`;
  });
  const related = [...links.slice(sectionCount), ...extras].map((a) => `<li>${a}</li>`).join('\n');
  const main = `<h1>${page.title}</h1>\n<p>${paragraph(rnd)}</p>\n${sections.join('\n')}`;
  return layout(page.title, meta, `${main}\n<ul class="related">\n${related}\n</ul>`);
}

function layout(title: string, meta: string[], main: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title}</title>
${meta.join('\n')}
<link rel="stylesheet" href="/styles/site.css">
</head>
<body>
<header><nav><a href="/">Home</a> <a href="/guide/">Guide</a> <a href="/api/">API</a> <a href="/blog/">Blog</a> <a href="/about.html">About</a></nav></header>
<main>
${main}
</main>
<footer><nav><a href="/about.html">About</a> <a href="/contact.html">Contact</a></nav><p>Trawl demo site, generated text.</p></footer>
</body>
</html>
`;
}

function placeBrokenLinks(rnd: Rng, pages: Page[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const hosts = pages.filter(followable);
  for (let i = 0; i < BROKEN_LINKS; i++) {
    const host = pick(rnd, hosts);
    const dir = host.section === '/' ? '/guide/' : host.section;
    out.set(host.path, [...(out.get(host.path) ?? []), `${dir}retired-page-${i + 1}.html`]);
  }
  return out;
}

function write(dir: string, urlPath: string, content: string | Uint8Array): void {
  const file = path.join(dir, urlPath.endsWith('/') ? `${urlPath}index.html` : urlPath);
  mkdirSync(path.dirname(file), { recursive: true });
  // Same bytes, same file: its mtime (Last-Modified) stays, so a refresh of the demo gets 304s.
  if (existsSync(file) && Buffer.from(readFileSync(file)).equals(Buffer.from(content))) return;
  writeFileSync(file, content);
}

function writeAuxiliary(dir: string, pages: Page[], baseUrl: string): void {
  write(dir, '/robots.txt', `User-agent: *\nDisallow: /private/\n\nSitemap: ${baseUrl}/sitemap.xml\n`);
  const urls = pages
    .filter(indexable)
    .map((p) => `  <url><loc>${baseUrl}${p.path}</loc><lastmod>${p.lastmod}</lastmod></url>`);
  const xmlns = 'http://www.sitemaps.org/schemas/sitemap/0.9';
  const sitemap = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${xmlns}">\n${urls.join('\n')}\n</urlset>`;
  write(dir, '/sitemap.xml', `${sitemap}\n`);
  write(dir, '/styles/site.css', 'body { font-family: sans-serif; max-width: 48rem; margin: auto; }\n');
  write(dir, '/images/diagram.png', Buffer.from(PNG_1X1, 'base64'));
}

/** Writes the demo website into `dir` (existing files are overwritten, others left) and returns its counts. */
export function generateDemoSite(dir: string, opts: DemoSiteOptions = {}): DemoSiteCounts {
  const total = opts.pages ?? 300;
  if (!Number.isInteger(total) || total < 12)
    throw new RangeError(`pages must be an integer >= 12, got ${total}`);
  const rnd = mulberry32(opts.seed ?? 1);
  const privateCount = Math.min(8, Math.max(1, Math.round(total / 60)));
  const content = contentPages(rnd, total - FIXED.length - privateCount, privateCount);
  const pages = [...fixedPages(rnd), ...content];
  markSpecial(rnd, content);
  linkPages(rnd, pages, opts.linksPerPage);
  const broken = placeBrokenLinks(rnd, pages);
  const noiseTargets = new Set(Array.from({ length: 5 }, () => pick(rnd, content.filter(indexable)).path));
  const byPath = new Map(pages.map((p) => [p.path, p]));
  const ctx: RenderContext = { rnd, byPath, noiseTargets, noise: new Map() };
  for (const page of pages) write(dir, page.path, renderPage(ctx, page, broken.get(page.path) ?? []));
  writeAuxiliary(dir, pages, (opts.baseUrl ?? '').replace(/\/+$/, ''));
  return {
    pages: pages.length,
    brokenLinks: BROKEN_LINKS,
    disallowed: pages.filter(isPrivate).length,
    expectedIndexed: pages.filter(indexable).length,
    queryVariants: [...ctx.noise.values()].filter(Boolean).length,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const [outDir, pagesArg] = process.argv.slice(2);
  if (!outDir) throw new Error('usage: node --import tsx demo/generate-site.ts OUTDIR [PAGES]');
  console.log(JSON.stringify(generateDemoSite(outDir, pagesArg ? { pages: Number(pagesArg) } : {})));
}
