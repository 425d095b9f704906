/**
 * Renders the crawl report as one self-contained HTML file: the figures as tables (readable
 * without scripts) and charts drawn by Chart.js, whose UMD build is read from node_modules and
 * inlined, so the file opens with no network.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ReportData } from '../shared/report/report-model.ts';
import { REPORT_SCRIPT, REPORT_STYLE } from './report-assets.ts';

let chartJs: string | undefined;

/** Chart.js's UMD build (pinned in package.json), read once. */
function chartLibrary(): string {
  if (chartJs === undefined) {
    const main = createRequire(import.meta.url).resolve('chart.js');
    chartJs = readFileSync(join(dirname(main), 'chart.umd.min.js'), 'utf8');
  }
  return chartJs;
}

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const num = (n: number) => n.toLocaleString('en-US');
const orNa = (n: number | null) => (n === null ? 'n/a' : num(n));
const money = (n: number | null) => (n === null ? 'n/a' : `$${n.toFixed(2)}`);

/** A two-column table; each value cell carries `data-k="<id>-<key>"` for tests and scripts. */
function countTable(id: string, head: [string, string], rows: [string, number][]): string {
  const body = rows
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td class="n" data-k="${esc(`${id}-${k}`)}">${num(v)}</td></tr>`)
    .join('');
  return `<table id="${id}"><thead><tr><th>${esc(head[0])}</th><th class="n">${esc(head[1])}</th></tr></thead><tbody>${body || '<tr><td colspan="2" class="none">none</td></tr>'}</tbody></table>`;
}

const entries = (o: Record<string, number>) =>
  Object.entries(o).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));

function card(id: string, label: string, value: string): string {
  return `<div class="card"><div class="v" data-k="total-${id}">${value}</div><div class="l">${esc(label)}</div></div>`;
}

function summaryCards(d: ReportData): string {
  const last = [...d.runs].reverse().find((r) => r.costPerMillion !== null);
  return `<section class="cards">${[
    card('urls', 'URLs known', num(d.totals.urls)),
    card('documents', 'documents indexed', num(d.totals.documents)),
    card('errors', 'URLs in error', num(d.totals.errors)),
    card('upserts', 'change feed: upserts', num(d.totals.upserts)),
    card('deletes', 'change feed: deletions', num(d.totals.deletes)),
    card(
      'cost',
      last
        ? `per million pages (last run: ${last.kind} of ${last.startedAt.replace('T', ' ').slice(0, 16)}, ${num(last.pages)} pages)`
        : 'per million pages (last run)',
      money(last?.costPerMillion ?? null),
    ),
  ].join('')}</section>`;
}

function errorsTable(d: ReportData): string {
  const rows = d.errorsByHost
    .map(
      (h) =>
        `<tr><td>${esc(h.host)}</td><td class="n" data-k="${esc(`errhost-${h.host}-permanent`)}">${num(h.permanent)}</td><td class="n" data-k="${esc(`errhost-${h.host}-temporary`)}">${num(h.temporary)}</td><td class="ex">${h.examples
          .map((e) => `<div>${esc(e.code ?? '')} <a href="${esc(e.url)}">${esc(e.url)}</a></div>`)
          .join('')}</td></tr>`,
    )
    .join('');
  const caption =
    d.errorHosts > d.errorsByHost.length
      ? `<caption data-k="error-hosts">the ${num(d.errorsByHost.length)} hosts with the most errors, of ${num(d.errorHosts)}</caption>`
      : '';
  return `<table id="errors-by-host">${caption}<thead><tr><th>host</th><th class="n">permanent</th><th class="n">temporary</th><th>examples</th></tr></thead><tbody>${rows || '<tr><td colspan="4" class="none">no errors</td></tr>'}</tbody></table>`;
}

/** 0.3333 h as "20 min", 48 h as "48 h". */
function hours(h: number): string {
  return h < 1 ? `${Math.round(h * 60)} min` : `${Number(h.toFixed(2))} h`;
}

function runsTable(d: ReportData): string {
  const rows = d.runs
    .map(
      (r) =>
        `<tr${r.interrupted ? ' class="interrupted"' : ''}><td>${esc(r.startedAt.replace('T', ' ').slice(0, 19))}</td><td>${esc(r.kind)}${r.interrupted ? ' (interrupted)' : ''}</td><td class="n">${num(r.pages)}</td><td class="n">${r.seconds.toFixed(1)}</td><td class="n">${r.pagesPerSecond.toFixed(1)}</td><td class="n">${orNa(r.errors)}</td><td class="n">${r.upserted === null ? 'n/a' : `${num(r.upserted)} / ${orNa(r.deleted)}`}</td><td class="n">${num(r.awsRequests)}</td><td class="n">${money(r.costPerMillion)}</td></tr>`,
    )
    .join('');
  const note =
    d.runs.length === 0
      ? '<p class="none">No run records: they are written by local <code>trawl crawl</code> / <code>trawl refresh</code> runs, and by a deployed stack\'s handlers (one usage item per hour, rows of kind <code>deployed</code>).</p>'
      : '';
  return `<table id="runs"><thead><tr><th>started (UTC)</th><th>run</th><th class="n">pages</th><th class="n">seconds</th><th class="n">pages/s</th><th class="n">errors</th><th class="n">documents written / deleted</th><th class="n">AWS requests</th><th class="n">$ per million pages</th></tr></thead><tbody>${rows}</tbody></table>${note}`;
}

function costTable(d: ReportData): string {
  const last = [...d.runs].reverse().find((r) => r.costByService);
  if (!last?.costByService) return '<p class="none">No priced run yet.</p>';
  const rows = Object.entries(last.costByService).map(([k, v]) => [k, v] as [string, number]);
  const body = rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td class="n">${money(v)}</td></tr>`).join('');
  return `<table id="cost"><thead><tr><th>service</th><th class="n">$ per million pages</th></tr></thead><tbody>${body}<tr class="total"><td>total</td><td class="n" data-k="cost-total">${money(last.costPerMillion)}</td></tr></tbody></table><p class="note">us-east-1 list prices (shared/pricing.ts, the same as <code>npm run bench</code>) applied to the AWS requests the run counted and its handlers' wall time; DynamoDB units estimated for items under 1 KB.</p>`;
}

