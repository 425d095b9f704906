/**
 * The real `trawl` CLI (bin/trawl.mjs) for issue #3: `explain` and `domain` as docs/commands.md says
 * (no AWS, no network), and bad input exiting 2 with the file and field path and no stack trace.
 * The `trawl crawl` summary and `trawl urls` are checked in scope-rules.test.ts (it has the emulator).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import { EXPLAIN_FIELDS } from '../helpers/contract.ts';

const BIN = join(PROJECT_ROOT, 'bin', 'trawl.mjs');
const cwd = mkdtempSync(join(tmpdir(), 'trawl-cli-'));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment without any AWS setting: explain and domain must not need one. */
function noAwsEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  return { ...env, POWERTOOLS_LOG_LEVEL: 'WARN' };
}

/** Runs `trawl ARGS` in the temp dir; bounded by a timeout so a hung command fails the test. */
function trawl(args: string[], env: NodeJS.ProcessEnv = noAwsEnv()): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Writes a file in the temp dir and returns its name (relative: the CLI runs there). */
function file(name: string, content: unknown): string {
  writeFileSync(join(cwd, name), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return name;
}

/** User errors: exit 2, a message on stderr, no stack trace ("    at " frames). */
function assertUserError(r: Run, ...mentions: (string | RegExp)[]): void {
  assert.equal(r.code, 2, `exit code, stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  for (const m of mentions) {
    if (typeof m === 'string') assert.ok(r.stderr.includes(m), `stderr should mention ${m}: ${r.stderr}`);
    else assert.match(r.stderr, m);
  }
}

const START = 'https://www.example.com/docs/';
const base = { name: 'cli-test', startUrls: [START] };
const withRules = (rules: unknown) => ({ ...base, rules });
/** `traps` of explain under the default scope.traps, for a path of `depth` segments. */
const defaultTraps = (depth: number) => ({
  stoppedBy: null,
  pathDepth: depth,
  maxPathDepth: 32,
  maxSegmentRepeats: 2,
  hostCap: null,
  queryVariants: null,
  soft404Probe: false,
});

describe('trawl explain and trawl domain (no AWS, no network)', { concurrency: 2 }, () => {
  it('explain prints one JSON object with exactly the documented fields', async () => {
    const r = await trawl([
      'explain',
      '-c',
      file('plain.json', base),
      'https://WWW.example.com:443/blog/../a.html#x',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const answer = JSON.parse(lines[0]!);
    assert.deepEqual(Object.keys(answer), EXPLAIN_FIELDS);
    assert.deepEqual(answer, {
      normalized: 'https://www.example.com/a.html',
      domain: 'example.com',
      accepted: true,
      reason: 'default',
      index: true,
      follow: true,
      queue: 'index_follow',
      priorityShift: 0,
      source: null,
      addMeta: [],
      depth: 1,
      traps: defaultTraps(1),
    });
  });

  it('explain names the rule that decided, with its actions (JSON rules)', async () => {
    const rules = [
      { match: { path: '/private' }, actions: ['ignore'] },
      {
        match: { ext: '.pdf' },
        actions: [
          'index',
          'noFollow',
          { source: 'pdfs' },
          { addMeta: { name: 'kind', value: 'pdf' } },
          { priority: -1 },
        ],
      },
    ];
    const config = file('rules.json', withRules(rules));
    const [pdf, secret] = await Promise.all([
      trawl(['explain', '-c', config, 'https://www.example.com/r/a.PDF']),
      trawl(['explain', '-c', config, 'https://www.example.com/private/x']),
    ]);
    assert.deepEqual(JSON.parse(pdf.stdout), {
      normalized: 'https://www.example.com/r/a.PDF',
      domain: 'example.com',
      accepted: true,
      reason: 'rule 1: index, noFollow, source=pdfs, addMeta kind=pdf, priority -1',
      index: true,
      follow: false,
      queue: 'redir',
      priorityShift: -1,
      source: 'pdfs',
      addMeta: [{ name: 'kind', value: 'pdf' }],
      depth: 1,
      traps: defaultTraps(2),
    });
    assert.equal(JSON.parse(secret.stdout).reason, 'rule 0: ignore');
    assert.equal(JSON.parse(secret.stdout).accepted, false);
  });

  it('explain reads YAML configs and XML rules; a start URL goes to the user queue', async () => {
    const yaml = [
      'name: cli-xml',
      `startUrls: ["${START}"]`,
      'rules: |',
      '  <Rules><Rule><Path val="/docs"/><NoIndex/><Follow/><Accept/></Rule></Rules>',
    ].join('\n');
    const config = file('xml.yaml', yaml);
    const [start, link] = await Promise.all([
      trawl(['explain', '-c', config, START]),
      trawl(['explain', '-c', config, 'https://www.example.com/docs/list']),
    ]);
    assert.equal(start.code, 0, start.stderr);
    assert.deepEqual(
      [JSON.parse(start.stdout).reason, JSON.parse(start.stdout).queue, JSON.parse(start.stdout).index],
      ['start-url', 'user', false],
    );
    assert.deepEqual(
      [JSON.parse(link.stdout).reason, JSON.parse(link.stdout).queue],
      ['rule 0: noIndex, follow, accept', 'follow'],
    );
  });

  it('explain answers for opaque URLs (accepted false, reason opaque-url) and exits 2 for malformed ones', async () => {
    const config = file('plain2.json', base);
    const [mail, relative] = await Promise.all([
      trawl(['explain', '-c', config, 'mailto:web@example.com']),
      trawl(['explain', '-c', config, '/docs/a.html']),
    ]);
    assert.equal(mail.code, 0, mail.stderr);
    assert.deepEqual(
      [JSON.parse(mail.stdout).accepted, JSON.parse(mail.stdout).reason],
      [false, 'opaque-url'],
    );
    assertUserError(relative, 'not an absolute URL', '"/docs/a.html"');
  });

  it('domain without a config uses the Public Suffix List, one line per URL', async () => {
    const r = await trawl([
      'domain',
      'http://www.xyz.co.uk/',
      'https://docs.example.com:8443/a',
      'foo.blogspot.com',
      'http://127.0.0.1:8080/',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), [
      'xyz.co.uk',
      'example.com',
      'foo.blogspot.com',
      '127.0.0.1',
    ]);
    assert.equal(r.stderr, '');
  });

  it('domain -c uses seed 000 lists; a miss prints the DEBUG line with the URL on stderr', async () => {
    const config = file('seed000.json', {
      ...base,
      domains: { generic: ['com', 'gov', 'org'], additional: ['co.uk', 'ca'] },
    });
    const r = await trawl([
      'domain',
      '-c',
      config,
      'http://www.xyz.com',
      'http://www.xyz.co.uk',
      'www.xyz.ca',
      'http://www.abc.ma.us/x',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), ['xyz.com', 'xyz.co.uk', 'xyz.ca', 'ma.us']);
    assert.equal(
      r.stderr,
      'DEBUG Failed to get the domain name for url: http://www.abc.ma.us/x using ma.us as the default domain name\n',
    );
  });

  it('domain with a malformed URL exits 2', async () => {
    assertUserError(
      await trawl(['domain', 'http://exa mple.com/']),
      'not a valid URL',
      '"http://exa mple.com/"',
    );
    // A scheme without its "://" was read as a bare host named "http".
    assertUserError(await trawl(['domain', 'http//www.example.co.uk/x']), 'not a valid URL', 'needs "://"');
    const bare = await trawl(['domain', 'localhost:8080', 'www.example.co.uk']);
    assert.equal(bare.stdout, 'localhost\nexample.co.uk\n', 'bare hosts, with a port too, are still hosts');
  });

  it('explain and domain never start the embedded emulator', () => {
    assert.equal(existsSync(join(cwd, '.trawl')), false);
  });
});

/** Bad rules: [label, rules, the path and words stderr must show]. */
// biome-ignore format: one bad rule per line
const BAD_RULES: [string, unknown, string[]][] = [
  ['invalid regex', [{ match: { path: '/' }, actions: ['index'] }, { match: { atom: { field: 'url', kind: 'inside', value: 'a(' } }, actions: ['index'] }], ['rules.1.match.atom.value: invalid regular expression "a("']],
  ['bad length range', [{ match: { length: { field: 'path', value: '[a:]' } }, actions: ['index'] }], ['rules.0.match.length.value: bad range "[a:]"']],
  ['XML rule with an unknown element', '<Rules><Rule><Path val="/"/><Crawl/></Rule></Rules>', ['rules.0.actions.0: unknown rule element or action <Crawl>']],
  ['XML that does not parse', '<Rules><Rule></Rules>', ['rules: invalid XML at line 1']],
];

/** Rule errors that fail the zod unions in shared/config.ts: parseConfig asks the rule compiler for the path. */
// biome-ignore format: one bad rule per line
const BAD_RULES_UNION: [string, unknown, string[]][] = [
  ['unknown atom field', [{ match: { atom: { field: 'port', kind: 'exact', value: '80' } }, actions: ['index'] }], ['rules.0.match.atom.field', 'port']],
  ['unknown action', [{ match: { path: '/' }, actions: ['index', 'crawl'] }], ['rules.0.actions.1', 'crawl']],
];

describe('bad input exits 2 naming the file, the field path and what is wrong', { concurrency: 2 }, () => {
  it('an unknown option', async () => {
    assertUserError(await trawl(['explain', '--bogus', '-c', 'x.json', START]), "unknown option '--bogus'");
  });
  it('a missing config file', async () => {
    assertUserError(await trawl(['explain', '-c', 'no-such.json', START]), 'no-such.json', 'cannot read');
  });
  it('a config with an unknown key', async () => {
    const config = file('typo.json', { ...base, scope: { folowOffsite: true } });
    assertUserError(await trawl(['explain', '-c', config, START]), 'typo.json', /scope\b.*folowOffsite/);
  });
  it('a search query with nothing to look for (empty, spaces, a lone quote), before any engine is asked', async () => {
    // It listed ten arbitrary pages, as a match-everything query.
    const config = file('search.json', base);
    for (const query of ['', '   ', '"'])
      assertUserError(await trawl(['search', '-c', config, query]), /QUERY: no word to search for/);
  });
  it('a scope pattern that is not a regular expression', async () => {
    const config = file('include.json', { ...base, scope: { include: ['ok', '('] } });
    assertUserError(await trawl(['domain', '-c', config, START]), 'include.json', 'scope.include.1');
  });
  for (const [label, rules, mentions] of BAD_RULES) {
    it(`a bad rule: ${label}`, async () => {
      const config = file(`bad-${label.replace(/\W+/g, '-')}.json`, withRules(rules));
      assertUserError(await trawl(['explain', '-c', config, START]), config, ...mentions);
    });
  }
  for (const [label, rules, mentions] of BAD_RULES_UNION) {
    it(`a bad rule: ${label}`, async () => {
      const config = file(`bad-${label.replace(/\W+/g, '-')}.json`, withRules(rules));
      assertUserError(await trawl(['explain', '-c', config, START]), config, ...mentions);
    });
  }
});
