/**
 * The `trawl` command line (docs/commands.md). User errors exit 2 with the file, field and reason,
 * never a stack trace.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { isAllowed, parseRobotsTxt, robotsForAgent, userAgentToken } from '../shared/crawl/robots/robots.ts';
import { explainKnown, explainUrl } from '../shared/crawl/rules/decide.ts';
import { domainOf } from '../shared/crawl/url/domains.ts';
import { maskUserInfo } from '../shared/crawl/url/mask-url.ts';
import { normalizeUrl } from '../shared/crawl/url/normalize-url.ts';
import { ConfigError } from '../shared/errors.ts';
import { logToStderr } from '../shared/stages/logger.ts';
import { loadConfigFile } from './config-file.ts';

// Commands that talk to AWS load the SDK only when they run: `explain`, `domain` and `robots` start fast.
const crawlCmd = () => import('./commands/crawl.ts');
const listing = () => import('./commands/listing.ts');
const ops = () => import('./commands/ops.ts');
const deploy = () => import('./commands/deploy.ts');
const status = () => import('./commands/status.ts');
const search = () => import('./commands/search.ts');
const report = () => import('./commands/report.ts');

const out = (line: string) => process.stdout.write(`${line}\n`);

/** A subcommand about one crawl: each takes its config with `-c FILE`. */
const onCrawl = (p: Command, name: string, description: string) =>
  p.command(name).description(description).requiredOption('-c, --config <file>', 'crawl config');

function program(): Command {
  const p = new Command('trawl')
    .description('Serverless web crawler for enterprise search: Lambda + SQS + DynamoDB + S3')
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  p.command('crawl')
    .description('create resources if missing, seed the start URLs and run until the frontier is empty')
    .requiredOption('-c, --config <file>', 'crawl config (JSON or YAML)')
    .option('--demo', 'serve the bundled demo site on loopback and crawl it')
    .option('--no-progress', 'plain log lines even on a terminal')
    .option('--watch', 'after draining, keep running the discovery and refresh schedules (Ctrl-C stops)')
    .action(async (o) => (await crawlCmd()).crawlCommand(o));
  onCrawl(p, 'refresh', 'one maintenance cycle as the schedule runs it, then drain')
    .option('--now <iso-time>', 'pretend the clock says this time')
    .option('--demo', 'serve the bundled demo site while refreshing')
    .option('--dry-run', 'list what the cycle would refresh and delete, with reasons; change nothing')
    .option('--no-progress', 'plain log lines even on a terminal')
    .action(async (o) => (await crawlCmd()).refreshCommand(o));
  onCrawl(p, 'docs', 'print the current index, one JSON document per line').action(async (o) =>
    (await listing()).docsCommand(o),
  );
  onCrawl(p, 'urls', 'print every known URL and its state, one JSON line each')
    .option(
      '--state <state>',
      'only URLs in this state (indexed, followed, ignored, error, error/permanent…)',
    )
    .option('--host <host>', 'only URLs of this host (host:port: on that port only)')
    .option('--error-code <code>', 'only URLs whose last error has this code (http-404, timeout…)')
    .action(async (o) => (await listing()).urlsCommand(o));
  onCrawl(
    p,
    'changes',
    'print the change feed (upserts and deletions with their reasons), one JSON line each',
  )
    .option('--since <iso-time>', 'only changes at or after this time')
    .action(async (o) => (await listing()).changesCommand(o));
  onCrawl(
    p,
    'report',
    'write one self-contained HTML report: URL states, errors, documents, freshness, changes, throughput, cost',
  )
    .option('-o, --output <file>', 'where to write the page', 'report.html')
    .action(async (o) => (await report()).reportCommand(o));
  onCrawl(p, 'clear-errors', 'forget every URL in error state').action(async (o) =>
    (await listing()).clearErrorsCommand(o),
  );
  onCrawl(
    p,
    'redrive',
    "move the messages that failed every retry back from the crawl's dead-letter queues (after a fix)",
  ).action(async (o) => (await listing()).redriveCommand(o));
  onCrawl(p, 'explain', 'what the config decides for a URL (no network)')
    .option(
      '--state',
      "also the URL's recorded state (reads the crawl's table: duplicate, trap cap, soft 404)",
    )
    .option('--depth <n>', 'judge the URL at this link depth (default: 0 for a start URL or sitemap, else 1)')
    .argument('<url>')
    .action(async (url: string, opts: { config: string; state?: boolean; depth?: string }) => {
      const config = loadConfigFile(opts.config);
      const depth = opts.depth === undefined ? undefined : Number(opts.depth);
      if (depth !== undefined && !(Number.isInteger(depth) && depth >= 0))
        throw new ConfigError(
          `explain: --depth must be a whole number ≥ 0, not ${JSON.stringify(opts.depth)}`,
        );
      let answer = explainUrl(config, url, { depth });
      // docs/commands.md: a malformed URL is bad input (exit 2). Opaque URLs (mailto:, javascript:) are
      // well-formed and get an answer: accepted false, reason opaque-url, as the crawl drops them.
      if (answer.reason === 'malformed-url') {
        throw new ConfigError(
          `explain: not an absolute URL: ${JSON.stringify(url)} (e.g. "https://www.example.com/page")`,
        );
      }
      if (opts.state && typeof answer.normalized === 'string') {
        const state = await (await listing()).recordedState(opts.config, answer.normalized);
        answer = explainKnown(config, url, depth, state);
      }
      out(JSON.stringify(answer));
    });
  p.command('domain')
    .description('the domain name of each URL, from the configured TLD lists or the Public Suffix List')
    .option('-c, --config <file>', 'crawl config (for its `domains` lists)')
    .argument('<url...>')
    .action((urls: string[], opts: { config?: string }) => {
      const lists = opts.config ? loadConfigFile(opts.config).domains : { generic: null, additional: null };
      // Seed 000's DEBUG message names the original URL, so URLs are passed whole (bare hosts as hosts).
      const debug = (m: string) => process.stderr.write(`DEBUG ${m}\n`);
      for (const url of urls) {
        const host = hostOf(url);
        out(domainOf(url.includes('://') ? url : host, lists, debug));
      }
    });
  p.command('robots')
    .description("'allowed' or 'disallowed', as Trawl's robots.txt matcher decides")
    .argument('<robots-file>')
    .argument('<user-agent>')
    .argument('<url>')
    .option(
      '--as-crawled',
      "normalize the URL as the crawl does, and decode the patterns' escaped unreserved characters as it does",
    )
    .action((file: string, agent: string, url: string, o: { asCrawled?: boolean }) => {
      // An empty URL is Google's corpus's (it reads as "/"); anything else must be an absolute URL.
      if (url !== '' && !URL.canParse(url))
        throw new ConfigError(`robots: ${JSON.stringify(url)} is not an absolute URL`);
      const token = userAgentToken(agent);
      let robots = parseRobotsTxt(readText(file));
      if (o.asCrawled) {
        robots = robotsForAgent(robots, token);
        url = normalizeUrl(url) ?? url;
      }
      out(isAllowed(robots, token, url) ? 'allowed' : 'disallowed');
    });
  deployCommands(p);
  onCrawl(p, 'search', "search the crawl's index: one JSON line per hit {url, title, score, snippet}")
    .option('--limit <n>', 'hits', '10')
    .argument('<query>')
    // A query may start with an exclusion (`-draft`, `-"a phrase"`): not an option of the command.
    .allowUnknownOption()
    .action(async (q: string, o) => (await search()).searchCommand(q, o));
  onCrawl(p, 'reindex', 'rebuild the search index from the stored documents').action(async (o) =>
    (await search()).reindexCommand(o),
  );
  p.command('search-engine')
    .description('the embedded search engine: start | stop | status')
    .argument('<action>')
    .action(async (a: string) => (await search()).searchEngineCommand(a));
  p.command('emulator')
    .description('the embedded emulator: start | stop | status')
    .argument('<action>')
    .action(async (a: string) => (await ops()).emulatorCommand(a));
  return p;
}

