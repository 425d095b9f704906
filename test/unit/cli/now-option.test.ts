/** `trawl refresh --now`: an ISO date or date-time naming a real day, else exit 2 (ConfigError). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isoTime } from '../../../cli/time-option.ts';
import { ConfigError } from '../../../shared/errors.ts';

describe('--now', () => {
  it('takes ISO dates and date-times', () => {
    assert.equal(isoTime('2026-11-28').toISOString(), '2026-11-28T00:00:00.000Z');
    assert.equal(isoTime('2026-11-28T12:00:00Z').toISOString(), '2026-11-28T12:00:00.000Z');
    assert.equal(isoTime('2026-11-28T12:00:00.250Z').toISOString(), '2026-11-28T12:00:00.250Z');
    assert.equal(isoTime('2026-11-28T12:00+01:00').toISOString(), '2026-11-28T11:00:00.000Z');
    assert.equal(isoTime('2028-02-29T00:00:00Z').toISOString(), '2028-02-29T00:00:00.000Z');
  });

  it('refuses what new Date() quietly took: "1" (the year 2001), "2026-02-30" (2 March), words', () => {
    for (const bad of ['1', '2026-02-30T00:00:00Z', '2027-02-29', 'tomorrow', '2026-13-01', ''])
      assert.throws(
        () => isoTime(bad),
        (e: unknown) => e instanceof ConfigError && /^--now: not an ISO time/.test(e.message),
        bad,
      );
  });
});
