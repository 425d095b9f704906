import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ALLOW_ALL,
  crawlDelayMs,
  DISALLOW_ALL,
  disallowedBy,
  escapePattern,
  getPathParamsQuery,
  isAllowed,
  isValidUserAgentToObey,
  MAX_ROBOTS_BYTES,
  parseRobotsTxt,
  robotsForAgent,
  robotsForStatus,
  robotsParseStats,
  robotsSitemaps,
  robotsUrlFor,
  userAgentToken,
} from '../../../shared/crawl/robots/robots.ts';

// Google's robots_test.cc expectations, copied into the repository (see SOURCE.txt beside them).
const CORPUS_DIRS = [join(import.meta.dirname, '../../fixtures/robotstxt')];
const corpusDir = CORPUS_DIRS.find((d) => existsSync(join(d, 'cases.jsonl')));
if (corpusDir === undefined) throw new Error(`robots corpus not found in ${CORPUS_DIRS.join(', ')}`);

function readJsonl<T>(file: string): T[] {
  const lines = readFileSync(join(corpusDir!, file), 'utf8').split('\n');
  return lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as T);
}

type AllowedCase = { robotstxt: string; user_agent: string; url: string; allowed: boolean; test: string };
type ParseCase = { robotstxt_base64: string; robotstxt?: string; test: string; note?: string } & {
  [stat in 'valid_directives' | 'unknown_directives' | 'last_line_seen']?: number;
} & { sitemap?: string };

const passed = new Map<string, number>();
const totals = new Map<string, number>();

/** A describe with one `it` per corpus line; a case counts as passed only when all its assertions held. */
function corpus<T>(file: string, title: string, name: (c: T) => string, check: (c: T) => void): void {
  const rows = readJsonl<T>(`${file}.jsonl`);
  totals.set(file, rows.length);
  describe(`robots corpus: ${file}.jsonl (${title})`, () => {
    rows.forEach((c, i) => {
      it(`#${i + 1} ${name(c)}`, () => {
        check(c);
        passed.set(file, (passed.get(file) ?? 0) + 1);
      });
    });
  });
}

function short(s: string | undefined, max = 60): string {
  const text = JSON.stringify(s) ?? 'null';
  return text.length > max ? `${text.slice(0, max)}…(${text.length})` : text;
}

corpus<AllowedCase>(
  'cases',
  'IsUserAgentAllowed',
  (c) => `${c.test}: ${short(c.user_agent)} ${short(c.url)} → ${c.allowed}`,
  (c) => {
    const robots = parseRobotsTxt(c.robotstxt);
    assert.equal(isAllowed(robots, c.user_agent, c.url), c.allowed, 'parsed');
    // What the frontier caches must answer the same after a JSON round trip and agent reduction.
    const cached = JSON.parse(JSON.stringify(robots));
    assert.equal(isAllowed(cached, c.user_agent, c.url), c.allowed, 'JSON round trip');
    // The reduced form takes the crawler's URL form: unreserved escapes decoded (below). Google's
    // case that tells /foo/bar/%62%61%7A from /foo/bar/baz is the one it answers otherwise.
    if (!/%(4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9AE]|3[0-9]|2[DE]|5F)/i.test(`${c.robotstxt}${c.url}`))
      assert.equal(
        isAllowed(robotsForAgent(robots, c.user_agent), c.user_agent, c.url),
        c.allowed,
        'reduced',
      );
  },
);

describe('the crawler’s reduced robots.txt: patterns in its URL form (RFC 9309 §2.2.2)', () => {
  it('decodes unreserved escapes in patterns, keeps reserved ones: Disallow /%7Ejoe/ blocks /~joe/', () => {
    // The crawler normalizes /%7Ejoe/p1 to /~joe/p1 before asking: the pattern did not match it, and
    // a page robots.txt disallowed was fetched.
    const robots = robotsForAgent(
      parseRobotsTxt('User-agent: *\nDisallow: /%7Ejoe/\nDisallow: /a%2Fb\nDisallow: /%41%62c'),
      'trawl',
    );
    assert.deepEqual(robots.groups[0]?.disallow, ['/~joe/', '/a%2Fb', '/Abc']);
    assert.equal(isAllowed(robots, 'trawl', 'http://x.test/~joe/p1'), false);
    assert.equal(isAllowed(robots, 'trawl', 'http://x.test/Abc'), false);
    assert.equal(isAllowed(robots, 'trawl', 'http://x.test/a/b'), true, 'an encoded slash is not a slash');
  });
});

