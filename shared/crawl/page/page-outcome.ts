/**
 * Turns one fetched page into its outcome (state, document) and the URL tasks it yields:
 * link extraction with meta robots, redirects checked against scope again, sitemaps and feeds,
 * PDFs and compound files. Pure apart from the PDF parser's promise.
 */

import { randomUUID } from 'node:crypto';
import type { CrawlDocument, FetchedPage, PageOutcome, UrlTask } from '../../types.ts';
import { type CompoundElement, elementMimeType, extractCompound, isCompound } from '../archives/compound.ts';
import { boundedParser } from '../extract/bounded-parser.ts';
import { buildDocument } from '../extract/build-document.ts';
import { decodeBody, parseContentType } from '../extract/decode-body.ts';
import { deltaHash } from '../extract/delta-hash.ts';
import { textDigest } from '../extract/duplicates.ts';
import {
  extractHtml,
  type HtmlExtraction,
  headerCanonical,
  headerRobots,
  refreshTarget,
  titleFromUrl,
} from '../extract/extract-html.ts';
import { officeText } from '../extract/office-text.ts';
import { KIND_OF_MIME, OFFICE_MIME, type OfficeKind, officeKind } from '../extract/office-zip.ts';
import { collapse, type PdfReader, type PdfText, pdfToText } from '../extract/pdf-text.ts';
import { userAgentToken } from '../robots/robots-match.ts';
import { queuedTaskJudge, type UrlDecision } from '../rules/decide.ts';
import { isSitemapOrFeed } from '../sitemaps/sitemaps.ts';
import { domainOf } from '../url/domains.ts';
import { normalizeUrl } from '../url/normalize-url.ts';
import { soft404Fingerprint } from '../url/traps.ts';
import {
  base,
  CANONICAL_NOTE,
  count,
  countRecorded,
  EXAMPLES_PER_REASON,
  honorsCanonical,
  joinNotes,
  keepExample,
  type PageContext,
  type PageResult,
  reject,
  taskFrom,
} from './page-kit.ts';
import { namedSitemap, sitemap } from './page-sitemap.ts';

export type { PageContext, PageResult } from './page-kit.ts';

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

/** Decides one page's outcome and follow-up tasks. */
export async function processPage(page: FetchedPage, ctx: PageContext): Promise<PageResult> {
  const result: PageResult = { outcomes: [], tasks: [], rejected: {} };
  // A task queued under an older config (an exclude added, a redeploy while the frontier held
  // it) is judged again under the current one: out of scope, its page is neither indexed nor
  // followed (a document it had is deleted). The fetch stage judged it before any request when
  // its config was not the task's (`outOfScope`: nothing was fetched); this catches a config
  // changed between the fetch and now. Start URLs the config still names and sitemaps stay in, as when seeded.
  const outOfScope = page.outOfScope ?? rejectedNow(page, ctx);
  if (outOfScope !== null) {
    count(result.rejected, outOfScope);
    countRecorded(result, outOfScope);
    result.outcomes.push(base(page, 'ignored', { note: `out-of-scope: ${outOfScope}` }));
    return result;
  }
  if (page.error) {
    result.outcomes.push(base(page, 'error', { error: page.error }));
  } else if (page.redirectTo !== undefined) {
    redirect(page, ctx, result);
  } else if (page.skipped) {
    const rule = page.robotsRule === undefined ? '' : `: Disallow: ${page.robotsRule}`;
    result.outcomes.push(base(page, 'ignored', { note: `${page.skipped}${rule}` }));
  } else if (page.notModified) {
    notModified(page, ctx, result);
  } else {
    await content(page, ctx, result);
  }
  // A limit the fetch applied (a capped Crawl-delay) is counted and said in the page's own note.
  for (const c of page.capped ?? []) {
    count(result.rejected, c.limit);
    const own = result.outcomes.findLast((o) => o.url === page.url && !o.element);
    if (own) own.note = joinNotes(own.note, c.note);
  }
  canonicalFallback(page, ctx, result);
  // Every URL a page leads to was found on it: its link, its sitemap entry, its redirect's target.
  for (const t of result.tasks) t.foundOn = page.url;
  return result;
}

/**
 * extract.honorCanonical: the page that deferred to this URL, its canonical (`canonicalOf`), is
 * fetched again to be indexed under its own URL when this URL ends as no document: an error, a
 * robots.txt or noindex refusal, a redirect back to that page (`/a` naming `/a/`, which answers
 * 301 to `/a`). Until 2026-11-29 the page's content was in the index under no URL. A redirect's
 * or an instant refresh's target carries the page on (`canonicalOf`), as does this URL's own
 * honored canonical (should that one fail, this URL is fetched again, and the page defers to it).
 */
function canonicalFallback(page: FetchedPage, ctx: PageContext, result: PageResult): void {
  const own = result.outcomes.find((o) => o.url === page.url && !o.element);
  const declined = result.canonicalDeclined;
  if (declined && own?.state === 'indexed') {
    own.canonicalIgnored = declined;
    own.note = joinNotes(own.note, `canonical ${declined} is no document: indexed under its own URL`);
  }
  const of = page.task.canonicalOf;
  if (!of) return;
  if (!own || own.state === 'indexed') return;
  if (result.tasks.some((t) => t.canonicalOf === of || t.canonicalOf === page.url)) return;
  const depth = page.task.depth;
  const d = ctx.decider.decide(of, { depth, isStart: depth === 0 });
  if (!d.accepted || !d.normalized) return;
  // `redelivered`: the index stage reads the page's state (followed, for its canonical) first.
  const task: UrlTask = { ...taskFrom(d, depth), ignoreCanonical: true, redelivered: true };
  result.again = [...(result.again ?? []), task];
  own.note = joinNotes(own.note, `canonical of ${of}, which is fetched again to be indexed itself`);
}

