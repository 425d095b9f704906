/**
 * `scope.traps`: crawler-trap limits (issue 17 item 4). Repeating segments and path depth are
 * decided from the URL alone (`trawl explain` shows them); the per-host and per-path caps count
 * the URLs that entered the frontier (hosts table counters); soft 404s are found by one random-path
 * probe per host. Every stop is counted in the crawl summary.
 */
import { z } from 'zod';

export const TrapsSchema = z
  .strictObject({
    /**
     * @default 2 — a block of path segments repeated more than this many times in a row
     * (`/a/b/a/b/a/b/…`) stops the URL (reason `repeating-segments`)
     */
    maxSegmentRepeats: z.number().int().min(1).max(100).default(2),
    /** @default 32 — a URL with more path segments is not followed (reason `path-too-deep`); null: no limit */
    maxPathDepth: z.number().int().positive().nullable().default(32),
    /**
     * @default null — at most this many URLs of one host enter the frontier from links, redirects and
     * sitemaps (start URLs are not counted); the rest are recorded `ignored`, note `trap: host-cap` (as many as the cap, then only counted)
     */
    maxUrlsPerHost: z.number().int().positive().nullable().default(null),
    /**
     * @default 1000 — at most this many variants of one path (query strings, or path parameters: `/cart;x=1`) enter the frontier
     * (infinite calendars, session ids); the rest are recorded `ignored`, note `trap: query-variants` (as many as the cap, then only counted).
     * A site that addresses its pages by query string (WordPress plain permalinks `/?p=N`, `index.php?id=N`,
     * forums' `viewtopic.php?t=N`) has more real variants of one path than that: raise it, or null, for such a site
     * (`trawl urls` shows the stopped ones by their note)
     */
    maxQueryVariantsPerPath: z.number().int().positive().nullable().default(1000),
    /**
     * @default false — fetch one random path per host first; when the host answers it with 200, pages
     * whose text looks like that answer are soft 404s (`error`, code `soft-404`), not documents
     * (never a start URL or a host's root: a host that answers unknown paths with its home page keeps
     * it); the answer is trusted for 24 h, then the host is probed again
     */
    soft404: z.boolean().default(false),
  })
  .prefault({});
export type TrapsConfig = z.infer<typeof TrapsSchema>;
