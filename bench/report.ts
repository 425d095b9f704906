/** The benchmark's printed tables (plain text, aligned columns). */

import { stageGb, TARGET_DOLLARS_PER_MILLION } from '../shared/pricing.ts';
import type { StageName } from '../shared/topology.ts';
import type { CrawleeResult } from './crawlee-run.ts';
import type { TrawlResult } from './trawl-run.ts';

type Cell = string | number;

/** Right-aligns numbers, left-aligns text. */
export function table(headers: string[], rows: Cell[][]): string {
  const text = [headers, ...rows].map((r) => r.map((c) => (typeof c === 'number' ? fmtNum(c) : c)));
  const widths = headers.map((_h, i) => Math.max(...text.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) =>
        typeof rows[0]?.[i] === 'number' ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0),
      )
      .join('  ');
  return [
    line(text[0] as string[]),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...text.slice(1).map(line),
  ].join('\n');
}

function fmtNum(n: number): string {
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 1) return n.toFixed(2);
  return n.toFixed(4);
}

export const usd = (n: number) => `$${n.toFixed(3)}`;
const per = (n: number, pages: number) => n / Math.max(1, pages);

/** Pages, seconds, pages/s of each crawler, and the page count check. */
export function crawlTable(trawl: TrawlResult, crawlee: CrawleeResult, expected?: number): string {
  const check = (n: number) =>
    expected === undefined
      ? ''
      : n === expected
        ? 'yes'
        : `NO (${n - expected > 0 ? '+' : ''}${n - expected})`;
  return table(
    ['crawler', 'pages', 'documents', 'seconds', 'pages/s', `= expected ${expected ?? '?'}`],
    [
      [
        'Trawl (local pipeline, moto)',
        trawl.pages,
        trawl.documents,
        trawl.seconds,
        trawl.pagesPerSecond,
        // A page folded into another URL's document was found and fetched all the same.
        check(trawl.documents + trawl.duplicates.size),
      ],
      [
        `Crawlee CheerioCrawler (${crawlee.minConcurrency}–${crawlee.maxConcurrency})`,
        crawlee.pages,
        crawlee.pages,
        crawlee.seconds,
        crawlee.pagesPerSecond,
        check(crawlee.pages),
      ],
    ],
  );
}

/** AWS requests per page by operation, with SQS billed requests and DynamoDB units per call type. */
export function requestsTable(r: TrawlResult): string {
  const { calls } = r.usage;
  const d = r.meter.dynamo;
  const rows: Cell[][] = Object.keys(calls)
    .sort()
    .map((key) => {
      const [service, op] = key.split('.') as [string, string];
      const billed = service === 'SQS' ? (r.meter.sqsBilled[key] ?? 0) : (calls[key] ?? 0);
      const units = service === 'DynamoDB' ? unitsFor(d, op) : '';
      return [key, calls[key] ?? 0, per(calls[key] ?? 0, r.pages), per(billed, r.pages), units];
    });
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  rows.push(['all AWS calls', total, per(total, r.pages), '', '']);
  return table(['operation', 'calls', 'calls/page', 'billed req/page', 'DynamoDB units (estimate)'], rows);
}

function unitsFor(d: TrawlResult['meter']['dynamo'], op: string): string {
  const parts: string[] = [];
  for (const [kind, map] of [
    ['RRU', d.read],
    ['WRU', d.write],
  ] as const) {
    for (const [label, n] of Object.entries(map)) {
      const [table, lop] = label.split('.') as [string, string];
      if (n > 0 && lop === op) parts.push(`${table} ${fmtNum(n)} ${kind} / ${d.items[label] ?? 0} items`);
    }
  }
  return parts.join('; ');
}

/** Lambda invocations, durations, AWS wait and GB-s per stage. */
export function lambdaTable(r: TrawlResult): string {
  const rows: Cell[][] = (
    Object.entries(r.usage.stages) as [StageName, TrawlResult['usage']['stages'][StageName]][]
  )
    .filter(([, s]) => s.invocations > 0)
    .map(([stage, s]) => {
      const gb = stageGb(stage, s);
      return [
        stage,
        gb * 1024,
        s.invocations,
        s.totalMs / 1000,
        s.awsWaitMs / 1000,
        (s.totalMs / 1000) * gb,
        per((s.totalMs / 1000) * gb * 1000, r.pages),
      ];
    });
  return table(
    ['stage', 'MB', 'invocations', 'handler s', 'of which AWS wait s', 'GB-s', 'GB-ms/page'],
    rows,
  );
}