/**
 * The current config's reason to reject the page's URL, or null when it accepts it: judged as the
 * fetch stage and the refresh cycle judge a queued URL (a start URL only while the config names it).
 */
function rejectedNow(page: FetchedPage, ctx: PageContext): string | null {
  const judged = queuedTaskJudge(ctx.config, ctx.decider)({ ...page.task, url: page.url });
  return judged.accepted ? null : judged.reason;
}

/**
 * A URL as a note or message shows it: cut at `scope.maxUrlLength` (a Location header can be as
 * long as `limits.headerBytes`, up to 1 MB, and a note is stored with the URL's state).
 */
function shown(url: string, ctx: PageContext): string {
  const max = ctx.config.scope.maxUrlLength;
  return url.length > max ? `${url.slice(0, max)}… (${url.length} characters)` : url;
}

function redirect(page: FetchedPage, ctx: PageContext, result: PageResult): void {
  const target = shown(page.redirectTo as string, ctx);
  const { fetch } = ctx.config;
  if (!fetch.followRedirects) {
    result.outcomes.push(base(page, 'ignored', { note: `redirect not followed: ${target}` }));
    return;
  }
  const d = ctx.decider.decide(page.redirectTo as string, { depth: page.task.depth, base: page.url });
  const fail = (code: string, message: string) =>
    result.outcomes.push(base(page, 'error', { error: { kind: 'permanent', code, message } }));
  if (!d.normalized) return void fail('malformed-redirect', `redirect to an unusable URL: ${target}`);
  const hop = nextHop(page, d.normalized, ctx);
  if ('code' in hop) return void fail(hop.code, hop.message);
  // A sitemap that moved (http to https, a new path) is read where it went, as an index's child
  // would be: judged as a link, its `.xml` made every moved sitemap's entries lost.
  const moved = page.task.kind === 'sitemap' ? namedSitemap(d.normalized, page, ctx) : null;
  if (moved) {
    result.outcomes.push(base(page, 'ignored', { note: `redirected to ${moved.url}` }));
    return void result.tasks.push({ ...moved, queue: 'redir', redirectChain: hop.chain });
  }
  if (!d.accepted) {
    const rejected = shown(d.normalized, ctx);
    reject(result, d.reason, rejected, `redirect from ${page.url}`);
    countRecorded(result, d.reason);
    result.outcomes.push(
      base(page, 'ignored', { note: `redirect target rejected (${d.reason}): ${rejected}` }),
    );
    return;
  }
  result.outcomes.push(base(page, 'ignored', { note: `redirected to ${d.normalized}` }));
  // SMILA: redirect targets are checked against the filters again; seed 001: they go to the redir source.
  result.tasks.push({
    ...taskFrom(d, page.task.depth),
    ...handedOn(page.task, d.normalized),
    queue: 'redir',
    redirectChain: hop.chain,
    kind: page.task.kind,
  });
}

/**
 * The redirect chain through `page` to `target` (HTTP 3xx and instant meta refreshes alike), or
 * the fault that ends it: a loop, or one hop past fetch.maxRedirects.
 */
function nextHop(
  page: FetchedPage,
  target: string,
  ctx: PageContext,
): { chain: string[] } | { code: string; message: string } {
  const chain = [...(page.task.redirectChain ?? []), page.url];
  if (chain.includes(target)) return { code: 'redirect-loop', message: `redirect loop via ${target}` };
  const max = ctx.config.fetch.maxRedirects;
  if (chain.length > max) return { code: 'too-many-redirects', message: `more than ${max} redirects` };
  return { chain };
}

