/**
 * Turns one fetched page into its outcome (state, document) and the URL tasks it yields:
 * link extraction with meta robots, redirects checked against scope again, sitemaps and feeds,
 * PDFs and compound files. Pure apart from the PDF parser's promise.
 */
import { randomUUID } from 'node:crypto';
import type { CrawlConfig } from '../config.ts';
import { buildDocument } from '../crawl/build-document.ts';
import { extractCompound, isCompound } from '../crawl/compound.ts';
import { decodeBody, parseContentType } from '../crawl/decode-body.ts';
import type { UrlDecider } from '../crawl/decide.ts';
import { deltaHash } from '../crawl/delta-hash.ts';
import { extractHtml, type HtmlExtraction } from '../crawl/extract-html.ts';
import { pdfToText } from '../crawl/pdf-text.ts';
import { parseSitemap } from '../crawl/sitemaps.ts';
import type { CrawlDocument, FetchedPage, PageOutcome, UrlTask } from '../types.ts';

export interface PageResult {
  outcomes: PageOutcome[];
  tasks: UrlTask[];
  /** links rejected by scope or rules, counted by reason for the crawl summary */
  rejected: Record<string, number>;
}

export interface PageContext {
  config: CrawlConfig;
  decider: UrlDecider;
  now: string;
}

/** Compound elements: SMILA webExtractor limits against zip bombs. */
const COMPOUND_LIMITS = { maxEntries: 1000, maxTotalBytes: 100 * 1024 * 1024, maxDepth: 3 };

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

function base(page: FetchedPage, state: PageOutcome['state'], extra: Partial<PageOutcome> = {}): PageOutcome {
  return {
    url: page.url,
    task: page.task,
    state,
    httpStatus: page.status,
    fetchedAt: page.fetchedAt,
    etag: page.headers.etag,
    lastModified: page.headers['last-modified'],
    ...extra,
  };
}

/** Decides one page's outcome and follow-up tasks. */
export async function processPage(page: FetchedPage, ctx: PageContext): Promise<PageResult> {
  const result: PageResult = { outcomes: [], tasks: [], rejected: {} };
  if (page.error) {
    result.outcomes.push(base(page, 'error', { error: page.error }));
  } else if (page.redirectTo !== undefined) {
    redirect(page, ctx, result);
  } else if (page.skipped) {
    result.outcomes.push(base(page, 'ignored', { note: page.skipped }));
  } else if (page.notModified) {
    result.outcomes.push(base(page, 'indexed', { notModified: true }));
  } else {
    await content(page, ctx, result);
  }
  return result;
}

function redirect(page: FetchedPage, ctx: PageContext, result: PageResult): void {
  const target = page.redirectTo as string;
  const { fetch } = ctx.config;
  if (!fetch.followRedirects) {
    result.outcomes.push(base(page, 'ignored', { note: `redirect not followed: ${target}` }));
    return;
  }
  const chain = [...(page.task.redirectChain ?? []), page.url];
  const d = ctx.decider.decide(target, { depth: page.task.depth, base: page.url });
  const fail = (code: string, message: string) =>
    result.outcomes.push(base(page, 'error', { error: { kind: 'permanent', code, message } }));
  if (!d.normalized) return void fail('malformed-redirect', `redirect to an unusable URL: ${target}`);
  if (chain.includes(d.normalized)) return void fail('redirect-loop', `redirect loop via ${d.normalized}`);
  if (chain.length > fetch.maxRedirects) return void fail('too-many-redirects', `more than ${fetch.maxRedirects} redirects`);
  if (!d.accepted) {
    count(result.rejected, d.reason);
    result.outcomes.push(base(page, 'ignored', { note: `redirect target rejected (${d.reason}): ${d.normalized}` }));
    return;
  }
  result.outcomes.push(base(page, 'ignored', { note: `redirected to ${d.normalized}` }));
  // SMILA: redirect targets are checked against the filters again; seed 001: they go to the redir source.
  result.tasks.push({ ...taskFrom(d, page.task.depth), queue: 'redir', redirectChain: chain, kind: page.task.kind });
}

function count(map: Record<string, number>, reason: string): void {
  const key = reason.replace(/^rule \d+: /, 'rule: ');
  map[key] = (map[key] ?? 0) + 1;
}

function taskFrom(d: ReturnType<UrlDecider['decide']>, depth: number): UrlTask {
  return {
    url: d.normalized as string,
    depth,
    queue: d.queue,
    index: d.index,
    follow: d.follow,
    priority: d.priorityShift,
    ...(d.source ? { source: d.source } : {}),
    ...(d.addMeta.length ? { addMeta: d.addMeta } : {}),
  };
}

