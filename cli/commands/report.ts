/**
 * `trawl report -c FILE [-o report.html]`: one self-contained HTML page about a crawl, built from
 * the same readers as `trawl urls`, `trawl docs` and `trawl changes`, streamed into bounded
 * aggregates (shared/report/report-model.ts), plus the run records of the last local runs and a
 * deployed stack's hourly usage (shared/stages/usage.ts), priced alike.
 */

import { accessSync, constants, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { deployedUsageRecords, lastRunRecords } from '../../shared/aws/run-records.ts';
import { parseDuration } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { ReportAggregate, type ReportData } from '../../shared/report/report-model.ts';
import { eachChange } from '../change-feed.ts';
import { loadConfigFile } from '../config-file.ts';
import { loadDeployment } from '../deployment.ts';
import { renderReportHtml } from '../report-html.ts';
import { type CrawlSession, eachState } from '../session.ts';
import { listingSession } from './listing.ts';

/** Aggregates the crawl's URL states, change feed and run records. */
export async function buildReport(session: CrawlSession, where: string, nowMs: number): Promise<ReportData> {
  const agg = new ReportAggregate({
    crawl: session.config.name,
    where,
    nowMs,
    maxAgeMs: parseDuration(session.config.refresh.maxAge),
  });
  for await (const state of eachState(session)) agg.addState(state);
  for await (const change of eachChange(session)) agg.addChange(change);
  for (const run of await lastRunRecords(session.store)) agg.addRun(run);
  // A deployed stack's handlers record their usage by the hour (shared/stages/usage.ts).
  const nowIso = new Date(nowMs).toISOString();
  for (const run of await deployedUsageRecords(session.hosts, session.config.name, nowIso)) agg.addRun(run);
  return agg.finish();
}

/** Writes the report and says where. */
export async function reportCommand(opts: { config: string; output?: string }): Promise<void> {
  const name = loadConfigFile(opts.config).name;
  const deployed = loadDeployment(name);
  const where = deployed
    ? `deployed stack ${deployed.stackName} (${deployed.local ? 'local cloud' : deployed.region})`
    : 'local crawl (embedded emulator)';
  const out = opts.output ?? 'report.html';
  // Before the report is built (minutes for a large crawl): a path it cannot be written to.
  writable(out);
  const session = await listingSession(opts.config);
  // On the crawl's own clock: after `trawl refresh --now` it runs ahead, and the documents' ages
  // came out negative (every one "fresh").
  const data = await buildReport(session, where, session.now());
  const html = renderReportHtml(data);
  try {
    writeFileSync(out, html);
  } catch (err) {
    throw cannotWrite(out, (err as NodeJS.ErrnoException).code ?? String(err));
  }
  process.stderr.write(
    `trawl: report for "${name}" written to ${out} (${(Buffer.byteLength(html) / 1024).toFixed(0)} KB): ${data.totals.urls} URLs, ${data.totals.documents} documents, ${data.totals.errors} errors\n`,
  );
}

const cannotWrite = (out: string, why: string) => new ConfigError(`-o: cannot write ${out} (${why})`);

/** The report's path can be written: its folder exists and takes files, and it is not a folder. */
function writable(out: string): void {
  if (statSync(out, { throwIfNoEntry: false })?.isDirectory()) throw cannotWrite(out, 'a folder');
  const folder = dirname(resolve(out));
  try {
    accessSync(folder, constants.W_OK);
  } catch (err) {
    throw cannotWrite(out, `${(err as NodeJS.ErrnoException).code ?? err}: its folder ${folder}`);
  }
}