async function content(page: FetchedPage, ctx: PageContext, result: PageResult): Promise<void> {
  const bytes = Buffer.from(page.body, 'base64');
  const contentType = page.headers['content-type'] ?? null;
  const declared = parseContentType(contentType).mimeType;
  const sniffed = sniffPdf(declared, bytes) ?? sniffOffice(page.url, declared, bytes);
  const mimeType = sniffed ?? declared;
  const note = page.truncated
    ? `truncated at fetch.maxBytes (${ctx.config.fetch.maxBytes} bytes)`
    : undefined;
  if (page.truncated) count(result.rejected, 'limit-fetch-max-bytes');
  // A sitemap task is parsed as one whatever it looks like: a .xml.gz sitemap is no compound.
  if (page.task.kind === 'sitemap') return sitemap(page, bytes, ctx, result);
  // Nothing to index: a 204, or a body of nothing but white space, was an empty document titled
  // after its URL (an audit).
  if (bytes.every((b) => b === 0x20 || (b >= 0x09 && b <= 0x0d))) {
    const why = page.status === 204 ? 'no content (HTTP 204)' : 'empty body';
    return void result.outcomes.push(base(page, 'ignored', { note: why }));
  }
  if (isHtml(mimeType, bytes) || isXhtml(mimeType, bytes))
    return html(page, bytes, contentType, ctx, result, note);
  // A sitemap or feed fetched as a page (a start URL, a link; one a sitemap index lists as well is
  // then claimed already) is read as one: its entries are followed, it is not indexed.
  if (page.task.follow && isSitemapOrFeed(mimeType, bytes)) return sitemap(page, bytes, ctx, result);
  // A rule's noIndex, or an `X-Robots-Tag: noindex` (how a PDF or a text file says it), holds for
  // every kind of document, an archive's elements included: until 2026-11-28 only HTML heeded them.
  const robots = responseRobots(page, ctx);
  if (!page.task.index || !robots.index) {
    const why = !robots.index ? `noindex (${robots.source.join(', ')})` : 'rule: noIndex';
    const state = page.task.follow && robots.follow ? 'followed' : 'ignored';
    return void result.outcomes.push(base(page, state, { note: joinNotes(why, note) }));
  }
  // extract.honorCanonical holds for a document that names its canonical in a Link header (a PDF,
  // as Google reads it) as for a page's <link rel="canonical">: until 2026-11-28 it was recorded only.
  const named = honorsCanonical(ctx.config) ? headerCanonical(page.headers, page.url) : null;
  const moved = named ? movedTo(named, page, ctx) : null;
  const elsewhere = moved && !('code' in moved.hop) ? unlessDeclined(moved, page, result) : null;
  if (elsewhere) return canonicalInstead(elsewhere, page, result, page.task.follow && robots.follow, note);
  if (mimeType !== 'application/pdf' && isCompound(page.url, mimeType, bytes))
    return compound(page, bytes, ctx, result, note);
  const doc = await plainDocument(bytes, mimeType, contentType, ctx, result);
  // A PDF cut short has lost its cross-reference table (at the end): unreadable for that reason.
  if (typeof doc === 'string')
    return void result.outcomes.push(base(page, 'ignored', { note: note ? `${doc}: ${note}` : doc }));
  const notes = joinNotes(note, doc.note);
  const input = { ...doc, size: bytes.length, ...(sniffed ? { sniffedMimeType: sniffed } : {}) };
  result.outcomes.push(documentOutcome(page, ctx, result, input, notes));
}

/**
 * XHTML served as XML (`text/xml`, `application/xml`: an `<html>` in the XHTML namespace at its
 * start), which browsers render as a page: read as one. It was read as XML, its scripts and
 * styles in the text and its title the URL's (an audit).
 */
function isXhtml(mimeType: string | null, bytes: Uint8Array): boolean {
  if (mimeType !== 'text/xml' && mimeType !== 'application/xml') return false;
  const head = Buffer.from(bytes.subarray(0, 4096)).toString('latin1');
  return /<html[\s>]/.test(head) && head.includes('http://www.w3.org/1999/xhtml');
}

function isHtml(mimeType: string | null, bytes: Uint8Array): boolean {
  return mimeType === null ? looksLikeHtml(bytes) : HTML_TYPES.has(mimeType);
}

/** PDF and text/* documents (seed 004 indexes PDFs like pages); a string says why there is none. */
async function plainDocument(
  bytes: Uint8Array,
  mimeType: string | null,
  contentType: string | null,
  ctx: PageContext,
  result: PageResult,
): Promise<
  | {
      text: string;
      title?: string;
      note?: string;
      charset?: string | null;
      info?: PdfText['info'];
      lastModified?: string | null;
    }
  | string
> {
  const office = mimeType === null ? undefined : KIND_OF_MIME.get(mimeType);
  if (office) return officeDocument(office, bytes, ctx, result);
  if (mimeType === 'application/pdf') {
    const pdf = await pdfDocument(bytes, ctx, result);
    return typeof pdf === 'string' ? pdf : { ...pdf, charset: null };
  }
  if (mimeType === 'text/xml' || mimeType === 'application/xml') {
    const { text, charset } = decodeBody(bytes, contentType, 'xml');
    return { text: xmlText(text), charset };
  }
  if (mimeType?.startsWith('text/')) {
    const { text, charset } = decodeBody(bytes, contentType, 'none');
    return { text: collapse(text), charset };
  }
  return `unsupported mime type ${mimeType ?? 'unknown'}`;
}

/**
 * The text of an XML document (text/xml or application/xml: what a site serves as a page, not a
 * sitemap or feed): its text and CDATA, one space between elements, without the markup that used
 * to be indexed.
 */
function xmlText(xml: string): string {
  const parts: string[] = [];
  const parser = boundedParser(
    { ontext: (t) => parts.push(t), onopentag: () => parts.push(' '), onclosetag: () => parts.push(' ') },
    { xmlMode: true },
  );
  parser.end(xml);
  return collapse(parts.join(''));
}

/** A PDF within limits.pdfBytes, its text cut at limits.pdfPages / pdfTimeMs / pdfMemoryMb with a note. */
async function pdfDocument(bytes: Uint8Array, ctx: PageContext, result: PageResult) {
  const { pdfBytes, pdfPages, pdfTimeMs, pdfMemoryMb } = ctx.config.limits;
  if (bytes.length > pdfBytes) {
    count(result.rejected, 'limit-pdf-bytes');
    return `PDF of ${bytes.length} bytes, over limits.pdfBytes (${pdfBytes}): not parsed`;
  }
  const limits = { maxPages: pdfPages, maxMs: pdfTimeMs, maxHeapMb: pdfMemoryMb };
  const read = ctx.readPdf ?? inThread;
  let failure = '';
  const pdf = await read(bytes, limits).catch((error: Error) => {
    failure = String(error?.message ?? '');
    return null;
  });
  // pdf.js says "No password given" (PasswordException) of a PDF that needs one to be opened.
  if (!pdf)
    return /password/i.test(failure) ? 'encrypted PDF: a password is needed to open it' : 'unreadable PDF';
  if (pdf.cut) count(result.rejected, pdf.cut.limit);
  const note = pdf.cut ? `PDF text cut: ${pdf.cut.reason}` : undefined;
  return {
    text: pdf.text,
    ...(pdf.title ? { title: pdf.title } : {}),
    ...(note ? { note } : {}),
    ...(pdf.info ? { info: pdf.info } : {}),
  };
}

