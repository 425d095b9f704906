// A Crawl-delay over limits.crawlDelayMs is capped and warned of once per host and container, not
// once per fetch invocation (helper-44's audit: 8 warnings for one host). delayFor uses only the
// config and the log, so the deps here are a log that records (the rest is never called).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import { parseRobotsTxt } from '../../../shared/crawl/robots/robots.ts';
import type { StageDeps } from '../../../shared/stages/deps.ts';
import { HostTurns } from '../../../shared/stages/politeness/host-turns.ts';

describe('a capped Crawl-delay', () => {
  it('is capped for every invocation and warned of once per host in a container', () => {
    const warnings: unknown[] = [];
    const deps = {
      log: { warn: (...args: unknown[]) => warnings.push(args) },
      now: Date.now,
    } as unknown as StageDeps;
    const config = parseConfig({
      name: 'cap',
      startUrls: ['http://cap.test/'],
      limits: { crawlDelayMs: 3000 },
    });
    const robots = parseRobotsTxt('User-agent: *\nCrawl-delay: 90\n');
    for (let invocation = 0; invocation < 3; invocation++) {
      const turns = new HostTurns(deps, config, Date.now() + 60_000);
      for (const host of ['a.cap.test', 'b.cap.test']) {
        const d = turns.delayFor(host, robots, 'trawl');
        assert.equal(d.delayMs, 3000);
        assert.match(String(d.capped?.note), /Crawl-delay 90 s capped at limits\.crawlDelayMs \(3000 ms\)/);
      }
    }
    assert.equal(warnings.length, 2, 'one a host');
  });
});