async function content(page: FetchedPage, ctx: PageContext, result: PageResult): Promise<void> {
  const bytes = Buffer.from(page.body, 'base64');
  const contentType = page.headers['content-type'] ?? null;
  const { mimeType } = parseContentType(contentType);
  const note = page.truncated ? `truncated at fetch.maxBytes (${ctx.config.fetch.maxBytes} bytes)` : undefined;
  if (page.task.kind === 'sitemap') {
    sitemap(page, bytes, ctx, result);
  } else if (mimeType === null ? looksLikeHtml(bytes) : HTML_TYPES.has(mimeType)) {
    html(page, bytes, contentType, ctx, result, note);
  } else if (mimeType === 'application/pdf') {
    const pdf = await pdfToText(bytes).catch(() => null);
    if (!pdf) return void result.outcomes.push(base(page, 'ignored', { note: 'unreadable PDF' }));
    result.outcomes.push(documentOutcome(page, ctx, { text: pdf.text, title: pdf.title ?? undefined, size: bytes.length }, note));
  } else if (isCompound(page.url, mimeType, bytes)) {
    compound(page, bytes, ctx, result);
  } else if (mimeType?.startsWith('text/')) {
    const text = decodeBody(bytes, contentType).text.replace(/\s+/g, ' ').trim();
    result.outcomes.push(documentOutcome(page, ctx, { text, size: bytes.length }, note));
  } else {
    result.outcomes.push(base(page, 'ignored', { note: `unsupported mime type ${mimeType ?? 'unknown'}` }));
  }
}

function looksLikeHtml(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.subarray(0, 512)).toString('latin1').toLowerCase();
  return head.includes('<html') || head.includes('<!doctype html');
}

function html(
  page: FetchedPage,
  bytes: Uint8Array,
  contentType: string | null,
  ctx: PageContext,
  result: PageResult,
  note?: string,
): void {
  const { text } = decodeBody(bytes, contentType);
  const rogue = !ctx.config.fetch.respectRobotsTxt;
  const ex = extractHtml({ url: page.url, html: text, headers: page.headers, options: ctx.config.extract, rogue });
  const index = page.task.index && ex.robots.index;
  const follow = page.task.follow && ex.robots.follow && ctx.config.discovery;
  if (follow) links(ex.links, page, ctx, result);
  if (index) {
    result.outcomes.push(documentOutcome(page, ctx, { extraction: ex, size: bytes.length }, note));
  } else {
    const why = !ex.robots.index ? `noindex (${ex.robots.source.join(', ')})` : 'rule: noIndex';
    result.outcomes.push(base(page, page.task.follow && ex.robots.follow ? 'followed' : 'ignored', { note: why }));
  }
}

function links(hrefs: string[], page: FetchedPage, ctx: PageContext, result: PageResult): void {
  const seen = new Set<string>();
  for (const href of hrefs) {
    const d = ctx.decider.decide(href, { depth: page.task.depth + 1, base: page.url });
    if (!d.accepted || !d.normalized) {
      count(result.rejected, d.reason);
      continue;
    }
    if (seen.has(d.normalized)) continue;
    seen.add(d.normalized);
    result.tasks.push(taskFrom(d, page.task.depth + 1));
  }
}

function sitemap(page: FetchedPage, bytes: Uint8Array, ctx: PageContext, result: PageResult): void {
  const parsed = parseSitemap(bytes, page.url);
  for (const loc of parsed.sitemaps) {
    const d = ctx.decider.decide(loc, { depth: page.task.depth, isStart: true });
    if (d.normalized) result.tasks.push({ ...taskFrom(d, page.task.depth), queue: 'user', kind: 'sitemap' });
  }
  for (const { loc } of parsed.urls) {
    const d = ctx.decider.decide(loc, { depth: page.task.depth + 1, base: page.url });
    if (!d.accepted || !d.normalized) {
      count(result.rejected, d.reason);
      continue;
    }
    result.tasks.push({ ...taskFrom(d, page.task.depth + 1), fromSitemap: true });
  }
  result.outcomes.push(base(page, 'followed', { note: `${parsed.kind}: ${parsed.urls.length} URLs` }));
}

function compound(page: FetchedPage, bytes: Uint8Array, ctx: PageContext, result: PageResult): void {
  const { elements, truncated } = extractCompound(bytes, page.url, COMPOUND_LIMITS);
  for (const el of elements) {
    const text = decodeBody(el.bytes, null).text;
    const isHtml = /\.x?html?$/i.test(el.name);
    const extraction = isHtml
      ? extractHtml({ url: el.url, html: text, options: ctx.config.extract, rogue: true })
      : null;
    const elementPage: FetchedPage = { ...page, url: el.url, task: { ...page.task, url: el.url } };
    const doc = isHtml
      ? { extraction, size: el.bytes.length, compoundPath: el.compoundPath }
      : { text: text.replace(/\s+/g, ' ').trim(), size: el.bytes.length, compoundPath: el.compoundPath };
    result.outcomes.push(documentOutcome(elementPage, ctx, doc));
  }
  const note = `archive with ${elements.length} element(s)${truncated ? ', truncated by limits' : ''}`;
  result.outcomes.push(base(page, 'followed', { note }));
}

interface DocInput {
  extraction?: HtmlExtraction | null;
  text?: string;
  title?: string;
  size: number;
  compoundPath?: string[];
}

function documentOutcome(page: FetchedPage, ctx: PageContext, input: DocInput, note?: string): PageOutcome {
  const extraction = input.extraction ?? null;
  const text = extraction ? `${extraction.title}\n${extraction.content}` : `${input.title ?? ''}\n${input.text ?? ''}`;
  const hash = deltaHash({ content: text }, randomUUID);
  const doc: CrawlDocument = buildDocument({
    url: page.url,
    extraction,
    text: input.text,
    title: input.title,
    headers: page.headers,
    size: input.size,
    depth: page.task.depth,
    source: page.task.source ?? null,
    addMeta: page.task.addMeta ?? [],
    indexedAt: ctx.now,
    hash,
    compoundPath: input.compoundPath,
  });
  return base(page, 'indexed', { doc, ...(note ? { note } : {}) });
}