/**
 * An Office document (.docx, .xlsx, .pptx, .odt, .ods, .odp) read within limits.archiveEntries and
 * archiveBytes, as an archive is: a part over them is left out (a zip bomb disguised as .docx), said.
 */
function officeDocument(kind: OfficeKind, bytes: Uint8Array, ctx: PageContext, result: PageResult) {
  const { archiveEntries, archiveBytes } = ctx.config.limits;
  const doc = officeText(kind, bytes, { maxEntries: archiveEntries, maxTotalBytes: archiveBytes });
  if (typeof doc === 'string') {
    if (doc.includes('limits.')) count(result.rejected, 'limit-archive');
    return doc;
  }
  if (doc.cut) count(result.rejected, 'limit-archive');
  // The parts are bounded by archiveBytes (100 MB unpacked); the text a document of the index
  // takes, as an HTML page's, by fetch.maxBytes.
  const max = ctx.config.fetch.maxBytes;
  const long = doc.text.length > max;
  if (long) count(result.rejected, 'limit-fetch-max-bytes');
  const notes = [
    ...(doc.cut ? [`Office text cut: ${doc.cut}`] : []),
    ...(long ? [`Office text cut at fetch.maxBytes (${max} characters of ${doc.text.length})`] : []),
  ];
  const info = Object.keys(doc.info).length > 0 ? { info: doc.info } : {};
  return {
    text: long ? doc.text.slice(0, max) : doc.text,
    charset: null,
    lastModified: doc.lastModified,
    ...(doc.title ? { title: doc.title } : {}),
    ...(notes.length ? { note: notes.join('; ') } : {}),
    ...info,
  };
}

/** PDF text in this thread: the time limit on the process clock, checked between pages only. */
const inThread: PdfReader = (bytes, limits) =>
  pdfToText(bytes, { ...limits, clock: () => performance.now() });

/**
 * A 304 keeps the page's document, unless the headers it came with say `noindex` now (RFC 9111
 * §4.3.4: a 304's header fields update the stored response; nginx's `add_header` sends them on a
 * 304 too): then the page is no document any more, as after a 200 with that header. Until
 * 2026-11-28 a 304's X-Robots-Tag was not read.
 */
function notModified(page: FetchedPage, ctx: PageContext, result: PageResult): void {
  const robots = responseRobots(page, ctx);
  if (robots.index) return void result.outcomes.push(base(page, 'indexed', { notModified: true }));
  const state = page.task.follow && robots.follow ? 'followed' : 'ignored';
  result.outcomes.push(base(page, state, { note: `noindex (${robots.source.join(', ')}) on a 304` }));
}

/** What the response's `X-Robots-Tag` headers say of the page, as the config and Rogue mode read them. */
function responseRobots(page: FetchedPage, ctx: PageContext): ReturnType<typeof headerRobots> {
  const { extract, fetch } = ctx.config;
  const at = Date.parse(page.fetchedAt);
  return headerRobots(page.headers, extract, !fetch.respectRobotsTxt, agentToken(fetch.userAgent), at);
}

/** XHTML served as XML is read as XML: its `<?xml encoding?>` declaration gives the charset, not a `<meta>`. */
const charsetDeclaredBy = (mimeType: string | null) =>
  mimeType === 'application/xhtml+xml' || mimeType === 'text/xml' || mimeType === 'application/xml'
    ? 'xml'
    : 'html';

/**
 * A body sent without a media type is HTML when it names `<html` or a doctype early on, or when it
 * starts (after white space) as the WHATWG MIME Sniffing standard's HTML patterns do: `<head`,
 * `<title`, `<body`, `<p`, `<!--`… followed by a space or `>` (a legacy CGI page starting
 * `<head><title>` was ignored as an unsupported type until 2026-11-28).
 */
function looksLikeHtml(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.subarray(0, 512)).toString('latin1').toLowerCase();
  if (head.includes('<html') || head.includes('<!doctype html')) return true;
  const start = head.replace(/^[\t\n\f\r ]+/, '');
  return HTML_STARTS.some((p) => start.startsWith(p) && (start[p.length] === ' ' || start[p.length] === '>'));
}

/** The MIME Sniffing standard's HTML patterns (§7.1), each before a tag-terminating byte. */
const HTML_STARTS = [
  '<!doctype html',
  '<html',
  '<head',
  '<script',
  '<iframe',
  '<h1',
  '<div',
  '<font',
  '<table',
  '<a',
  '<style',
  '<title',
  '<b',
  '<body',
  '<br',
  '<p',
  '<!--',
];

