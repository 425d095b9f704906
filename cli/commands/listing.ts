/** `trawl docs`, `trawl urls`, `trawl clear-errors`, `trawl redrive`: read and repair the crawl's state. */

import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients.ts';
import { ConfigError } from '../../shared/errors.ts';
import { portOf } from '../../shared/net/ip-guard.ts';
import { resourceNames } from '../../shared/topology.ts';
import { ERROR_KINDS, URL_STATES } from '../../shared/types.ts';
import { readChanges } from '../change-feed.ts';
import { loadConfigFile } from '../config-file.ts';
import { deployedResources, loadDeployment, useDeployment } from '../deployment.ts';
import { markUnsaved, persistEmbeddedState, resolveAwsEndpoint } from '../emulator.ts';
import { clearErrors, documents, openSession, redriveDeadLetters, stateOf, urlStates } from '../session.ts';
import { isoTime } from '../time-option.ts';

/** The crawl's session: a deployed stack's resources when `trawl deploy` recorded one, else local. */
export async function listingSession(file: string) {
  const config = loadConfigFile(file);
  // A deployed crawl: its stack's resources, where `trawl deploy` put them.
  const deployed = loadDeployment(config.name);
  if (deployed) {
    await useDeployment(deployed, file, config);
    return openSession(config, { resources: deployedResources(deployed.outputs), readOnly: true });
  }
  await resolveAwsEndpoint();
  await requireState(createAwsClients({ count: false }), config.name, file);
  return openSession(config, { readOnly: true });
}

/** Prints the index, one JSON document per line. */
export async function docsCommand(opts: { config: string }): Promise<void> {
  const s = await listingSession(opts.config);
  for await (const doc of documents(s)) process.stdout.write(`${JSON.stringify(doc)}\n`);
}

/** `trawl urls`' filters; several given must all hold. */
export interface UrlFilterOptions {
  state?: string;
  host?: string;
  errorCode?: string;
}

/** Prints every known URL's state (or those the filters keep), one JSON line each. */
export async function urlsCommand(opts: { config: string } & UrlFilterOptions): Promise<void> {
  // Checked before the crawl's state is read: a typo is exit 2 at once, not an empty listing.
  const keep = urlFilter(opts);
  const s = await listingSession(opts.config);
  for await (const u of urlStates(s)) if (keep(u)) process.stdout.write(`${JSON.stringify(u)}\n`);
}

/** The states `--state` takes: a URL state, or an error state by kind as `trawl status` counts them. */
const STATE_NAMES = [...URL_STATES, ...ERROR_KINDS.map((k) => `error/${k}`)];

/** `--state`, `--host` and `--error-code` as one test of a `trawl urls` line (ANDed). */
export function urlFilter(opts: UrlFilterOptions): (line: Record<string, unknown>) => boolean {
  const tests: ((line: Record<string, unknown>) => boolean)[] = [];
  if (opts.state !== undefined) tests.push(stateTest(opts.state));
  if (opts.host !== undefined) tests.push(hostTest(opts.host));
  // Codes are lower case (`http-404`); `HTTP-404` matched nothing while --state and --host took any case.
  const code = opts.errorCode?.toLowerCase();
  if (code !== undefined) tests.push((line) => String(line.errorCode ?? '').toLowerCase() === code);
  return (line) => tests.every((t) => t(line));
}

function stateTest(name: string): (line: Record<string, unknown>) => boolean {
  const wanted = name.trim().toLowerCase();
  if (!STATE_NAMES.includes(wanted))
    throw new ConfigError(`urls: unknown --state ${JSON.stringify(name)}: one of ${STATE_NAMES.join(', ')}`);
  const [state, kind] = wanted.split('/');
  return (line) => line.state === state && (kind === undefined || line.errorKind === kind);
}

/**
 * `--host example.com` keeps the host on any port; `--host example.com:8080` that port only, as
 * the URL shows it (a default port, absent from normalized URLs, is matched too). Compared as
 * normalized URLs have it: lower case, an IDN in its xn-- form.
 */