/** Dollars per million pages by service against the target. */
export function costTable(r: TrawlResult): string {
  const c = r.cost.perMillion;
  const u = r.usage;
  const rows: Cell[][] = [
    [
      'Lambda',
      `${fmtNum(r.cost.lambdaGbSeconds)} GB-s, ${r.cost.lambdaInvocations} invocations`,
      usd(c.lambda),
    ],
    [
      'SQS',
      `${u.sqsBilledRequests} billed requests (${fmtNum(per(u.sqsBilledRequests, r.pages))}/page)`,
      usd(c.sqs),
    ],
    [
      'DynamoDB writes',
      `${fmtNum(u.dynamoWriteUnits)} WRU (${fmtNum(per(u.dynamoWriteUnits, r.pages))}/page)`,
      usd(c.dynamoWrite),
    ],
    [
      'DynamoDB reads',
      `${fmtNum(u.dynamoReadUnits)} RRU (${fmtNum(per(u.dynamoReadUnits, r.pages))}/page)`,
      usd(c.dynamoRead),
    ],
    ['S3', `${r.cost.s3Puts} PUT, ${r.cost.s3Gets} GET`, usd(c.s3)],
    ['total (measured Lambda time)', '', usd(c.total)],
    [
      'total (Lambda without the emulator wait)',
      `${fmtNum(r.cost.lambdaGbSecondsNoAwsWait)} GB-s`,
      usd(r.cost.totalNoAwsWait),
    ],
  ];
  return table(['service', 'this run', '$ per million pages'], rows);
}

export interface LinksRow {
  linksPerPage: number;
  run: TrawlResult;
}

/** DynamoDB + SQS requests per page at each links-per-page setting, with the ±10% check. */
export function linksTable(rows: LinksRow[]): { text: string; spreadRequests: number; spreadCost: number } {
  const figures = rows.map(({ linksPerPage, run }) => {
    const ddb = sumWhere(run.usage.calls, 'DynamoDB.');
    const sqs = sumWhere(run.usage.calls, 'SQS.');
    const units = run.usage.dynamoReadUnits + run.usage.dynamoWriteUnits;
    return {
      linksPerPage,
      run,
      ddb: per(ddb, run.pages),
      sqs: per(sqs, run.pages),
      billed: per(run.usage.sqsBilledRequests, run.pages),
      units: per(units, run.pages),
      rru: per(run.usage.dynamoReadUnits, run.pages),
    };
  });
  const spread = (xs: number[]) => (Math.max(...xs) - Math.min(...xs)) / Math.min(...xs);
  const spreadRequests = spread(figures.map((f) => f.ddb + f.sqs));
  const spreadCost = spread(figures.map((f) => f.run.cost.perMillion.total));
  const text = table(
    [
      'links/page',
      'pages',
      'seconds',
      'DynamoDB calls/page',
      'SQS calls/page',
      'DDB+SQS/page',
      'SQS billed/page',
      'RRU/page',
      'WRU+RRU/page',
      '$/M pages',
    ],
    figures.map((f) => [
      f.linksPerPage,
      f.run.pages,
      f.run.seconds,
      f.ddb,
      f.sqs,
      f.ddb + f.sqs,
      f.billed,
      f.rru,
      f.units,
      usd(f.run.cost.perMillion.total),
    ]),
  );
  return { text, spreadRequests, spreadCost };
}

function sumWhere(calls: Record<string, number>, prefix: string): number {
  return Object.entries(calls).reduce((n, [k, v]) => n + (k.startsWith(prefix) ? v : 0), 0);
}

export const verdict = (ok: boolean) => (ok ? 'MET' : 'MISSED');

/** The one-line target summary. */
export function targetLines(t: {
  dollars: number;
  dollarsLow: number;
  spread: number;
  speedRatio: number;
  extractRatio: number;
}): string {
  return table(
    ['target', 'measured', 'verdict'],
    [
      [
        `≤ ${usd(TARGET_DOLLARS_PER_MILLION)} per million pages`,
        `${usd(t.dollars)} (lower bound ${usd(t.dollarsLow)})`,
        verdict(t.dollars <= TARGET_DOLLARS_PER_MILLION),
      ],
      [
        'DynamoDB+SQS requests/page equal (±10%) at 10 and 100 links',
        `spread ${(t.spread * 100).toFixed(1)}%`,
        verdict(t.spread <= 0.1),
      ],
      ['local pages/s ≥ 1.0× Crawlee', `${t.speedRatio.toFixed(2)}×`, verdict(t.speedRatio >= 1)],
      ['extract CPU ≤ 1.5× cheerio.load', `${t.extractRatio.toFixed(2)}×`, verdict(t.extractRatio <= 1.5)],
    ],
  );
}