function html(
  page: FetchedPage,
  bytes: Uint8Array,
  contentType: string | null,
  ctx: PageContext,
  result: PageResult,
  note?: string,
): void {
  const declaredType = parseContentType(contentType).mimeType;
  const { text, charset } = decodeBody(bytes, contentType, charsetDeclaredBy(declaredType));
  const rogue = !ctx.config.fetch.respectRobotsTxt;
  const ex = extractHtml({
    url: page.url,
    html: text,
    headers: page.headers,
    options: ctx.config.extract,
    rogue,
    agent: agentToken(ctx.config.fetch.userAgent),
    charset,
    now: Date.parse(page.fetchedAt),
  });
  if (
    page.soft404 &&
    !probeCopies(page) &&
    soft404Fingerprint(ex.title, ex.content, page.url) === page.soft404
  ) {
    // The host answers unknown paths with this page: not found, and its links are not followed.
    const message = "soft 404: the page looks like the host's answer to a random path (scope.traps.soft404)";
    result.outcomes.push(base(page, 'error', { error: { kind: 'permanent', code: 'soft-404', message } }));
    count(result.rejected, 'soft-404');
    return;
  }
  const index = page.task.index && ex.robots.index;
  // Seed 004: with discovery off only start URLs and sitemap/feed entries are fetched, no links followed.
  const follow = page.task.follow && ex.robots.follow && ctx.config.discovery;
  // A `Refresh` response header (what browsers follow as they follow the meta element) when the
  // page has no meta refresh: its stub was a document and its target never found (helper-48).
  const header = ex.refresh ? null : headerRefresh(page);
  const refresh = ex.refresh ?? header;
  const via = header ? 'Refresh header' : 'meta refresh';
  const dropped = follow ? links(header ? [...ex.links, header.target] : ex.links, page, ctx, result) : 0;
  // The page's own nofollow (meta robots, X-Robots-Tag): its links are counted and said on its
  // state, as rel=nofollow links are (they left no trace, and `explain` said the page follows).
  const unfollowed =
    page.task.follow && ctx.config.discovery && !ex.robots.follow && ex.links.length > 0
      ? `${ex.links.length} links not followed: nofollow (${ex.robots.source.join(', ')})`
      : undefined;
  if (unfollowed) {
    count(result.rejected, 'page-nofollow', ex.links.length);
    for (const href of ex.links.slice(0, EXAMPLES_PER_REASON))
      keepExample(result, 'page-nofollow', href, `linked from ${page.url}, which says nofollow`);
  }
  if (follow && ex.nofollowLinks > 0) {
    count(result.rejected, 'rel-nofollow', ex.nofollowLinks);
    for (const href of ex.nofollowSample)
      keepExample(result, 'rel-nofollow', href, `linked from ${page.url}`);
  }
  const cut = dropped
    ? `${dropped} links dropped at limits.linksPerPage (${ctx.config.limits.linksPerPage})`
    : undefined;
  // An instant refresh to another URL is a redirect (Google reads it as a permanent one): the page
  // is a "moved" stub, not a document; its target is followed as an HTTP redirect's is, at the
  // page's depth, through the redir source, in the same chain (maxRedirects). A page whose links
  // are not followed keeps its document, so its content is not lost.
  const moved = index && follow && refresh?.seconds === 0 ? movedTo(refresh.target, page, ctx) : null;
  // extract.honorCanonical: a page naming another URL its canonical is that URL's copy, as
  // Norconex and Algolia's crawler read it: the canonical is fetched (at the page's depth) and
  // indexed, the page is not. With discovery off nothing else would be fetched: it stays a document.
  // A canonical the page was redirected from (`/a` → `/a/`, which names `/a`) contradicts the
  // redirect: the page stays a document.
  const named =
    index && !moved && ex.canonical && honorsCanonical(ctx.config) ? movedTo(ex.canonical, page, ctx) : null;
  const elsewhere = named && !('code' in named.hop) ? unlessDeclined(named, page, result) : null;
  if (elsewhere) {
    canonicalInstead(elsewhere, page, result, page.task.follow && ex.robots.follow, cut);
  } else if (moved) {
    const { d, target, hop } = moved;
    // The target is a redirect's, not a link's.
    result.tasks = result.tasks.filter((t) => t.url !== target);
    if ('code' in hop) {
      // As for HTTP redirects: a loop, or one hop past fetch.maxRedirects, is a permanent error.
      const error = { kind: 'permanent' as const, code: hop.code, message: `${hop.message} (${via})` };
      result.outcomes.push(base(page, 'error', { error }));
    } else {
      const task = {
        ...taskFrom(d, page.task.depth),
        ...handedOn(page.task, target),
        redirectChain: hop.chain,
        kind: page.task.kind,
      };
      result.tasks.push({ ...task, queue: 'redir' });
      result.outcomes.push(
        base(page, 'followed', { note: joinNotes(`redirected to ${target} (${via})`, cut) }),
      );
    }
  } else if (index) {
    const notes = joinNotes(note, cut, unfollowed);
    // A page sent without a media type and read as HTML is `text/html` (its mimeType was null:
    // a search filtering on it lost the page, an audit).
    const sniffedMimeType = declaredType === null ? { sniffedMimeType: 'text/html' } : {};
    result.outcomes.push(
      documentOutcome(
        page,
        ctx,
        result,
        { extraction: ex, size: bytes.length, charset, ...sniffedMimeType },
        notes,
      ),
    );
  } else {
    const why = !ex.robots.index ? `noindex (${ex.robots.source.join(', ')})` : 'rule: noIndex';
    result.outcomes.push(
      base(page, page.task.follow && ex.robots.follow ? 'followed' : 'ignored', {
        note: joinNotes(why, cut),
      }),
    );
  }
}