/** deploy, destroy, status (cli/commands/deploy.ts, status.ts) */
function deployCommands(p: Command): void {
  const local = '--local';
  const localHelp =
    'the local cloud (ministack, started on a free loopback port) instead of the SDK endpoint';
  onCrawl(p, 'deploy', 'cdk deploy the stack, upload the config and seed the crawl')
    .option(local, localHelp)
    .option('--port <port>', 'the local cloud port when it is started (default: a free one)')
    .action(async (o) => (await deploy()).deployCommand(o));
  onCrawl(p, 'destroy', 'cdk destroy the stack (on AWS the URL table and the bucket are kept)')
    .option(local, localHelp)
    .action(async (o) => (await deploy()).destroyCommand(o));
  onCrawl(p, 'status', "a crawl's queues, URL states and documents, one JSON line (deployed, or run here)")
    .option('--wait', 'block until the frontier is empty and nothing is in flight')
    .option('--timeout <seconds>', 'with --wait: give up (exit 1) after this long', '600')
    .action(async (o) => (await status()).statusCommand(o));
}

/** A URL whose scheme lost its "://" (`http//host/x`, `https:host`): not a bare host name. */
const BROKEN_SCHEME = /^[a-z][a-z0-9+.-]*(?:\/\/|:(?!\d+(?:[/?#]|$)))/i;

function hostOf(url: string): string {
  if (!url.includes('://') && BROKEN_SCHEME.test(url))
    throw new ConfigError(`domain: not a valid URL (its scheme needs "://"): ${JSON.stringify(url)}`);
  try {
    return new URL(url.includes('://') ? url : `http://${url}`).hostname;
  } catch {
    throw new ConfigError(`domain: not a valid URL or host name: ${JSON.stringify(url)}`);
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

/** Runs the CLI; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  logToStderr();
  try {
    await program().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof ConfigError) {
      process.stderr.write(`trawl: ${maskUserInfo(err.message)}\n`);
      return 2;
    }
    // A failed outside step (the CDK CLI) says what failed; its own output is already on stderr.
    const code = (err as { exitCode?: unknown }).exitCode;
    if (typeof code === 'number') {
      process.stderr.write(`trawl: ${maskUserInfo((err as Error).message)}\n`);
      return code;
    }
    // The emulator (or LocalStack) went away under the command: say what that means, not a stack.
    const conn = err as { code?: string; port?: number };
    const endpoint = process.env.AWS_ENDPOINT_URL;
    if (conn.code === 'ECONNREFUSED' && endpoint && URL.parse(endpoint)?.port === String(conn.port)) {
      process.stderr.write(
        `trawl: the AWS endpoint ${endpoint} stopped answering (${(err as Error).message}): the emulator ` +
          'was stopped or crashed. The embedded one keeps its last saved state under .trawl/; run the same command again\n',
      );
      return 1;
    }
    process.stderr.write(`trawl: ${maskUserInfo(String((err as Error).stack ?? err))}\n`);
    return 1;
  }
}