function section(title: string, chartIds: string[], tables: string): string {
  const charts = chartIds.map((id) => `<div class="chart"><canvas id="${id}"></canvas></div>`).join('');
  return `<section><h2>${esc(title)}</h2><div class="row">${charts}</div>${tables}</section>`;
}

/** The whole page. */
export function renderReportHtml(d: ReportData): string {
  // `</` must not close the script element early: JSON allows `<\/`.
  const data = JSON.stringify(d).replace(/</g, '\\u003c');
  const body = [
    `<header><h1>Trawl crawl report: ${esc(d.crawl)}</h1><p>${esc(d.where)} · generated ${esc(d.generatedAt)}</p></header>`,
    summaryCards(d),
    section(
      'URL states',
      ['chart-states', 'chart-http'],
      `<div class="row">${countTable('states', ['state', 'URLs'], entries(d.states))}${countTable('http', ['HTTP status', 'URLs'], entries(d.httpStatus))}</div>`,
    ),
    section(
      'Errors by host and kind',
      ['chart-error-codes'],
      `${errorsTable(d)}${countTable('error-codes', ['error code', 'URLs'], entries(d.errorCodes))}`,
    ),
    section(
      'Documents by depth and by source queue',
      ['chart-depth', 'chart-queue'],
      `<div class="row">${countTable(
        'docs-depth',
        ['depth', 'documents'],
        Object.entries(d.docsByDepth).sort((a, b) => Number(a[0]) - Number(b[0])),
      )}${countTable('docs-queue', ['source queue', 'documents'], entries(d.docsByQueue))}</div>`,
    ),
    section(
      `Freshness: age of indexed documents, as a share of each one's refresh interval (refresh.maxAge = ${hours(d.freshness.maxAgeHours)}, or its rule's or adaptive interval)`,
      ['chart-freshness'],
      countTable(
        'freshness',
        ['age, share of max age', 'documents'],
        d.freshness.buckets.map((b) => [b.label, b.count]),
      ),
    ),
    section(
      'Change feed over time',
      ['chart-changes'],
      countTable('delete-reasons', ['deletion reason', 'deletions'], d.changes.deletesByReason),
    ),
    section('Throughput of the last crawls', ['chart-fetches', 'chart-runs'], runsTable(d)),
    section('Cost per million pages', [], costTable(d)),
    section(
      'Top reasons URLs were skipped',
      [],
      countTable('skipped', ['reason', 'URLs, or links summed over the runs listed'], d.skipped) +
        // As the crawl summary's "limits applied": a page cut at fetch.maxBytes is indexed, not skipped.
        countTable('limits', ['limit applied (limits.*)', 'times, summed over the runs listed'], d.limits),
    ),
  ].join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Trawl report: ${esc(d.crawl)}</title><style>${REPORT_STYLE}</style></head><body>${body}<script id="report-data" type="application/json">${data}</script><script>${chartLibrary()}</script><script>${REPORT_SCRIPT}</script></body></html>\n`;
}