let lastAgent: { userAgent: string; token: string } | null = null;

/** fetch.userAgent's robots token, worked out once per user agent, not once per page. */
function agentToken(userAgent: string): string {
  if (lastAgent?.userAgent !== userAgent) lastAgent = { userAgent, token: userAgentToken(userAgent) };
  return lastAgent.token;
}

/**
 * extract.honorCanonical: the page is its canonical's copy: the canonical is queued (at the page's
 * depth) and indexed, the page is recorded `followed` (its links still read) or `ignored`.
 */
function canonicalInstead(
  { d, target }: { d: UrlDecision; target: string },
  page: FetchedPage,
  result: PageResult,
  followed: boolean,
  cut: string | undefined,
): void {
  // The canonical's task names the page, which is fetched again should the canonical be no document.
  const linked = result.tasks.findIndex((t) => t.url === target);
  if (linked === -1) result.tasks.push({ ...taskFrom(d, page.task.depth), canonicalOf: page.url });
  else result.tasks[linked] = { ...result.tasks[linked]!, canonicalOf: page.url };
  const why = `${CANONICAL_NOTE}${target} (extract.honorCanonical): that URL is indexed instead`;
  result.outcomes.push(base(page, followed ? 'followed' : 'ignored', { note: joinNotes(why, cut) }));
}

/**
 * The page a canonical stands for (`canonicalOf`), handed on to where the canonical moved, unless
 * it moved back to that page (which is then fetched again: canonicalFallback).
 */
function handedOn(task: UrlTask, target: string): Pick<UrlTask, 'canonicalOf'> {
  return task.canonicalOf && task.canonicalOf !== target ? { canonicalOf: task.canonicalOf } : {};
}

/**
 * The canonical to honor, or null when it ended as no document before: this fetch is the one that
 * indexes the page under its own URL (`UrlTask.ignoreCanonical`), or an earlier one did and the
 * page names the same canonical (its state's `canonicalIgnored`, which a refresh carries). Also
 * null for the page that deferred to this one (`/a` names `/b`, `/b` names `/a`): this one keeps
 * the content. The page's document then records that canonical as declined (processPage).
 */
function unlessDeclined<T extends { target: string }>(
  named: T,
  page: FetchedPage,
  result: PageResult,
): T | null {
  const { ignoreCanonical, prev, canonicalOf } = page.task;
  if (!ignoreCanonical && prev?.canonicalIgnored !== named.target && canonicalOf !== named.target)
    return named;
  result.canonicalDeclined = named.target;
  return null;
}

/**
 * An instant meta refresh's target (or an honored canonical), judged as an HTTP redirect's:
 * another URL the crawl accepts at the page's depth, with its chain or the fault that ends it
 * (`nextHop`); null (the page stays a document) for the page itself or a target the crawl rejects.
 */
function movedTo(target: string, page: FetchedPage, ctx: PageContext) {
  const d = ctx.decider.decide(target, { depth: page.task.depth, base: page.url });
  if (!d.accepted || !d.normalized || d.normalized === page.url) return null;
  return { d, target: d.normalized, hop: nextHop(page, d.normalized, ctx) };
}

/** Queues a page's links up to limits.linksPerPage; returns how many were dropped at the limit. */
function links(hrefs: string[], page: FetchedPage, ctx: PageContext, result: PageResult): number {
  const seen = new Set<string>();
  const max = ctx.config.limits.linksPerPage;
  for (const [i, href] of hrefs.entries()) {
    if (seen.size >= max) {
      count(result.rejected, 'limit-links-per-page', hrefs.length - i);
      return hrefs.length - i;
    }
    const d = ctx.decider.decide(href, { depth: page.task.depth + 1, base: page.url });
    if (!d.accepted || !d.normalized) {
      reject(result, d.reason, d.normalized ?? href, `depth ${page.task.depth + 1}, linked from ${page.url}`);
      continue;
    }
    if (seen.has(d.normalized)) continue;
    seen.add(d.normalized);
    result.tasks.push(taskFrom(d, page.task.depth + 1));
  }
  return 0;
}