// robotstxt_base64 is authoritative (some inputs are not valid UTF-8); the text is checked too.
corpus<ParseCase>(
  'parse_cases',
  'parser statistics',
  (c) => `${c.test}: ${c.note ?? short(c.robotstxt)}`,
  (c) => {
    const bytes = Uint8Array.from(Buffer.from(c.robotstxt_base64, 'base64'));
    for (const input of c.robotstxt === undefined ? [bytes] : [bytes, c.robotstxt]) {
      const stats = robotsParseStats(input);
      if (c.valid_directives !== undefined) assert.equal(stats.validDirectives, c.valid_directives);
      if (c.unknown_directives !== undefined) assert.equal(stats.unknownDirectives, c.unknown_directives);
      if (c.last_line_seen !== undefined) assert.equal(stats.lastLineSeen, c.last_line_seen);
      if (c.sitemap === undefined) continue;
      assert.equal(stats.sitemaps.join(''), c.sitemap);
      assert.deepEqual(robotsSitemaps(parseRobotsTxt(input)), [c.sitemap]);
    }
  },
);

corpus<{ url: string; expected_path: string }>(
  'path_params_query',
  'GetPathParamsQuery',
  (c) => `${short(c.url)} → ${c.expected_path}`,
  (c) => assert.equal(getPathParamsQuery(c.url), c.expected_path),
);

corpus<{ pattern: string; expected: string }>(
  'escape_pattern',
  'MaybeEscapePattern',
  (c) => `${c.pattern} → ${c.expected}`,
  (c) => assert.equal(escapePattern(c.pattern), c.expected),
);

corpus<{ user_agent: string | null; valid: boolean; test: string }>(
  'user_agent_validity',
  'IsValidUserAgentToObey',
  (c) => `${c.test}: ${short(c.user_agent ?? undefined)} → ${c.valid}`,
  (c) => assert.equal(isValidUserAgentToObey(c.user_agent), c.valid),
);

describe('crawl-delay', () => {
  // [what the delay is taken from, robots.txt, expected ms for the agent "trawl"]
  const cases: [string, string, number | null][] = [
    ['the agent group', 'User-agent: trawl\nCrawl-delay: 5\nDisallow: /x', 5000],
    ['a decimal value', 'User-agent: *\nCrawl-delay: 0.5\n', 500],
    ['the agent token case-insensitively', 'User-agent: TRAWL\nCrawl-delay: 2\n', 2000],
    ['the * group when no group names the agent', 'User-agent: *\nCrawl-delay: 3\n', 3000],
    ['none from * when named', 'User-agent: *\nCrawl-delay: 3\nAllow:\nUser-agent: trawl', null],
    [
      'the max of merged groups',
      'User-agent: trawl\nCrawl-delay: 2\nAllow:\nUser-agent: trawl\nCrawl-delay: 7',
      7000,
    ],
    ['each agent of a multi-agent group', 'User-agent: a\nUser-agent: trawl\nCrawl-delay: 4\n', 4000],
    ['no line above the agent', 'User-agent: *\nCrawl-delay: 10\nUser-agent: trawl\nDisallow: /', null],
    ['the typo "crawldelay"', 'User-agent: *\nCrawldelay: 1\n', 1000],
    ['no invalid value', 'User-agent: *\nCrawl-delay: soon\n', null],
    ['no negative value', 'User-agent: *\nCrawl-delay: -1\n', null],
    ['no line before any user-agent line', 'Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n', null],
    ['nothing without crawl-delay', 'User-agent: *\nDisallow: /\n', null],
  ];
  for (const [label, txt, expected] of cases) {
    it(`takes ${label}`, () => {
      assert.equal(crawlDelayMs(parseRobotsTxt(txt), 'trawl'), expected);
    });
  }

  it('does not end a group: Google merges "*" and badbot, so badbot\'s Disallow applies to all', () => {
    const robots = parseRobotsTxt('User-agent: *\nCrawl-delay: 10\n\nUser-agent: badbot\nDisallow: /\n');
    assert.equal(isAllowed(robots, 'trawl', 'https://a.example/'), false);
    assert.equal(crawlDelayMs(robots, 'trawl'), 10000);
  });
});

