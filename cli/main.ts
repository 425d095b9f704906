/**
 * The `trawl` command line (CONTRACT.md). User errors exit 2 with the file, field and reason,
 * never a stack trace.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { loadConfigFile } from './config-file.ts';
import { explainUrl } from '../shared/crawl/decide.ts';
import { domainOf } from '../shared/crawl/domains.ts';
import { isAllowed, parseRobotsTxt, userAgentToken } from '../shared/crawl/robots.ts';
import { ConfigError } from '../shared/errors.ts';
import { crawlCommand, refreshCommand } from './commands/crawl.ts';
import { clearErrorsCommand, docsCommand, urlsCommand } from './commands/listing.ts';
import { deployCommand, emulatorCommand } from './commands/ops.ts';

const out = (line: string) => process.stdout.write(`${line}\n`);

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
    .action(crawlCommand);
  p.command('refresh')
    .description('one maintenance cycle as the schedule runs it, then drain')
    .requiredOption('-c, --config <file>', 'crawl config')
    .option('--now <iso-time>', 'pretend the clock says this time')
    .option('--demo', 'serve the bundled demo site while refreshing')
    .option('--no-progress', 'plain log lines even on a terminal')
    .action(refreshCommand);
  p.command('docs').description('print the current index, one JSON document per line')
    .requiredOption('-c, --config <file>', 'crawl config').action(docsCommand);
  p.command('urls').description('print every known URL and its state, one JSON line each')
    .requiredOption('-c, --config <file>', 'crawl config').action(urlsCommand);
  p.command('clear-errors').description('forget every URL in error state')
    .requiredOption('-c, --config <file>', 'crawl config').action(clearErrorsCommand);
  p.command('explain')
    .description('what the config decides for a URL (no network)')
    .requiredOption('-c, --config <file>', 'crawl config')
    .argument('<url>')
    .action((url: string, opts: { config: string }) => {
      out(JSON.stringify(explainUrl(loadConfigFile(opts.config), url)));
    });
  p.command('domain')
    .description('the domain name of each URL, from the configured TLD lists or the Public Suffix List')
    .option('-c, --config <file>', 'crawl config (for its `domains` lists)')
    .argument('<url...>')
    .action((urls: string[], opts: { config?: string }) => {
      const lists = opts.config ? loadConfigFile(opts.config).domains : { generic: null, additional: null };
      for (const url of urls) out(domainOf(hostOf(url), lists, (m) => process.stderr.write(`DEBUG ${m}\n`)));
    });
  p.command('robots')
    .description("'allowed' or 'disallowed', as Trawl's robots.txt matcher decides")
    .argument('<robots-file>')
    .argument('<user-agent>')
    .argument('<url>')
    .action((file: string, agent: string, url: string) => {
      const robots = parseRobotsTxt(readText(file));
      out(isAllowed(robots, userAgentToken(agent), url) ? 'allowed' : 'disallowed');
    });
  p.command('deploy').description('cdk deploy the stack in infra/ and upload the config')
    .option('-c, --config <file>', 'crawl config').action((o) => deployCommand('deploy', o));
  p.command('destroy').description('cdk destroy the stack')
    .option('-c, --config <file>', 'crawl config').action((o) => deployCommand('destroy', o));
  p.command('emulator').description('the embedded emulator: start | stop | status')
    .argument('<action>').action(emulatorCommand);
  return p;
}

function hostOf(url: string): string {
  try {
    return new URL(url.includes('://') ? url : `http://${url}`).hostname;
  } catch {
    throw new ConfigError(`not a valid URL: ${url}`);
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
  try {
    await program().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof ConfigError) {
      process.stderr.write(`trawl: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`trawl: ${(err as Error).stack ?? err}\n`);
    return 1;
  }
}