/** Seed 003 WebExtractor: each element becomes a document `<archive url>/<path>` with its compoundPath. */
async function compound(
  page: FetchedPage,
  bytes: Uint8Array,
  ctx: PageContext,
  result: PageResult,
  /** how the body was cut at fetch.maxBytes, if it was */
  cut?: string,
): Promise<void> {
  const { archiveEntries, archiveBytes, archiveDepth } = ctx.config.limits;
  const limits = { maxEntries: archiveEntries, maxTotalBytes: archiveBytes, maxDepth: archiveDepth };
  const { elements, truncated, warnings } = extractCompound(bytes, page.url, limits);
  let skipped = 0;
  const given: string[] = [];
  for (const el of elements) {
    const mimeType = elementMimeType(el.name, el.bytes);
    // An element has no headers of its own: its type comes from its name, its date from its entry
    // (a tar header's mtime, a zip's timestamp), else from the archive's Last-Modified.
    const headers: Record<string, string> = mimeType ? { 'content-type': mimeType } : {};
    const modified = el.modified ? new Date(el.modified).toUTCString() : page.headers['last-modified'];
    if (modified) headers['last-modified'] = modified;
    // The archive's previous state is not the element's: the index stage reads the element's own.
    const { prev: _archive, ...task } = page.task;
    const elementPage: FetchedPage = { ...page, url: el.url, headers, task: { ...task, url: el.url } };
    const doc = await elementDocument(el, mimeType, ctx, result);
    if (doc === null) skipped++;
    else {
      given.push(el.url);
      result.outcomes.push({
        ...documentOutcome(elementPage, ctx, result, { ...doc, compoundPath: el.compoundPath }, doc.note),
        element: true,
      });
    }
  }
  const notes = [`archive with ${elements.length} element(s)`];
  if (skipped) notes.push(`${skipped} not indexable`);
  // A zip's directory is at its end: one cut short gives nothing, and this says why.
  if (cut) notes.push(cut);
  if (truncated) {
    count(result.rejected, 'limit-archive');
    // the first warnings say which limit cut it (limits.archiveEntries/archiveBytes/archiveDepth)
    notes.push(
      `truncated by limits: ${warnings
        .filter((w) => /limits\.|lying/.test(w))
        .slice(0, 3)
        .join('; ')}`,
    );
  }
  // What else was not read (an encrypted entry, a corrupt archive, a compression method), said:
  // "archive with 0 element(s)" alone left a user guessing.
  const others = warnings.filter((w) => !/limits\.|lying|directory entry skipped/.test(w));
  if (others.length > 0)
    notes.push(
      `not read: ${others.slice(0, 3).join('; ')}${others.length > 3 ? ` (and ${others.length - 3} more)` : ''}`,
    );
  result.outcomes.push({ ...base(page, 'followed', { note: notes.join(', ') }), elements: given });
}

async function elementDocument(
  el: CompoundElement,
  mimeType: string | null,
  ctx: PageContext,
  result: PageResult,
): Promise<(DocInput & { note?: string }) | null> {
  const { url, bytes, name: titlePath } = el;
  if (mimeType !== null && HTML_TYPES.has(mimeType)) {
    const { text: html, charset } = decodeBody(bytes, null, charsetDeclaredBy(mimeType));
    // Links inside an archive are not followed: they are relative to where the files came from.
    const options = ctx.config.extract;
    const extraction = extractHtml({ url, html, options, rogue: true, charset, titlePath });
    return { extraction, size: bytes.length, charset };
  }
  // a PDF element cut by a limit is counted like a PDF page, and says so in its own note
  const doc = await plainDocument(bytes, mimeType, null, ctx, result);
  return typeof doc === 'string' ? null : { ...doc, size: bytes.length, titlePath };
}

interface DocInput {
  extraction?: HtmlExtraction | null;
  text?: string;
  title?: string;
  size: number;
  /** the charset the text was decoded with; null for a binary document */
  charset?: string | null;
  compoundPath?: string[];
  /** what the last-resort title is named after instead of the URL's path (an element's entry path) */
  titlePath?: string;
  sniffedMimeType?: string;
  /** a PDF's or Office document's Author, Subject and Keywords */
  info?: PdfText['info'];
  /** the date an Office document records it was last modified, ISO */
  lastModified?: string | null;
}

/** Media types that say nothing of the bytes ("download this"). */
const UNDECLARED = new Set([
  'application/octet-stream',
  'binary/octet-stream',
  'application/x-download',
  'application/force-download',
]);

/**
 * A PDF served as a download (`application/octet-stream`, or no type at all) is known by its
 * first bytes, `%PDF-`: until 2026-11-28 it was `ignored` as an unsupported type.
 */
function sniffPdf(mimeType: string | null, bytes: Uint8Array): string | undefined {
  if (mimeType !== null && !UNDECLARED.has(mimeType)) return undefined;
  return Buffer.from(bytes.subarray(0, 5)).toString('latin1') === '%PDF-' ? 'application/pdf' : undefined;
}

/**
 * An Office document served as a download or a zip (`application/octet-stream`, `application/zip`,
 * or no type) is known by its parts (`[Content_Types].xml` and its main part, an ODF `mimetype`
 * entry) or its URL's extension: until 2026-11-29 it was `ignored` as an unsupported type.
 */
function sniffOffice(url: string, mimeType: string | null, bytes: Uint8Array): string | undefined {
  const kind = officeKind(url, mimeType, bytes);
  return kind && OFFICE_MIME[kind] !== mimeType ? OFFICE_MIME[kind] : undefined;
}

/** A PDF's information entries under the document fields `extract.metadataMapping` names for them. */
function mappedInfo(
  info: NonNullable<PdfText['info']>,
  mapping: Record<string, string>,
): Record<string, string | string[]> {
  const fields = new Map(Object.entries(mapping).map(([k, v]) => [k.trim().toLowerCase(), v]));
  const meta: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(info)) {
    const field = fields.get(name);
    if (field === undefined || value === undefined) continue;
    const had = meta[field];
    meta[field] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  return meta;
}