describe('sitemaps', () => {
  it('collects absolute URLs from anywhere in the file, once each, in order', () => {
    const [s1, s2, s3] = ['https://a.example/s1.xml', 'https://a.example/s2.xml', 'http://b.example/s3.xml'];
    const txt = `Sitemap: ${s1}\nUser-agent: *\nDisallow: /p\nsitemap:${s2} # c\nSite-map: ${s3}\nSitemap: ${s1}`;
    assert.deepEqual(robotsSitemaps(parseRobotsTxt(txt)), [s1, s2, s3]);
  });

  it('drops non-http sitemap URLs, and relative ones when the robots.txt URL is not known', () => {
    const txt =
      'Sitemap: /sitemap.xml\nSitemap: ftp://a.example/s.xml\nSitemap:\nSitemap: https://a.example/ok.xml';
    assert.deepEqual(robotsSitemaps(parseRobotsTxt(txt)), ['https://a.example/ok.xml']);
  });

  it('resolves relative sitemap URLs against the robots.txt URL (they used to be dropped)', () => {
    const txt = 'Sitemap: /sitemap.xml\nSitemap: maps/news.xml\nSitemap:\nSitemap: //cdn.example/s.xml';
    assert.deepEqual(robotsSitemaps(parseRobotsTxt(txt, 'https://a.example/robots.txt')), [
      'https://a.example/sitemap.xml',
      'https://a.example/maps/news.xml',
      'https://cdn.example/s.xml',
    ]);
  });

  it('returns a copy the caller may change', () => {
    const robots = parseRobotsTxt('Sitemap: https://a.example/s.xml');
    robotsSitemaps(robots).push('x');
    assert.deepEqual(robotsSitemaps(robots), ['https://a.example/s.xml']);
  });
});

describe('size cap (500 KiB)', () => {
  const head = 'User-agent: *\nDisallow: /in\n';
  const filler = `# ${'x'.repeat(1000)}\n`;
  const padding = filler.repeat(Math.ceil(MAX_ROBOTS_BYTES / filler.length));

  it('is 500 KiB', () => {
    assert.equal(MAX_ROBOTS_BYTES, 512000);
  });

  for (const [label, toInput] of [
    ['text', (s: string) => s],
    ['bytes', (s: string) => new TextEncoder().encode(s)],
  ] as const) {
    it(`ignores rules past the cap (${label})`, () => {
      const robots = parseRobotsTxt(toInput(`${head}${padding}Disallow: /out\n`));
      assert.equal(isAllowed(robots, 'trawl', 'https://a.example/in'), false);
      assert.equal(isAllowed(robots, 'trawl', 'https://a.example/out'), true);
    });
  }

  it('cuts a rule that straddles the cap at the cap', () => {
    const before = `${head}#`.padEnd(MAX_ROBOTS_BYTES - '\nDisallow: /ab'.length, 'x');
    const robots = parseRobotsTxt(`${before}\nDisallow: /abcdef\n`);
    assert.equal(isAllowed(robots, 'trawl', 'https://a.example/abzzz'), false);
  });

  it('counts bytes, not characters', () => {
    const wide = `# ${'é'.repeat(MAX_ROBOTS_BYTES / 2)}\n`;
    const robots = parseRobotsTxt(`${head}${wide}Disallow: /out\n`);
    assert.equal(isAllowed(robots, 'trawl', 'https://a.example/out'), true);
  });
});

describe('robotsForStatus', () => {
  const cases: Record<ReturnType<typeof robotsForStatus>, number[]> = {
    parse: [200, 204],
    'allow-all': [301, 400, 401, 403, 404, 410],
    'disallow-all': [429, 500, 503, 599, 0, 100],
  };
  for (const [expected, statuses] of Object.entries(cases)) {
    for (const status of statuses) {
      it(`maps ${status} to ${expected}`, () => assert.equal(robotsForStatus(status), expected));
    }
  }

  it('ALLOW_ALL allows and DISALLOW_ALL disallows every URL and agent', () => {
    for (const url of ['https://a.example/', 'https://a.example/x?y', 'https://a.example']) {
      assert.equal(isAllowed(ALLOW_ALL, 'trawl', url), true);
      assert.equal(isAllowed(DISALLOW_ALL, 'trawl', url), false);
      assert.equal(isAllowed(DISALLOW_ALL, '*', url), false);
    }
    assert.equal(crawlDelayMs(DISALLOW_ALL, 'trawl'), null);
    assert.ok(Object.isFrozen(ALLOW_ALL) && Object.isFrozen(DISALLOW_ALL.groups[0]));
  });
});

describe('robotsUrlFor', () => {
  const cases: [string, string][] = [
    ['https://www.example.com/a/b?c=d#e', 'https://www.example.com/robots.txt'],
    ['http://Example.COM:8080/x', 'http://example.com:8080/robots.txt'],
    ['https://example.com:443/x', 'https://example.com/robots.txt'],
    ['https://user:pw@example.com/x', 'https://example.com/robots.txt'],
    ['https://bücher.example/', 'https://xn--bcher-kva.example/robots.txt'],
  ];
  for (const [url, expected] of cases) {
    it(`${url} → ${expected}`, () => assert.equal(robotsUrlFor(url), expected));
  }

  it('throws on a malformed URL', () => {
    assert.throws(() => robotsUrlFor('not a url'), TypeError);
  });
});

