/** Which sitemap dates say a page changed since the sitemap's last read (page-sitemap.ts changeDates). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeDates } from '../../../shared/crawl/page/page-sitemap.ts';
import type { FetchedPage } from '../../../shared/types.ts';

const READ = '2026-11-28T10:00:00.000Z';
const NOW = '2026-11-28T12:00:00.000Z';
const sitemap = (lastFetched?: string) =>
  ({
    url: 'https://a.example/sitemap.xml',
    task: {
      url: 'https://a.example/sitemap.xml',
      depth: 0,
      queue: 'user',
      index: false,
      follow: true,
      priority: 0,
      kind: 'sitemap',
      ...(lastFetched
        ? {
            prev: {
              url: 'https://a.example/sitemap.xml',
              state: 'followed',
              depth: 0,
              queue: 'user',
              lastFetched,
            },
          }
        : {}),
    },
  }) as unknown as FetchedPage;
const entry = (lastmod?: string) => ({ loc: 'https://a.example/x', ...(lastmod ? { lastmod } : {}) });

describe('sitemap dates (changeDates)', () => {
  it('a date after the last read less a day is a change, in UTC; an older one, none or not a date is not', () => {
    const { changedAt, note } = changeDates(sitemap(READ), [entry()], NOW);
    assert.equal(changedAt(entry('2026-11-28T11:30:00+01:00')), '2026-11-28T10:30:00.000Z');
    assert.equal(changedAt(entry('2026-11-28T11:30:00Z')), '2026-11-28T11:30:00.000Z');
    // Before the read, within a day of it: a change a cron-regenerated sitemap listed late (the
    // refresh fetches the page only when it was last fetched before the date).
    assert.equal(changedAt(entry('2026-11-28T10:30:00+01:00')), '2026-11-28T09:30:00.000Z', '09:30 UTC');
    assert.equal(changedAt(entry('2026-11-28T09:59:59Z')), '2026-11-28T09:59:59.000Z');
    assert.equal(changedAt(entry('2026-11-28')), '2026-11-28T00:00:00.000Z', 'midnight, before the read');
    assert.equal(changedAt(entry('2026-11-27T09:59:59Z')), undefined, 'more than a day before the read');
    assert.equal(changedAt(entry()), undefined);
    assert.equal(note, undefined);
  });

  it('a date ahead of the clock (a server in another zone) is not used', () => {
    const { changedAt } = changeDates(sitemap(READ), [], NOW);
    assert.equal(changedAt(entry('2026-11-28T12:04:00Z')), '2026-11-28T12:04:00.000Z');
    assert.equal(changedAt(entry('2026-11-29')), undefined);
  });

  it("a sitemap's first read has nothing to compare with", () => {
    assert.equal(changeDates(sitemap(), [], NOW).changedAt(entry('2026-11-28T11:00:00Z')), undefined);
  });

  it('a sitemap most of whose entries (10 or more) changed since its last read is not believed', () => {
    const changed = Array.from({ length: 10 }, () => entry('2026-11-28T11:00:00Z'));
    const still = Array.from({ length: 9 }, () => entry('2026-01-01'));
    const untrusted = changeDates(sitemap(READ), [...changed, ...still], NOW);
    assert.equal(untrusted.changedAt(entry('2026-11-28T11:00:00Z')), undefined);
    assert.equal(
      untrusted.note,
      `lastmod not used: 10 of 19 entries say they changed since the last read (${READ})`,
    );
    // Half or fewer, or fewer than ten: believed.
    const half = changeDates(sitemap(READ), [...changed, ...still, entry()], NOW);
    assert.equal(half.note, undefined);
    assert.equal(changeDates(sitemap(READ), changed.slice(1), NOW).note, undefined);
  });
});
