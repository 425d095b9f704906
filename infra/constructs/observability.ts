/**
 * What an operator watches: a CloudWatch dashboard of the handlers' embedded metrics
 * (shared/stages/metrics.ts) and the queues' own, and three kinds of alarm — a dead-letter queue
 * that is not empty (one per queue), a fetch error rate too high, a frontier source whose oldest
 * message is too old (a stuck crawl). Plain metric alarms, no metric math: the local cloud takes
 * only those. EMF metrics cost no API call; the dashboard and alarms are fixed monthly costs.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC, METRICS_NAMESPACE, type MetricName } from '../../shared/stages/metrics.ts';

export interface ObservabilityProps {
  crawlName: string;
  functions: Record<string, lambda.IFunction>;
  /** the six frontier sources' queues, by source */
  frontier: Record<string, sqs.IQueue>;
  /** every dead-letter queue (frontier sources and stage queues) */
  deadLetterQueues: Record<string, sqs.IQueue>;
  /** the error-rate alarm fires above this share of fetches; @default 0.2 */
  maxErrorRate?: number;
  /** the frontier-age alarm fires when the oldest frontier message is older; @default 1 h */
  maxFrontierAge?: Duration;
}

const PERIOD = Duration.minutes(5);

/** The dashboard and alarms of one crawl. */
export class CrawlObservability extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly dlqAlarms: cloudwatch.Alarm[];
  readonly errorRateAlarm: cloudwatch.Alarm;
  readonly frontierAgeAlarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const m = (name: MetricName, stage: string, statistic = 'Sum') =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        // Powertools adds `service`; the handlers add `crawl` and `stage`.
        dimensionsMap: { service: 'trawl', crawl: props.crawlName, stage },
        statistic,
        period: PERIOD,
      });
    const pages = m(METRIC.pagesFetched, 'fetch');
    const errors = {
      permanent: m(METRIC.fetchErrorsPermanent, 'fetch'),
      temporary: m(METRIC.fetchErrorsTemporary, 'fetch'),
    };
    const dlqDepth = sumOf(
      'DLQ messages',
      Object.values(props.deadLetterQueues).map((q) =>
        q.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum' }),
      ),
    );
    const frontierAge = new cloudwatch.MathExpression({
      label: 'oldest frontier message (s)',
      expression: `MAX([${Object.keys(props.frontier)
        .map((_, i) => `a${i}`)
        .join(', ')}])`,
      usingMetrics: Object.fromEntries(
        Object.values(props.frontier).map((q, i) => [
          `a${i}`,
          q.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: 'Maximum' }),
        ]),
      ),
      period: PERIOD,
    });
    const errorRate = m(METRIC.fetchErrorRate, 'fetch', 'Average');
    // One alarm per queue: the local cloud (and many accounts' habits) take plain metric alarms only.
    this.dlqAlarms = Object.entries(props.deadLetterQueues).map(
      ([name, q]) =>
        new cloudwatch.Alarm(this, `DlqNotEmpty-${name}`, {
          alarmName: `trawl-${props.crawlName}-dlq-not-empty-${name}`,
          alarmDescription: `A ${name} message failed maxReceiveCount times and waits in its dead-letter queue (README: redrive).`,
          metric: q.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum' }),
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
    this.errorRateAlarm = new cloudwatch.Alarm(this, 'FetchErrorRate', {
      alarmName: `trawl-${props.crawlName}-fetch-error-rate`,
      alarmDescription: 'More than the allowed share of fetches ended in an error for 15 minutes.',
      metric: m(METRIC.fetchErrorRate, 'fetch', 'Average'),
      threshold: 100 * (props.maxErrorRate ?? 0.2),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.frontierAgeAlarms = Object.entries(props.frontier).map(
      ([source, q]) =>
        new cloudwatch.Alarm(this, `FrontierAge-${source}`, {
          alarmName: `trawl-${props.crawlName}-frontier-age-${source}`,
          alarmDescription: `The oldest ${source} frontier message waits too long: fetching is stuck or far behind.`,
          metric: q.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: 'Maximum' }),
          threshold: (props.maxFrontierAge ?? Duration.hours(1)).toSeconds(),
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 2,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `trawl-${props.crawlName}`,
      defaultInterval: Duration.hours(6),
    });
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 8, height: 6 });
    this.dashboard.addWidgets(
      graph('Pages fetched and bytes', [pages], [m(METRIC.bytesFetched, 'fetch')]),
      graph('Fetch errors by kind', [errors.permanent, errors.temporary], [errorRate]),
      graph('Politeness deferrals', [m(METRIC.politenessDeferrals, 'fetch')]),
    );
    this.dashboard.addWidgets(
      graph('Documents indexed / deleted', [
        m(METRIC.documentsIndexed, 'index'),
        m(METRIC.documentsDeleted, 'index'),
        m(METRIC.documentsDeleted, 'refresh'),
      ]),
      graph('Queue lag (oldest record of a batch, ms)', [
        m(METRIC.queueLag, 'extract', 'Maximum'),
        m(METRIC.queueLag, 'index', 'Maximum'),
      ]),
      graph('Frontier age and dead letters', [frontierAge], [dlqDepth]),
    );
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: [...this.dlqAlarms, this.errorRateAlarm, ...this.frontierAgeAlarms],
        width: 8,
        height: 4,
      }),
      graph(
        'Lambda errors',
        Object.entries(props.functions).map(([s, f]) => f.metricErrors({ period: PERIOD, label: s })),
      ),
      graph(
        'Lambda duration (p90)',
        Object.entries(props.functions).map(([s, f]) =>
          f.metricDuration({ period: PERIOD, statistic: 'p90', label: s }),
        ),
      ),
    );
  }
}

function sumOf(label: string, metrics: cloudwatch.IMetric[]): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    label,
    expression: metrics.map((_, i) => `d${i}`).join(' + '),
    usingMetrics: Object.fromEntries(metrics.map((q, i) => [`d${i}`, q])),
    period: PERIOD,
  });
}
