/**
 * CloudWatch metrics in embedded metric format (Powertools Metrics): one EMF line per invocation,
 * printed with the function's logs, so a metric costs no PutMetricData call. On only where the
 * stack says so (`TRAWL_METRICS=1`, set by infra/): the local runner's stdout stays the CLI's.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSEvent } from 'aws-lambda';

export const METRICS_NAMESPACE = 'Trawl';

/** Every metric the handlers publish, by name (infra/constructs/observability.ts reads these). */
export const METRIC = {
  pagesFetched: 'PagesFetched',
  bytesFetched: 'BytesFetched',
  fetchErrorsPermanent: 'FetchErrorsPermanent',
  fetchErrorsTemporary: 'FetchErrorsTemporary',
  /** errors per fetched page of one invocation, in percent (an alarm without metric math) */
  fetchErrorRate: 'FetchErrorRate',
  politenessDeferrals: 'PolitenessDeferrals',
  documentsIndexed: 'DocumentsIndexed',
  documentsDeleted: 'DocumentsDeleted',
  queueLag: 'QueueLag',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export interface MetricValue {
  name: MetricName;
  unit: (typeof MetricUnit)[keyof typeof MetricUnit];
  value: number;
}

/** What one fetch invocation counted. */
export interface FetchCounts {
  fetched: number;
  bytes: number;
  errors: { permanent: number; temporary: number };
  politeness: number;
}

/** The fetch stage's metrics. */
export function fetchMetrics(c: FetchCounts): MetricValue[] {
  const errors = c.errors.permanent + c.errors.temporary;
  const rate: MetricValue[] =
    c.fetched > 0
      ? [{ name: METRIC.fetchErrorRate, unit: MetricUnit.Percent, value: (100 * errors) / c.fetched }]
      : [];
  return [
    ...rate,
    { name: METRIC.pagesFetched, unit: MetricUnit.Count, value: c.fetched },
    { name: METRIC.bytesFetched, unit: MetricUnit.Bytes, value: c.bytes },
    { name: METRIC.fetchErrorsPermanent, unit: MetricUnit.Count, value: c.errors.permanent },
    { name: METRIC.fetchErrorsTemporary, unit: MetricUnit.Count, value: c.errors.temporary },
    { name: METRIC.politenessDeferrals, unit: MetricUnit.Count, value: c.politeness },
  ];
}

/** An SQS batch stage's metrics: its documents (index stage) and how long its oldest record waited. */
export function batchMetrics(stats: Record<string, number>, event: SQSEvent, nowMs: number): MetricValue[] {
  const sent = event.Records.map((r) => Number(r.attributes?.SentTimestamp)).filter(Number.isFinite);
  const out: MetricValue[] = [];
  if (sent.length > 0) {
    out.push({
      name: METRIC.queueLag,
      unit: MetricUnit.Milliseconds,
      value: Math.max(0, nowMs - Math.min(...sent)),
    });
  }
  if ('documents:upserted' in stats || 'documents:deleted' in stats) {
    out.push({
      name: METRIC.documentsIndexed,
      unit: MetricUnit.Count,
      value: stats['documents:upserted'] ?? 0,
    });
    out.push({
      name: METRIC.documentsDeleted,
      unit: MetricUnit.Count,
      value: stats['documents:deleted'] ?? 0,
    });
  }
  return out;
}

let shared: Metrics | null | undefined;

/** The container's Metrics, or null when metrics are off (the local runner, tests). */
export function containerMetrics(env: NodeJS.ProcessEnv = process.env): Metrics | null {
  if (shared === undefined) {
    shared =
      env.TRAWL_METRICS === '1'
        ? new Metrics({
            namespace: METRICS_NAMESPACE,
            serviceName: 'trawl',
            defaultDimensions: { crawl: env.TRAWL_CRAWL ?? 'unknown' },
          })
        : null;
  }
  return shared;
}

/** Adds `values` under the `stage` dimension and prints them as one EMF line. */
export function publishMetrics(m: Metrics | null, stage: string, values: MetricValue[]): void {
  if (!m || values.length === 0) return;
  m.addDimension('stage', stage);
  for (const v of values) m.addMetric(v.name, v.unit, v.value);
  m.publishStoredMetrics();
}