function hostTest(host: string): (line: Record<string, unknown>) => boolean {
  // A URL pasted for its host (`http://www.acme.com:8081/`) is taken for it: it matched nothing.
  const given = URL.parse(host.trim());
  const bare = given && /^https?:$/.test(given.protocol) ? given.host : host.trim();
  const [, name = '', port] = /^(.*?)(?::(\d+))?$/.exec(bare) ?? [];
  const wanted = URL.parse(`http://${name}/`)?.hostname;
  if (!name || !wanted)
    throw new ConfigError(`urls: --host ${JSON.stringify(host)} is not a host name (or host:port)`);
  return (line) => {
    const url = URL.parse(String(line.url));
    if (!url || url.hostname !== wanted) return false;
    return port === undefined || portOf(url) === Number(port);
  };
}

/** `trawl explain --state`: the URL's line of `trawl urls` (null when the crawl does not know it). */
export async function recordedState(file: string, url: string): Promise<Record<string, unknown> | null> {
  return (await stateOf(await listingSession(file), url)) ?? null;
}

/** Prints the change feed a search index consumes, oldest first. */
export async function changesCommand(opts: { config: string; since?: string }): Promise<void> {
  // Compared as text with the records' times, a --since that is not a time printed nothing, exit 0.
  const since = opts.since === undefined ? undefined : isoTime(opts.since, '--since').toISOString();
  const s = await listingSession(opts.config);
  for (const c of await readChanges(s, { since })) process.stdout.write(`${JSON.stringify(c)}\n`);
}

/** Forgets every URL in error state and queues it again (session.ts clearErrors). */
export async function clearErrorsCommand(opts: { config: string }): Promise<void> {
  const s = await listingSession(opts.config);
  await markUnsaved(s.config.name);
  const n = await clearErrors(s);
  await persistEmbeddedState(undefined, s.config.name);
  const next = loadDeployment(s.config.name)
    ? 'the deployed functions fetch them'
    : `"trawl crawl -c ${opts.config}" fetches them`;
  process.stdout.write(
    n === 0
      ? 'no URL in error state\n'
      : `forgot ${n} URL(s) in error state and queued them again: ${next}\n`,
  );
}

/**
 * Moves dead-lettered messages back to their queues (after the fix for what failed them): a
 * deployed crawl's functions take them up at once, a local one with the next `trawl crawl`.
 */
export async function redriveCommand(opts: { config: string }): Promise<void> {
  const s = await listingSession(opts.config);
  const moved = await redriveDeadLetters(s);
  const total = Object.values(moved).reduce((a, b) => a + b, 0);
  const where = Object.entries(moved)
    .map(([q, n]) => `${q} ${n}`)
    .join(', ');
  const next = loadDeployment(s.config.name)
    ? 'the deployed functions take them up'
    : `"trawl crawl -c ${opts.config}" resumes them`;
  process.stdout.write(
    total === 0
      ? 'no dead-lettered messages\n'
      : `moved ${total} dead-lettered message(s) back (${where}): ${next}\n`,
  );
}

/**
 * A crawl run here (not deployed) has its URL table: else exit 2. `docs`, `urls` and the others
 * used to create the crawl's resources for a name never crawled (a typo read as an empty index),
 * after which `status --wait` waited for ever.
 */
export async function requireState(clients: AwsClients, crawl: string, file: string): Promise<void> {
  const known = await clients.ddbRaw
    .send(new DescribeTableCommand({ TableName: resourceNames(crawl).urlsTable }))
    .then(
      () => true,
      (err: Error) => {
        if (err.name === 'ResourceNotFoundException') return false;
        throw err;
      },
    );
  if (!known)
    throw new NoStateError(
      `crawl "${crawl}" has no state here: run "trawl crawl -c ${file}" (or "trawl deploy -c ${file}") first`,
    );
}

/** A crawl with no resources here yet (never run, or its first command still creating them). */
export class NoStateError extends ConfigError {}
