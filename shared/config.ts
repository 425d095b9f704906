/**
 * The crawl config: one strict zod schema (unknown keys are errors), defaults for every
 * field but `name` and `startUrls`. The names are fixed (docs/config.md).
 */

import { createHash, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import { AuthSchema, ProxySchema } from './config-auth.ts';
import { LimitsSchema } from './config-limits.ts';
import { RuleSchema } from './config-rules.ts';
import { TrapsSchema } from './config-traps.ts';
import { linearRegexProblem } from './crawl/rules/linear-regex.ts';
import { compileRules, MAX_RULE_DEPTH } from './crawl/rules/rules.ts';
import { DURATION, MAX_DURATION_MS, parseDuration } from './crawl/state/duration.ts';
import { orphanGraceProblem } from './crawl/state/orphans.ts';
import { ConfigError } from './errors.ts';
import { allowEntryProblem } from './net/ip-guard.ts';
import { fetchMemoryMb, fetchMemoryPlan } from './stages/fetch-memory.ts';
import type { StoredConfig } from './stored-config.ts';

export {
  type Rule,
  type RuleAction,
  RuleActionSchema,
  type RuleMatch,
  RuleMatchSchema,
  RuleSchema,
} from './config-rules.ts';
export { parseDuration };

/** Seed 004's default ignored-extension list (Smartsite webcrawler `defaultignoredextensions`). */
export const DEFAULT_IGNORED_EXTENSIONS = [
  '7z', 'asf', 'avi', 'bat', 'bmp', 'cmd', 'com', 'cpl', 'css', 'dll', 'eot', 'exe', 'flv', 'gif', 'hta',
  'ico', 'inf', 'iso', 'jar', 'jpeg', 'jpg', 'js', 'json', 'mp3', 'mp4', 'mpeg', 'mpg', 'msi', 'msp', 'ogg',
  'pif', 'png', 'ps1', 'qt', 'rar', 'reg', 'scr', 'svg', 'tiff', 'ttf', 'vb', 'vbe', 'vbs', 'vob', 'wav',
  'wmv', 'woff', 'woff2', 'xml', 'zip',
]; // biome-ignore format: one list, as the seed writes it

/** The fields of a document (docs/documents.md) that `index.mapping` may rename. */
export const DOCUMENT_FIELDS = [
  'url', 'title', 'content', 'contentType', 'mimeType', 'charset', 'lastModified', 'size', 'hash',
  'depth', 'source', 'meta', 'indexedAt', 'canonical', 'compoundPath', 'description', 'language',
]; // biome-ignore format: one list
/**
 * Fields added after configs were written (2026-11-27): renamable, but a `meta.<name>` lifted to
 * one of their names takes its place, as a mapping written before them did, rather than failing.
 */
const ADDED_FIELDS = new Set(['description', 'language']);

/**
 * Why an `index.mapping` would lose data, or null: a source that is no document field (nor
 * `meta.<name>`), an empty target, or two fields under one name (`{"url": "title"}` dropped the
 * URL from every document).
 */
function mappingProblem(mapping: Record<string, string>): string | null {
  const targets = new Map<string, string>();
  for (const field of DOCUMENT_FIELDS)
    if (!Object.hasOwn(mapping, field) && !ADDED_FIELDS.has(field)) targets.set(field, field);
  for (const [from, to] of Object.entries(mapping)) {
    if (!DOCUMENT_FIELDS.includes(from) && !/^meta\..+/.test(from))
      return `${JSON.stringify(from)} is not a document field (${DOCUMENT_FIELDS.join(', ')}, or meta.<name>)`;
    if (to.trim() === '') return `${JSON.stringify(from)}: the new name is empty`;
    const taken = targets.get(to);
    if (taken !== undefined)
      return `${JSON.stringify(from)} and ${JSON.stringify(taken)} would both be named ${JSON.stringify(to)}`;
    targets.set(to, from);
  }
  return null;
}

const duration = z
  .string()
  .refine((s) => DURATION.test(s.trim()), {
    message: 'must be a duration like "30s", "15m", "1h", "48h" or "2d"',
  })
  // "99999999999d" passed, and every fetch's next refresh time was an invalid date: the crawl never ended.
  .refine((s) => !DURATION.test(s.trim()) || parseDuration(s) <= MAX_DURATION_MS, {
    message: 'must be at most 3650d (10 years)',
  });

// user patterns run on a linear-time engine (RE2 syntax): refuse at load what it cannot run, saying why
const regexString = z.string().superRefine((s, ctx) => {
  const problem = linearRegexProblem(s);
  if (problem)
    ctx.addIssue({ code: 'custom', message: `invalid regular expression ${JSON.stringify(s)}: ${problem}` });
});

// A media type pattern as Content-Type essences are matched (classify.ts): type/subtype, type/*, * or */*.
const MIME_TOKEN = '[a-z0-9!#$&^_.+-]+';
const MIME_PATTERN = new RegExp(`^${MIME_TOKEN}/(${MIME_TOKEN}|\\*)$`);
const MIME_TYPE_ALONE = new RegExp(`^${MIME_TOKEN}$`);
const mimePattern = z
  .string()
  .trim()
  .toLowerCase()
  .superRefine((s, ctx) => {
    if (s === '*' || s === '*/*' || MIME_PATTERN.test(s)) return;
    const hint = MIME_TYPE_ALONE.test(s) ? ` (the whole type is "${s}/*")` : '';
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(s)} is not a media type pattern: type/subtype, type/* or *${hint}`,
    });
  });

const allowEntry = z.string().superRefine((s, ctx) => {
  const problem = allowEntryProblem(s);
  if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(s)}: ${problem}` });
});

/** One PEM certificate (a CA a site's chain ends in): parsed here, so a bad one is a config error. */
const caCertificate = z
  .string()
  .max(64 * 1024)
  .superRefine((s, ctx) => {
    const problem = certificateProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

function certificateProblem(pem: string): string | null {
  if (!/^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\s*$/.test(pem.trim()))
    return 'not one PEM certificate (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)';
  try {
    const cert = new X509Certificate(pem);
    return cert.ca
      ? null
      : `${cert.subject.replace(/\n/g, ', ')} is not a CA certificate (basicConstraints CA:TRUE)`;
  } catch (err) {
    return `not a readable certificate: ${(err as Error).message}`;
  }
}

const httpUrl = z
  .string()
  .refine(
    (s) => {
      try {
        const u = new URL(s);
        return u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        return false;
      }
    },
    { message: 'must be an absolute http(s) URL' },
  )
  .refine(
    (s) => {
      const u = URL.parse(s);
      return u === null || (u.username === '' && u.password === '');
    },
    {
      // The URL's user info is never sent (a normalized URL has none) and the config is stored as written.
      message: 'holds a user name or password (user:password@): give credentials in fetch.auth',
    },
  );

export const ScopeSchema = z
  .strictObject({
    /** @default true — a followed URL's host (with its port) and scheme must match one start URL; false: only its host name must (any scheme and port); the host restriction stays (followOffsite lifts it) */
    sameHostAndScheme: z.boolean().default(true),
    /** @default false — FDSE "Index Entire Site": same directory as a start URL or below (on its host and scheme); it takes the place of the host restriction, so followOffsite has no effect with it */
    underStartPath: z.boolean().default(false),
    /** @default false — lifts the host restriction (not with underStartPath, whose directories are on the start URLs' hosts) */
    followOffsite: z.boolean().default(false),
    /** @default ["http","https"] — the schemes links may have: http, https or both (Trawl fetches nothing else); start URLs are exempt */
    schemes: z
      .array(
        z
          .string()
          .trim()
          .toLowerCase()
          .pipe(
            z.enum(['http', 'https'], { error: 'must be "http" or "https" (Trawl fetches nothing else)' }),
          ),
      )
      .min(1, { error: 'must name at least one scheme' })
      .default(['http', 'https']),
    /** @default 2048 — the longest normalized URL a link may have; start URLs are exempt, but no URL, a start URL, a robots.txt `Sitemap:` line or an archive element's included, is kept past 2048 (the URLs table's key): `url-too-long` */
    maxUrlLength: z.number().int().positive().max(2048).default(2048),
    /** @default true — FDSE "Follow Query Strings" */
    followQueryStrings: z.boolean().default(true),
    /** @default null — null keeps every query parameter; a list keeps only those */
    keepQueryParams: z.array(z.string().min(1)).nullable().default(null),
    /**
     * @default true — session ids are dropped from URLs as they are normalized: path parameters
     * `;jsessionid=`, `;phpsessid=`, `;sessionid=`, `;sid=`, `;aspsessionid…=`, and the query
     * parameters `jsessionid`, `phpsessid`, `sessionid`, `aspsessionid…`, `cfid`, `cftoken` (and
     * `sid` with a value of 16+ letters and digits): a site that puts a new one in every link is
     * otherwise an endless crawl of copies
     */
    stripSessionIds: z.boolean().default(true),
    /** @default [] — substrings of the normalized URL, one of which must occur (a value with non-ASCII characters is also looked for in the URL as it reads: Unicode host, decoded path and query) */
    mustContain: z.array(z.string().min(1)).default([]),
    /** @default [] — substrings of the normalized URL, none of which may occur (non-ASCII values: as for mustContain) */
    mustNotContain: z.array(z.string().min(1)).default([]),
    /** @default [] — regular expressions (RE2 syntax, linear time: no backreferences or lookaround) on the normalized URL (one with non-ASCII characters: also on the URL as it reads, `/privé/` matching `/priv%C3%A9/`); with includes, one must match. A pattern matches anywhere in the URL (a search): anchor it with `^` to match from the start (`^https://www\\.example\\.com/docs/`) */
    include: z.array(regexString).default([]),
    /** @default [] — any matching exclude rejects */
    exclude: z.array(regexString).default([]),
    /** @default seed 004's list — a link whose path's last segment ends in one of these extensions (any case, without the dot; the segment's `;parameters` left out: `/a.css;v=2` is a `css`) is not followed (counted `ignored-extension`) */
    ignoredExtensions: z.array(z.string().min(1)).default(DEFAULT_IGNORED_EXTENSIONS),
    /** @default ["video/*","audio/*","image/*"] — media types, any case, matched against the Content-Type: `type/subtype`, `type/*` (the whole type) or `*` (every type). A match is not downloaded past its headers, stored or indexed */
    ignoredMimeTypes: z.array(mimePattern).default(['video/*', 'audio/*', 'image/*']),
    /** @default null — unlimited; start URLs have depth 0 */
    maxDepth: z.number().int().nonnegative().nullable().default(null),
    /** crawler-trap limits: repeating segments, path depth, URLs per host, query variants per path, soft 404s */
    traps: TrapsSchema,
  })
  .prefault({});

export const FetchSchema = z
  .strictObject({
    /**
     * @default "trawl" — sent as the User-Agent header; robots.txt groups, `<meta name>` and
     * `X-Robots-Tag: NAME:` are matched on its product token: `trawl/1.0 (+https://…)` → `trawl`,
     * `Mozilla/5.0 (compatible; AcmeBot/1.0; +https://…)` → `AcmeBot`
     */
    userAgent: z
      .string()
      .min(1)
      // A header value: a line break would end the header (and smuggle another one).
      .regex(/^[\x20-\x7e\t]+$/, 'must be printable ASCII on one line (it is sent as the User-Agent header)')
      .default('trawl'),
    /** @default true — false is seed 002's "Rogue" mode (robots.txt and meta robots ignored) */
    respectRobotsTxt: z.boolean().default(true),
    /** @default 0 — the gap between request starts per host, across all workers, robots.txt's included; a longer robots.txt Crawl-delay wins (SMILA waitBetweenRequests, seed 004 sleep after load) */
    waitBetweenRequestsMs: z.number().int().nonnegative().default(0),
    /**
     * @default "permanent" — what an HTTP 5xx is (a 503 with `Retry-After` is temporary either way):
     * "permanent", seed 001's rule, deletes the page's document at once; "temporary" keeps it
     * through a server's outage, the URL retried as for a timeout and forgotten after
     * `refresh.maxTemporaryErrors` failures over at least `refresh.maxAge`
     */
    serverErrors: z.enum(['permanent', 'temporary']).default('permanent'),
    /** @default true — false records a 3xx as `ignored` (note `redirect not followed: …`) instead of queueing its target */
    followRedirects: z.boolean().default(true),
    /** @default 5 — redirects followed from a link, HTTP 3xx and instant meta refreshes alike; the hop past them is a permanent `too-many-redirects` error, and a refresh of a redirect target continues the chain it was reached by */
    maxRedirects: z.number().int().nonnegative().max(30).default(5),
    /** @default 30000 — the whole response's deadline (SMILA socketTimeout); a host that sends nothing back to two requests in a row (from two of its sections, first path segments; from one, that section only) is held, its URLs counting attempts unsent (`host-not-answering`) */
    timeoutMs: z.number().int().positive().default(30_000),
    /** @default 10485760 — stop reading past this; what fits is kept */
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(10 * 1024 * 1024),
    /**
     * @default null — SMILA proxyHost/proxyPort: `{host, port}`, with `username` and `password` (a
     * secret as in `auth`) when the proxy wants a login (Basic `Proxy-Authorization`, sent to the
     * proxy only; README "Authentication")
     */
    proxy: ProxySchema.nullable().default(null),
    /**
     * @default false — loopback/private/link-local targets are refused unless true, or unless
     * listed: a list of CIDRs, IPs and host names (e.g. ["10.20.0.0/16", "intranet.corp"]) allows
     * just those (never the crawl's own emulator, local cloud or embedded search engine, whatever it
     * says); checked on every hop, through a proxy too — there on Trawl's own resolution of the
     * name (fetch.resolve, else DNS), and the proxy resolves it again: a name whose DNS answer
     * changes in between (rebinding) is the proxy's egress rules to refuse; a fetch.resolve entry is
     * what the proxy is asked for (CONNECT and plain http alike), so it cannot change
     */
    allowPrivateNetworks: z.union([z.boolean(), z.array(allowEntry)]).default(false),
    /** @default {} — host -> IP, like curl --resolve; through fetch.proxy, the address the proxy is asked to reach (the Host header and TLS name stay the URL's) */
    resolve: z
      .record(
        z.string(),
        z.string().refine((ip) => isIP(ip) !== 0, 'must be an IPv4 or IPv6 address'),
      )
      .default({}),
    /**
     * @default [] — PEM CA certificates trusted for https besides the system's (an intranet's own
     * CA); public certificates, not secrets. Certificates are always verified: there is no way to
     * turn verification off
     */
    caCertificates: z.array(caCertificate).max(32).default([]),
    /**
     * @default 4 — HTTP keep-alive: a connection whose response was read whole is kept this long
     * for the next request to the same site by the same fetcher (a warm Lambda container keeps it
     * between invocations), saving that request its DNS, TCP and TLS round trips; under the 5 s
     * idle timeout of Apache httpd, the shortest common server default. 0: one connection per
     * request (`Connection: close`)
     */
    keepAliveSeconds: z.number().min(0).max(60).default(4),
    /** @default 16 — concurrent fetches in one fetch invocation */
    concurrency: z.number().int().positive().max(256).default(16),
    /**
     * @default 4 — requests to one host in flight at once in one fetch invocation, when the host
     * asks for no delay (no `waitBetweenRequestsMs`, no robots.txt Crawl-delay); with a delay,
     * requests to a host are spaced by it across all workers, one at a time
     */
    connectionsPerHost: z.number().int().positive().max(64).default(4),
    /**
     * @default 4 — fetch invocations running at once: the deployed fetch function's reserved
     * concurrency (`cdk deploy` with this config) and the local runner's parallel fetchers. With
     * `concurrency` it bounds the requests in flight (maxInvocations × concurrency); raise it for
     * many hosts, since politeness is per host and an invocation with no due host ends at once
     */
    maxInvocations: z.number().int().min(1).max(1000).default(4),
    /**
     * @default null — the deployed fetch function's memory in MB; null sizes it from `concurrency`
     * and `maxBytes` (160 MB for the defaults: README "Fetch memory"). An invocation holds what its
     * memory allows, whatever the size: large bodies are read fewer at a time in less
     */
    memoryMb: z.number().int().min(128).max(10_240).nullable().default(null),
    /**
     * @default [] — credentials per URL prefix: `{urlPrefix, basic | bearer | headers | cookies | form}`, secrets
     * as `{"env": "NAME"}` or `{"secretArn": "…"}` (README "Authentication")
     */
    auth: AuthSchema,
  })
  .prefault({});

export const ExtractSchema = z
  .strictObject({
    /** @default ["header","footer"] — HTML element names (tag names, any case; not CSS selectors) whose text, and that of everything inside them, is left out of `content`; their links are still followed. By name, wherever they are (seed 004): an `<article>`'s own `<header>` (its headline, its byline) goes too; `[]` keeps them, `removeClasses` removes by class */
    removeElements: z
      .array(
        // A CSS selector was accepted and matched nothing, silently (helper-47).
        z
          .string()
          .regex(
            /^[A-Za-z][A-Za-z0-9:_-]*$/,
            'not an element name (a CSS selector such as "div.sidebar" or "#nav" matches nothing here: removeClasses takes class names)',
          ),
      )
      .default(['header', 'footer']),
    /** @default ["noindex"] — class names: an element with one of them in its `class` (any case) is left out of `content` as `removeElements` are */
    removeClasses: z
      .array(
        z
          .string()
          // A selector's leading "." or "#" never matches; a "." inside is a class name's own (Tailwind's `w-1.5`).
          .regex(
            /^[^\s.#]\S*$/,
            'a class name, without a leading "." or "#" and without spaces (one name an entry)',
          ),
      )
      .default(['noindex']),
    /** @default true — `<meta name="robots">` (and the crawler's own name) and `X-Robots-Tag` headers: `noindex` keeps a page or file out of the index, `nofollow` its links unfollowed; false ignores both */
    honorMetaRobots: z.boolean().default(true),
    /**
     * @default true — a link whose `rel` says `nofollow` (`<a>`, `<area>`) is not followed from that
     * page (counted as rejected `rel-nofollow`), as Algolia's crawler and mnoGoSearch do; the page itself
     * is still reached through other links. Ignored in rogue mode (`fetch.respectRobotsTxt: false`).
     */
    honorRelNofollow: z.boolean().default(true),
    /**
     * @default false — true: a page whose `<link rel="canonical">` (or a document whose
     * `Link: <…>; rel="canonical"` header, as a PDF's) names another URL the crawl accepts is not indexed (state `followed`, its note names the canonical); the canonical is fetched and
     * indexed instead (Norconex's and Algolia's crawlers' default); should the canonical end as no
     * document (an error, robots.txt, noindex, a redirect back), the page is indexed after all. False: the canonical is recorded
     * (the `canonical` field) and only decides which URL keeps a duplicate's content (Elastic's way)
     */
    honorCanonical: z.boolean().default(false),
    /**
     * @default {} — "<meta name or property>": "<document field>"; a PDF's Author, Subject and
     * Keywords, and an Office document's creator, subject and keywords, are mapped under the names
     * `author`, `subject` and `keywords`
     */
    metadataMapping: z.record(z.string(), z.string()).default({}),
  })
  .prefault({});

export const RefreshSchema = z
  .strictObject({
    /** @default "1h" — how often the discovery schedule seeds the crawl again: start URLs, sitemaps and feeds read for new URLs (EventBridge on AWS, `trawl crawl --watch` here) */
    discoveryInterval: duration.default('1h'),
    /**
     * @default "48h" — a document is refetched (conditionally) once it is this old. The refresh
     * cycle (EventBridge on AWS, the timer of `trawl crawl --watch`) runs every quarter of the
     * shortest refresh interval (this, `adaptive.min` or a rule's min), 1 minute to 1 hour
     */
    maxAge: duration.default('48h'),
    /**
     * @default 3 — a URL failing temporarily more than this many fetches in a row (1 h, 2 h, 4 h…
     * apart), and for at least `maxAge`, loses its document and is forgotten
     */
    maxTemporaryErrors: z.number().int().nonnegative().default(3),
    /**
     * @default null — adaptive refresh: each URL starts at `maxAge`; its interval halves when a
     * refresh finds it changed and doubles when it finds it unchanged (304 or the same delta
     * hash), kept within [min, max]. null: every URL is refreshed every `maxAge`. A crawl rule's
     * `{"refresh": {"min", "max"}}` action sets the bounds for the URLs it matches
     */
    adaptive: z
      .strictObject({ min: duration, max: duration })
      .refine((b) => parseDuration(b.min) <= parseDuration(b.max), { message: 'min must not exceed max' })
      .nullable()
      .default(null),
    /**
     * @default null — orphans: a page that no fetched page links to and no sitemap lists any more
     * for this long is deleted by the refresh cycle (change-feed reason `orphan`), even though it
     * still answers 200. A duration, or a number N of refresh cycles (N × the longest refresh
     * interval: maxAge, adaptive.max or a rule's max); at least three times that interval.
     * null: never. While set, a page whose links are followed is refreshed without
     * If-Modified-Since once its links were last read a quarter of the grace ago (a 304 carries
     * no links), and each link found stamps its target at most every quarter of the grace (one
     * write unit). A cycle long after the last one (more than half the grace) does not count the
     * time no cycle ran: it deletes only pages whose stamp is half a grace older than that last cycle
     */
    orphanGrace: z
      .union([duration, z.number().int().min(3)])
      .nullable()
      .default(null),
  })
  .prefault({});

/** A TLD list: an array, or seed 000's space-delimited string (`"com gov org"`). */
const tldList = () =>
  z
    .union([z.array(z.string().min(1)), z.string().transform((v) => v.split(/\s+/).filter(Boolean))])
    .nullable()
    .prefault(null);

export const ConfigSchema = z.strictObject({
  /** names the crawl's resources: 1-31 lower-case letters, digits and dashes, starting with a letter or digit */
  name: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9-]{0,30}$/,
      'must be 1-31 lower-case letters, digits or dashes, starting alphanumeric',
    ),
  /** where the crawl starts (depth 0): http(s) URLs; a followed URL's host and scheme must match one of them unless `scope` says otherwise */
  startUrls: z.array(httpUrl).min(1),
  /** @default [] — sitemap, sitemap index or RSS/Atom feed URLs read for their entries (gzip too), beside those robots.txt `Sitemap:` lines name */
  sitemaps: z.array(httpUrl).default([]),
  /** @default true — false: only start URLs and sitemap/feed entries are fetched, no page's links followed */
  discovery: z.boolean().default(true),
  /** which links are followed: hosts, paths, patterns, depth, crawler traps */
  scope: ScopeSchema,
  /** @default [] — JSON rules, or the seed's XML form as one string */
  rules: z.union([z.array(RuleSchema), z.string().min(1)]).default([]),
  /** how a host's domain name is found (crawl rules' `{"domain"}` match, `trawl domain`) */
  domains: z
    .strictObject({
      /** @default null — null (and `additional` null): the Public Suffix List decides a host's domain name; a list of generic TLDs (`["com", "org"]`, or seed 000's space-delimited `"com org"`): seed 000's algorithm, which either list turns on instead of the PSL */
      generic: tldList(),
      /** @default null — the extra suffixes seed 000's algorithm treats as TLDs (`co.uk`…; a list or a space-delimited string); set alone, it turns that algorithm on with no generic TLD (a host under none of them is its last two terms), not the PSL plus these */
      additional: tldList(),
    })
    .prefault({}),
  /** how pages are requested: politeness, timeouts, sizes, proxy, credentials */
  fetch: FetchSchema,
  /** what is taken from a fetched page: its text, metadata, robots and canonical hints */
  extract: ExtractSchema,
  /** when the crawl seeds again and documents are refetched or forgotten */
  refresh: RefreshSchema,
  /** what becomes of documents: duplicates, field names, the search index */
  index: z
    .strictObject({
      /**
       * @default {} — renames document fields in `trawl docs`' output only (the S3 bulks, the
       * change feed and the search index keep their names), e.g. `{"url": "Path"}`; `meta.<name>`
       * lifts a metadata value to a field of its own
       */
      mapping: z
        .record(z.string(), z.string())
        .default({})
        .superRefine((mapping, ctx) => {
          const problem = mappingProblem(mapping);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
      /**
       * @default true — pages of one site (domain name: `www.example.com` and `example.com` are one)
       * with the same normalized text are one document, kept by the canonical (else shortest) URL;
       * pages of two sites never fold (another site's copy cannot take a page over); the others get state `duplicate` (costs one conditional write per new document);
       * archive elements (`archive.zip/a.txt`) are not folded: each stays its archive's document, and
       * neither are pages with no text (a JavaScript app's shells: one title, an empty body)
       */
      foldDuplicates: z.boolean().default(true),
      /** "feed": S3 documents + change feed only; "opensearch": also a search index */
      sink: z.enum(['feed', 'opensearch']).default('feed'),
      /** the search index, when `sink` is "opensearch" */
      opensearch: z
        .strictObject({
          /** null: the embedded engine locally, the stack's collection on AWS */
          endpoint: z
            .url({ protocol: /^https?$/, error: 'an http:// or https:// URL (e.g. http://localhost:9200)' })
            .nullable()
            .default(null),
          /** null: trawl-<crawl name> */
          indexName: z
            .string()
            .regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, - and _')
            .nullable()
            .default(null),
        })
        .prefault({}),
    })
    .prefault({}),
  /** bounds on what comes from outside (pages, sitemaps, PDFs, archives, headers) and on the config */
  limits: LimitsSchema,
  /**
   * @default {} — source weights for weighted polling (seed 001); between URLs waiting for one polite
   * host too, the heavier source takes the next turn
   */
  weights: z
    .strictObject({
      /** start URLs, the seed's user-submitted root URLs (default 10000) */
      user: z.number().int().positive().optional(),
      /** redirect targets (default 2000) */
      redir: z.number().int().positive().optional(),
      /** links to pages indexed, not followed (default 1000) */
      index: z.number().int().positive().optional(),
      /** links to pages indexed and followed (default 100) */
      index_follow: z.number().int().positive().optional(),
      /** links to pages followed, not indexed (default 10) */
      follow: z.number().int().positive().optional(),
      /** the refresh cycle's re-fetches (default 1) */
      refresh: z.number().int().positive().optional(),
    })
    .default({}),
});

export type CrawlConfig = z.infer<typeof ConfigSchema>;
export type CrawlConfigInput = z.input<typeof ConfigSchema>;

let format: string | null = null;

/**
 * The fingerprint of the normalised config's shape (its JSON Schema): a stored config carries it
 * and each function is given it (shared/stored-config.ts), so a function trusts only a config
 * normalised by the schema it was built with.
 */
export function configFormat(): string {
  format ??= `trawl-config/${createHash('sha256')
    .update(JSON.stringify(z.toJSONSchema(ConfigSchema, { io: 'output', unrepresentable: 'any' })))
    .digest('hex')
    .slice(0, 16)}`;
  return format;
}

/** What `trawl crawl` and `trawl deploy` write at CONFIG_KEY for the functions. */
export function storedConfig(config: CrawlConfig): StoredConfig {
  return { format: configFormat(), config };
}

function ruleError(rules: unknown): string | null {
  try {
    compileRules(rules as CrawlConfig['rules']);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
  }
  return null;
}

/** The path of the first JSON rule match nested deeper than MAX_RULE_DEPTH, or null (no recursion). */
function tooDeepRule(rules: unknown): string | null {
  if (!Array.isArray(rules)) return null;
  const stack: [unknown, string, number][] = rules.map((r, i) => [
    (r as { match?: unknown } | null)?.match,
    `rules.${i}.match`,
    0,
  ]);
  while (stack.length > 0) {
    const [node, path, depth] = stack.pop() as [unknown, string, number];
    if (depth > MAX_RULE_DEPTH) return path;
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      if (Array.isArray(child))
        for (const [i, c] of child.entries()) stack.push([c, `${path}.${key}.${i}`, depth + 1]);
      else if (key === 'not') stack.push([child, `${path}.not`, depth + 1]);
    }
  }
  return null;
}

/** A `fetch.memoryMb` too small for the bodies of `fetch.concurrency` requests (fetch-memory.ts). */
function fetchMemoryProblem(fetch: CrawlConfig['fetch']): string | null {
  if (fetch.memoryMb === null || fetchMemoryPlan(fetch.memoryMb, fetch).fits) return null;
  const sized = fetchMemoryMb({ ...fetch, memoryMb: null });
  // The least that holds them (the default sizes with room to spare: 140 passed where the message
  // said "at least 160", helper-47).
  let least = fetch.memoryMb + 1;
  while (least < sized && !fetchMemoryPlan(least, fetch).fits) least++;
  return (
    `${fetch.memoryMb} MB does not hold the bodies of fetch.concurrency (${fetch.concurrency}) ` +
    `requests beside the runtime: at least ${least} MB (null sizes it: ${sized} MB), or lower fetch.concurrency`
  );
}

/** Validates a parsed config object; throws ConfigError naming `source`, the field path and the reason. */
export function parseConfig(raw: unknown, source = 'config'): CrawlConfig {
  // The schema is recursive: rules nested thousands deep overflowed the stack in it.
  const deep = tooDeepRule((raw as { rules?: unknown } | null)?.rules);
  if (deep) throw new ConfigError(`${source}: ${deep}: nested deeper than ${MAX_RULE_DEPTH} levels`);
  const result = ConfigSchema.safeParse(raw);
  if (result.success) {
    // What the schema cannot see (a rule's refresh bounds, contradicting actions): at load, not
    // when the first stage compiles the rules.
    const rule = ruleError(result.data.rules);
    if (rule) throw new ConfigError(`${source}: ${rule}`);
    const problem = orphanGraceProblem(result.data);
    if (problem) throw new ConfigError(`${source}: refresh.orphanGrace: ${problem}`);
    const memory = fetchMemoryProblem(result.data.fetch);
    if (memory) throw new ConfigError(`${source}: fetch.memoryMb: ${memory}`);
    return result.data;
  }
  const lines = result.error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.');
    // A rule that fits no branch of the unions: the rule compiler names the exact field instead.
    if (issue.path[0] === 'rules' && issue.code === 'invalid_union') {
      const precise = ruleError((raw as { rules?: unknown }).rules);
      if (precise) return [`${source}: ${precise}`];
    }
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(issue.path);
      return issue.keys.map(
        (k) => `${source}: ${path ? `${path}.` : ''}${k}: unknown key${didYouMean(k, known)}`,
      );
    }
    return [`${source}: ${path || '(root)'}: ${unionMessage(issue, raw) ?? issue.message}`];
  });
  throw new ConfigError([...new Set(lines)].join('\n'));
}

// biome-ignore lint/suspicious/noExplicitAny: zod's internals (the schema's definition tree)
type AnySchema = any;
const WRAPPERS = new Set(['prefault', 'default', 'optional', 'nullable', 'readonly', 'catch', 'nonoptional']);

/** The keys the schema knows for the object at `path` (none when it is not an object there). */
function keysAt(path: PropertyKey[]): string[] {
  const unwrap = (schema: AnySchema): AnySchema => {
    let x = schema;
    while (x?._zod?.def && WRAPPERS.has(x._zod.def.type)) x = x._zod.def.innerType;
    if (x?._zod?.def?.type === 'pipe') return unwrap(x._zod.def.in);
    return x;
  };
  let schema: AnySchema = ConfigSchema;
  for (const segment of path) {
    const def = unwrap(schema)?._zod?.def;
    if (def?.type === 'object') schema = def.shape[segment as string];
    else if (def?.type === 'array') schema = def.element;
    else if (def?.type === 'record') schema = def.valueType;
    else return [];
  }
  const def = unwrap(schema)?._zod?.def;
  return def?.type === 'object' ? Object.keys(def.shape) : [];
}

/** ` (did you mean "maxDepth"?)` for a key one slip away from a known one, else nothing. */
function didYouMean(key: string, known: string[]): string {
  const lower = key.toLowerCase();
  let best: { key: string; d: number } | null = null;
  for (const k of known) {
    const d = k.toLowerCase() === lower ? 0 : editDistance(lower, k.toLowerCase());
    if (d <= Math.max(2, Math.floor(k.length / 4)) && (!best || d < best.d)) best = { key: k, d };
  }
  return best ? ` (did you mean "${best.key}"?)` : '';
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 99;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = row;
  }
  return prev[b.length] ?? 99;
}

/**
 * A value that fits none of a field's forms, each wrong in its type: what the forms are and what
 * was given (zod says only "Invalid input"). YAML 1.2 reads yes/no/on/off as text.
 */
function unionMessage(issue: { code: string; path: PropertyKey[] }, raw: unknown): string | null {
  const branches = (issue as { errors?: { code: string; path: PropertyKey[]; expected?: string }[][] })
    .errors;
  if (issue.code !== 'invalid_union' || !branches?.length) return null;
  const tops = branches.map((b) => b.find((i) => i.path.length === 0 && i.code === 'invalid_type'));
  if (tops.some((t) => !t?.expected)) return null;
  let value: unknown = raw;
  for (const segment of issue.path) value = (value as Record<PropertyKey, unknown> | null)?.[segment];
  const expected = [...new Set(tops.map((t) => t?.expected as string))];
  const given = JSON.stringify(value) ?? String(value);
  const yaml =
    expected.includes('boolean') && typeof value === 'string' && /^(yes|no|on|off|y|n)$/i.test(value)
      ? ` (YAML reads ${value} as text: write true or false)`
      : '';
  return `expected ${expected.join(' or ')}, not ${given.length > 60 ? `${given.slice(0, 60)}…` : given}${yaml}`;
}