describe('userAgentToken', () => {
  const cases: [string, string][] = [
    ['trawl/1.0 (+https://example.com/bot)', 'trawl'],
    ['trawl', 'trawl'],
    // Until 2026-11-28 `Mozilla`: robots.txt groups for the crawler's own name were not applied.
    ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'Googlebot'],
    ['Mozilla/5.0 (compatible; AcmeSearchBot/1.0)', 'AcmeSearchBot'],
    [
      'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0 Safari/537.36',
      'bingbot',
    ],
    // A browser's string names no crawler: its first token.
    ['Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0', 'Mozilla'],
    ['AcmeBot/1.0 (compatible; Mozilla)', 'AcmeBot'],
    ['my_bot-x 2', 'my_bot-x'],
    ['  trawl/1', 'trawl'],
  ];
  for (const [ua, expected] of cases) {
    it(`${ua} → ${expected}`, () => assert.equal(userAgentToken(ua), expected));
  }
});

describe('parsing leniency and grouping', () => {
  const cases: [string, string, string, boolean][] = [
    ['"dissallow" typo', 'User-agent: trawl\nDissallow: /x', '/x', false],
    ['"disalow" typo', 'User-agent: trawl\nDisalow: /x', '/x', false],
    ['"useragent" typo', 'Useragent: trawl\nDisallow: /x', '/x', false],
    ['"user agent" typo', 'User agent: trawl\nDisallow: /x', '/x', false],
    ['a missing colon', 'User-agent trawl\nDisallow /x', '/x', false],
    ['a product token with version', 'User-agent: Trawl/2.0\nDisallow: /x', '/x', false],
    ['an empty disallow', 'User-agent: trawl\nDisallow:\n\nUser-agent: *\nDisallow: /', '/x', true],
    [
      'merged groups',
      'User-agent: trawl\nDisallow: /a\nUser-agent: *\nAllow: /\nUser-agent: trawl\nDisallow: /x',
      '/x',
      false,
    ],
    ['a NUL byte (it ends a line in robots.cc)', 'User-agent: trawl\nDisallow: /a\u0000b', '/ax', false],
    ['lower-case %-escapes in rules', 'User-agent: *\nDisallow: /%e3%83%84', '/%E3%83%84', false],
  ];
  for (const [label, txt, path, expected] of cases) {
    it(`handles ${label}`, () => {
      assert.equal(isAllowed(parseRobotsTxt(txt), 'trawl', `https://a.example${path}`), expected);
    });
  }

  it('keeps the cached form compact: merged groups, no empty rules', () => {
    const robots = parseRobotsTxt(
      'User-agent: a\nDisallow: /x\nDisallow:\nUser-agent: A\nDisallow: /x\nAllow: /y',
    );
    assert.deepEqual(robots.groups, [{ agents: ['a'], allow: ['/y'], disallow: ['/x'] }]);
  });
});

// Runs last (node:test runs a file's tests in order): prints the figure the README quotes.
it('passes every case of the Google robotstxt corpus', () => {
  const line = (file: string) => `${passed.get(file) ?? 0}/${totals.get(file) ?? 0}`;
  const helpers = ['parse_cases', 'path_params_query', 'escape_pattern', 'user_agent_validity'];
  console.log(`robots corpus: ${line('cases')} cases pass`);
  console.log(`robots corpus (parser and helpers): ${helpers.map((f) => `${f} ${line(f)}`).join(', ')}`);
  assert.equal(totals.get('cases'), 145);
  for (const [file, total] of totals) assert.equal(passed.get(file) ?? 0, total, file);
});

describe('disallowedBy: the rule that decided', () => {
  const robots = parseRobotsTxt(
    'User-agent: *\nDisallow: /private/\nDisallow: /private/deep/\nAllow: /private/open/\nDisallow: /*.pdf$\n',
  );
  const cases: [string, string | null][] = [
    ['https://x.test/private/a', '/private/'],
    ['https://x.test/private/deep/b', '/private/deep/'], // the longest match
    ['https://x.test/private/open/c', null], // allow wins a longer match
    ['https://x.test/docs/a.pdf', '/*.pdf$'],
    ['https://x.test/public', null],
  ];
  for (const [url, rule] of cases)
    it(`${url} → ${rule}`, () => {
      assert.equal(disallowedBy(robots, 'trawl', url), rule);
      assert.equal(isAllowed(robots, 'trawl', url), rule === null);
    });
});
