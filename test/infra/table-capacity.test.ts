/** DynamoDB capacity as a deployment choice (issue 13): on-demand by default, provisioned with auto scaling. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { crawlerPropsFromContext } from '../../infra/app-context.ts';
import { capacityFromContext } from '../../infra/constructs/table-capacity.ts';
import { CrawlerStack } from '../../infra/crawler-stack.ts';
import { resourceNames } from '../../shared/topology.ts';
import { cdkContext } from '../helpers/infra-template.ts';

function template(context: Record<string, unknown>): Template {
  const app = new App({ context: { ...cdkContext(), 'aws:cdk:bundling-stacks': [] } });
  const props = crawlerPropsFromContext((k) => context[k]);
  return Template.fromStack(new CrawlerStack(app, resourceNames(props.crawlName).stack, props));
}

describe('DynamoDB capacity choice', () => {
  it('on-demand by default: both tables PAY_PER_REQUEST, no scaling policies', () => {
    const t = template({ crawl: 'cap-a' });
    t.resourcePropertiesCountIs('AWS::DynamoDB::Table', { BillingMode: 'PAY_PER_REQUEST' }, 2);
    t.resourceCountIs('AWS::ApplicationAutoScaling::ScalableTarget', 0);
  });

  it('-c dynamoCapacity=provisioned: both tables provisioned, reads and writes scaled at 70 %', () => {
    const t = template({ crawl: 'cap-b', dynamoCapacity: 'provisioned', dynamoMaxWriteUnits: '200' });
    t.resourcePropertiesCountIs(
      'AWS::DynamoDB::Table',
      { ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 } },
      2,
    );
    t.resourcePropertiesCountIs(
      'AWS::ApplicationAutoScaling::ScalableTarget',
      { MaxCapacity: 200, MinCapacity: 5 },
      4,
    );
    t.resourcePropertiesCountIs(
      'AWS::ApplicationAutoScaling::ScalingPolicy',
      {
        PolicyType: 'TargetTrackingScaling',
        TargetTrackingScalingPolicyConfiguration: Match.objectLike({ TargetValue: 70 }),
      },
      4,
    );
  });

  it('anything else is a clear error', () => {
    assert.throws(() => capacityFromContext('reserved', undefined), /dynamoCapacity must be/);
    assert.throws(() => capacityFromContext('provisioned', 'lots'), /dynamoMaxWriteUnits/);
  });
});
