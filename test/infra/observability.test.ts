/**
 * CDK assertions for the crawl's dashboard and alarms: every dead-letter queue and frontier
 * source has its alarm on the right queue, the error-rate alarm reads the metric the fetch
 * handler publishes, and the dashboard shows every handler metric (shared/stages/metrics.ts).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Template } from 'aws-cdk-lib/assertions';
import { METRIC, METRICS_NAMESPACE } from '../../shared/stages/metrics.ts';
import { FRONTIER, FUNCTIONS } from '../../shared/topology.ts';
import { buildStack, type Cfn, type StackLabels } from '../helpers/infra-template.ts';

const CRAWL = 'watch';
let template: Template;
let labels: StackLabels;

const alarms = () => Object.values(template.findResources('AWS::CloudWatch::Alarm') as Record<string, Cfn>);
/** The label of the queue an alarm's QueueName dimension points at. */
const queueOf = (alarm: Cfn) => {
  const dim = (alarm.Properties.Dimensions as Cfn[]).find((d) => d.Name === 'QueueName');
  return labels[dim?.Value?.['Fn::GetAtt']?.[0]] ?? 'none';
};

describe('observability: dashboard and alarms', () => {
  before(() => {
    // No bundling: the handlers' code does not change the dashboard or the alarms.
    ({ template, labels } = buildStack(CRAWL, { bundle: false }));
  });

  it('alarms when any dead-letter queue holds a message', () => {
    const dlq = alarms().filter((a) => a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible');
    const expected = [
      ...FRONTIER.map((s) => `frontier:${s.name}:dlq`),
      'stage:extract:dlq',
      'stage:index:dlq',
    ];
    assert.deepEqual(dlq.map(queueOf).sort(), expected.sort());
    for (const a of dlq) {
      assert.equal(a.Properties.Namespace, 'AWS/SQS');
      assert.equal(a.Properties.Threshold, 1);
      assert.equal(a.Properties.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.equal(a.Properties.Statistic, 'Maximum');
    }
  });

  it('alarms when a frontier source’s oldest message is older than an hour', () => {
    const age = alarms().filter((a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage');
    assert.deepEqual(age.map(queueOf).sort(), FRONTIER.map((s) => `frontier:${s.name}`).sort());
    for (const a of age) {
      assert.equal(a.Properties.Threshold, 3600);
      assert.equal(a.Properties.ComparisonOperator, 'GreaterThanThreshold');
    }
  });

  it('alarms on the fetch error rate the handler publishes, for this crawl', () => {
    const [rate, ...more] = alarms().filter((a) => a.Properties.MetricName === METRIC.fetchErrorRate);
    assert.ok(rate);
    assert.equal(more.length, 0);
    assert.equal(rate.Properties.Namespace, METRICS_NAMESPACE);
    assert.equal(rate.Properties.Statistic, 'Average');
    assert.equal(rate.Properties.Threshold, 20);
    assert.equal(rate.Properties.EvaluationPeriods, 3);
    assert.deepEqual(
      Object.fromEntries((rate.Properties.Dimensions as Cfn[]).map((d) => [d.Name, d.Value])),
      { service: 'trawl', crawl: CRAWL, stage: 'fetch' },
    );
    // Plain metric alarms only: the local cloud rejects metric math (Properties.Metrics).
    for (const a of alarms()) assert.equal(a.Properties.Metrics, undefined);
  });

  it('has a dashboard with every handler metric, the alarms and each function', () => {
    const [dash] = Object.values(template.findResources('AWS::CloudWatch::Dashboard') as Record<string, Cfn>);
    assert.equal(dash?.Properties.DashboardName, `trawl-${CRAWL}`);
    // The body is a CloudFormation join of JSON text and references.
    const body = JSON.stringify(dash?.Properties.DashboardBody);
    for (const name of Object.values(METRIC))
      assert.ok(body.includes(`\\"${name}\\"`), `${name} not on the dashboard`);
    assert.ok(body.includes('\\"alarm\\"') || body.includes('alarms'), 'no alarm status widget');
    assert.ok(body.includes('ApproximateAgeOfOldestMessage'));
    assert.equal((body.match(/AWS\/Lambda/g) ?? []).length >= Object.keys(FUNCTIONS).length, true);
  });

  it('turns the embedded metrics on in every function', () => {
    const fns = Object.values(template.findResources('AWS::Lambda::Function') as Record<string, Cfn>).filter(
      (f) => f.Properties.Environment?.Variables?.TRAWL_CRAWL,
    );
    assert.equal(fns.length, Object.keys(FUNCTIONS).length);
    for (const f of fns) {
      assert.equal(f.Properties.Environment.Variables.TRAWL_METRICS, '1');
      // The usage record (shared/stages/usage.ts): the report's cost of a deployed crawl.
      assert.equal(f.Properties.Environment.Variables.TRAWL_USAGE, '1');
    }
  });
});
