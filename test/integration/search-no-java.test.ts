/**
 * A machine without Java (issue 14): the launcher is pointed at a Java that is not there
 * (JAVA_HOME=/nonexistent…). The crawl still works with the feed sink, and every command that
 * needs the engine says how to get it instead of failing obscurely.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('without Java', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trawl-nojava-'));
    writeFileSync(join(dir, 'index.html'), '<title>Home</title><p>home</p><a href="/a.html">a</a>');
    writeFileSync(join(dir, 'a.html'), '<title>A</title><p>page a</p>');
    emu = await startTestEmulator();
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** bin/trawl.mjs with no Java to be found and no search endpoint (AWS_ENDPOINT_URL inherited). */
  const trawl = (args: string[]): Promise<Run> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      JAVA_HOME: join(dir, 'no-such-java'),
      POWERTOOLS_LOG_LEVEL: 'WARN',
    };
    delete env.TRAWL_SEARCH_ENDPOINT;
    return new Promise((resolve) =>
      execFile(
        process.execPath,
        [join(PROJECT_ROOT, 'bin', 'trawl.mjs'), ...args],
        { cwd: dir, env, timeout: 120_000, encoding: 'utf8' },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
      ),
    );
  };
  const config = (sink: 'feed' | 'opensearch') => {
    const file = join(dir, `${sink}.json`);
    const input = {
      name: uniqueCrawlName(`nojava-${sink}`),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink },
    };
    writeFileSync(file, JSON.stringify(input));
    return file;
  };
  const saysHowToGetIt = (r: Run) => {
    assert.equal(r.code, 2, `exit code, stderr: ${r.stderr}`);
    assert.match(r.stderr, /Java 11\.\.23/);
    assert.match(r.stderr, /index\.opensearch\.endpoint/);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  };

  it('the feed sink crawls; the engine commands and the opensearch sink say how to get Java', async () => {
    const feed = config('feed');
    const crawled = await trawl(['crawl', '-c', feed]);
    assert.equal(crawled.code, 0, crawled.stderr);
    const docs = await trawl(['docs', '-c', feed]);
    assert.deepEqual(
      docs.stdout
        .trim()
        .split('\n')
        .map((l) => new URL(JSON.parse(l).url).pathname)
        .sort(),
      ['/', '/a.html'],
    );
    saysHowToGetIt(await trawl(['search-engine', 'start']));
    saysHowToGetIt(await trawl(['search', '-c', feed, 'page']));
    const refused = await trawl(['crawl', '-c', config('opensearch')]);
    saysHowToGetIt(refused);
    assert.doesNotMatch(refused.stderr, /fetched/, 'refused before crawling');
    const status = await trawl(['search-engine', 'status']);
    assert.equal(status.code, 0);
    assert.match(status.stdout, /not running.*no Java at JAVA_HOME/);
  });
});
