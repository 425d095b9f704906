// `trawl robots ROBOTS_FILE USER_AGENT URL` as a user runs it (docs/commands.md): the real bin, a temp
// robots.txt; prints allowed/disallowed and exits 0 either way; a missing file exits 2.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const BIN = join(ROOT, 'bin', 'trawl.mjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; killed after 20 s so a hang fails the test instead of blocking it. */
function trawl(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN' },
    });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => (out.stdout += d));
    child.stderr.on('data', (d) => (out.stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ...out });
    });
  });
}

// RFC 9309 §2.2.2: the longest match wins, Allow wins a tie; §2.2.1: the product token is matched
// case-insensitively and a group for the agent replaces the `*` group.
const ROBOTS = [
  'User-agent: *',
  'Disallow: /private/',
  'Allow: /private/open$',
  '',
  'User-agent: FooBot',
  'Disallow: /foo-only',
  '',
].join('\n');

const CASES: [agent: string, url: string, expected: 'allowed' | 'disallowed'][] = [
  ['trawl', 'https://example.com/', 'allowed'],
  ['trawl', 'https://example.com/private/x.html', 'disallowed'],
  ['trawl', 'https://example.com/private/open', 'allowed'],
  ['trawl', 'https://example.com/private/open2', 'disallowed'],
  ['FooBot/2.1', 'https://example.com/foo-only/page', 'disallowed'],
  ['foobot', 'https://example.com/private/x.html', 'allowed'],
];

describe('trawl robots', () => {
  let dir: string;
  let file: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'trawl-robots-'));
    file = join(dir, 'robots.txt');
    writeFileSync(file, ROBOTS);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints allowed or disallowed and exits 0 either way', async () => {
    const runs = await Promise.all(CASES.map(([agent, url]) => trawl(['robots', file, agent, url])));
    runs.forEach((r, i) => {
      const [agent, url, expected] = CASES[i]!;
      assert.equal(r.code, 0, `${agent} ${url}: ${r.stderr}`);
      assert.equal(r.stdout, `${expected}\n`, `${agent} ${url}`);
    });
  });

  it('--as-crawled answers as the crawl does: its normalized URL against decoded patterns', async () => {
    const escaped = join(dir, 'escaped.txt');
    writeFileSync(escaped, 'User-agent: trawl\nDisallow: /%7Ejoe/\nDisallow: /caf%C3%A9\n');
    // [url, as given (robots.cc), as crawled]
    const cases: [string, string, string][] = [
      ['http://h.example/~joe/x', 'allowed', 'disallowed'],
      ['http://h.example/%7Ejoe/x', 'disallowed', 'disallowed'],
      ['http://h.example/café.html', 'allowed', 'disallowed'],
      ['http://h.example/other', 'allowed', 'allowed'],
    ];
    for (const [url, given, crawled] of cases) {
      assert.equal((await trawl(['robots', escaped, 'trawl', url])).stdout, `${given}\n`, url);
      assert.equal(
        (await trawl(['robots', '--as-crawled', escaped, 'trawl', url])).stdout,
        `${crawled}\n`,
        url,
      );
    }
  });

  it('a missing robots file exits 2 and names the file', async () => {
    const missing = join(dir, 'nope.txt');
    const r = await trawl(['robots', missing, 'trawl', 'https://example.com/']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /nope\.txt/);
    assert.doesNotMatch(r.stderr, /at .+\.ts:\d+/, 'no stack trace for a user error');
  });

  it('a malformed URL exits 2 (it used to answer "allowed"); an empty one is Google\'s "/"', async () => {
    const r = await trawl(['robots', file, 'trawl', 'not a url']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /robots: "not a url" is not an absolute URL/);
    assert.equal((await trawl(['robots', file, 'trawl', ''])).code, 0);
  });
});