function documentOutcome(
  page: FetchedPage,
  ctx: PageContext,
  result: PageResult,
  input: DocInput,
  note?: string,
): PageOutcome {
  const extraction = input.extraction ?? null;
  const doc: CrawlDocument = buildDocument({
    url: page.url,
    extraction,
    text: input.text,
    // Seed 004: a document without a title of its own is named after its last URL segment.
    title: extraction ? undefined : input.title || titleFromUrl(page.url, input.titlePath),
    headers: page.headers,
    charset: input.charset,
    size: input.size,
    depth: page.task.depth,
    source: page.task.source ?? null,
    addMeta: page.task.addMeta ?? [],
    indexedAt: ctx.now,
    hash: '',
    compoundPath: input.compoundPath,
    ...(input.sniffedMimeType ? { sniffedMimeType: input.sniffedMimeType } : {}),
    ...(input.lastModified ? { lastModified: input.lastModified } : {}),
    // A PDF's information dictionary, as a page's <meta> tags: its Subject is its description,
    // and extract.metadataMapping maps `author`, `subject` and `keywords` (Tika's dc:creator…).
    ...(!extraction && input.info
      ? {
          meta: mappedInfo(input.info, ctx.config.extract.metadataMapping),
          description: input.info.subject ?? null,
        }
      : {}),
  });
  // A PDF or text document names its canonical in a Link header (an archive's elements have none).
  if (!extraction && input.compoundPath === undefined) {
    const canonical = headerCanonical(page.headers, page.url);
    if (canonical) doc.canonical = canonical;
  }
  const cut = boundFields(doc, ctx.config.limits, ctx.config.scope.maxUrlLength);
  for (const c of cut) count(result.rejected, c.limit);
  if (cut.length > 0) note = joinNotes(note, cut.map((c) => c.note).join('; '));
  // Seed 003: content attached, so the delta hash is a digest; of what the index receives, so a
  // changed title, metadata or rule action is a change and markup churn is not.
  const indexed = [doc.title, doc.content, doc.meta, doc.canonical ?? null, doc.source, doc.mimeType];
  // The fields added later count only when present: documents without them keep their hashes.
  if (doc.description || doc.language) indexed.push(doc.description ?? null, doc.language ?? null);
  doc.hash = deltaHash({ content: JSON.stringify(indexed) }, randomUUID);
  const keep = ctx.config.scope;
  const canonical = doc.canonical ? normalizeUrl(doc.canonical, page.url, keep) : null;
  // No text, no content to fold: the shells of a JavaScript app (one title, an empty body, the
  // text in scripts) were all one document, every route but one a duplicate of it (helper-52).
  const site = domainOf(new URL(page.url).hostname, ctx.config.domains);
  const dup =
    doc.content.trim() === '' ? undefined : { digest: textDigest(doc.title, doc.content, site), canonical };
  return base(page, 'indexed', { doc, ...(dup ? { dup } : {}), ...(note ? { note } : {}) });
}

/**
 * Cuts a document's title and each metadata value at limits.titleChars / metaValueChars (a page
 * can put megabytes in either; the content is bounded by fetch.maxBytes): what was cut, to count
 * and note.
 */
function boundFields(
  doc: CrawlDocument,
  limits: PageContext['config']['limits'],
  maxUrlLength: number,
): { limit: string; note: string }[] {
  const cut: { limit: string; note: string }[] = [];
  // A canonical no URL of the crawl could be (a search engine refused a 40,000-character one as an
  // immense term, and the document with it) is left out, as a link that long is.
  if (doc.canonical && doc.canonical.length > maxUrlLength) {
    cut.push({
      limit: 'url-too-long',
      note: `canonical of ${doc.canonical.length} characters left out (scope.maxUrlLength ${maxUrlLength})`,
    });
    doc.canonical = null;
  }
  if (doc.title.length > limits.titleChars) {
    cut.push({
      limit: 'limit-title',
      note: `title of ${doc.title.length} characters cut at limits.titleChars (${limits.titleChars})`,
    });
    doc.title = cutAt(doc.title, limits.titleChars);
  }
  let values = 0;
  const bound = (v: string) => {
    if (v.length <= limits.metaValueChars) return v;
    values++;
    return cutAt(v, limits.metaValueChars);
  };
  for (const [name, value] of Object.entries(doc.meta))
    doc.meta[name] = Array.isArray(value) ? value.map(bound) : bound(value);
  if (doc.description) doc.description = bound(doc.description);
  if (values > 0)
    cut.push({
      limit: 'limit-meta-value',
      note: `${values} metadata values cut at limits.metaValueChars (${limits.metaValueChars})`,
    });
  return cut;
}

/** The first `n` UTF-16 units of `s`, one less where the cut would split a surrogate pair. */
function cutAt(s: string, n: number): string {
  const code = s.charCodeAt(n - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/**
 * A start URL (depth 0, its redirect targets too) or a host's root is never a soft 404: a host
 * that answers unknown paths with its home page (a CMS or single-page app's fallback) made the
 * home page look like the probe's answer, and the whole crawl ended at its start URL (helper-48).
 * Its other pages with that text are still soft 404s: a broken link served the home page.
 */
function probeCopies(page: FetchedPage): boolean {
  return page.task.depth === 0 || new URL(page.url).pathname === '/';
}

/** The page's `Refresh: 0; url=…` response header, read as the meta element is; null without one. */
function headerRefresh(page: FetchedPage): { seconds: number; target: string } | null {
  const value = page.headers.refresh;
  const href = value === undefined ? null : refreshTarget(value);
  const target = href !== null && URL.canParse(href, page.url) ? new URL(href, page.url).href : null;
  return value !== undefined && target !== null ? { seconds: Number.parseFloat(value), target } : null;
}
