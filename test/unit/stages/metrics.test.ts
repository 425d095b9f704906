/**
 * The handlers' CloudWatch metrics: real Powertools Metrics printing embedded metric format,
 * captured from stdout and read back as CloudWatch would read it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSEvent } from 'aws-lambda';
import {
  batchMetrics,
  containerMetrics,
  fetchMetrics,
  METRIC,
  METRICS_NAMESPACE,
  publishMetrics,
} from '../../../shared/stages/metrics.ts';

interface Emf {
  _aws: {
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [k: string]: unknown;
}

/** Runs `fn` and returns the EMF lines it printed. */
function captureEmf(fn: () => void): Emf[] {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"_aws"'))
    .map((l) => JSON.parse(l) as Emf);
}

const sqsEvent = (sentMs: number[]): SQSEvent =>
  ({
    Records: sentMs.map((t, i) => ({
      messageId: String(i),
      body: '{}',
      attributes: { SentTimestamp: String(t) },
    })),
  }) as unknown as SQSEvent;

describe('handler metrics', () => {
  it('a fetch invocation prints one EMF line with pages, bytes, errors by kind and deferrals', () => {
    const m = new Metrics({
      namespace: METRICS_NAMESPACE,
      serviceName: 'trawl',
      defaultDimensions: { crawl: 'demo' },
    });
    const counts = { fetched: 7, bytes: 12_345, errors: { permanent: 2, temporary: 1 }, politeness: 4 };
    const [emf, ...more] = captureEmf(() => publishMetrics(m, 'fetch', fetchMetrics(counts)));
    assert.ok(emf);
    assert.equal(more.length, 0);
    const def = emf._aws.CloudWatchMetrics[0];
    assert.equal(def?.Namespace, 'Trawl');
    assert.deepEqual(def?.Dimensions[0]?.sort(), ['crawl', 'service', 'stage']);
    assert.equal(emf.stage, 'fetch');
    assert.equal(emf.crawl, 'demo');
    assert.equal(emf[METRIC.pagesFetched], 7);
    assert.equal(emf[METRIC.bytesFetched], 12_345);
    assert.equal(emf[METRIC.fetchErrorsPermanent], 2);
    assert.equal(emf[METRIC.fetchErrorsTemporary], 1);
    assert.equal(emf[METRIC.politenessDeferrals], 4);
    assert.equal(Math.round(Number(emf[METRIC.fetchErrorRate]) * 100) / 100, 42.86); // 3 errors in 7 pages
    assert.equal(def?.Metrics.find((x) => x.Name === METRIC.bytesFetched)?.Unit, 'Bytes');
  });

  it('an index batch reports documents indexed/deleted and the lag of its oldest record', () => {
    const values = batchMetrics(
      { 'documents:upserted': 5, 'documents:deleted': 2, indexed: 5 },
      sqsEvent([1_000, 4_000, 2_500]),
      10_000,
    );
    const by = Object.fromEntries(values.map((v) => [v.name, v.value]));
    assert.deepEqual(by, {
      [METRIC.queueLag]: 9_000,
      [METRIC.documentsIndexed]: 5,
      [METRIC.documentsDeleted]: 2,
    });
  });

  it('an extract batch reports only its queue lag', () => {
    const values = batchMetrics({ discovered: 9 }, sqsEvent([9_500]), 10_000);
    assert.deepEqual(
      values.map((v) => [v.name, v.value]),
      [[METRIC.queueLag, 500]],
    );
  });

  it('is off outside the stack (TRAWL_METRICS unset): the local CLI prints no EMF', () => {
    assert.equal(containerMetrics({}), null);
    assert.deepEqual(
      captureEmf(() =>
        publishMetrics(
          null,
          'fetch',
          fetchMetrics({ fetched: 1, bytes: 1, errors: { permanent: 0, temporary: 0 }, politeness: 0 }),
        ),
      ),
      [],
    );
  });
});
