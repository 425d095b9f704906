import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { STAGE_QUEUES } from '../../shared/topology.ts';
import { grantStage } from './grants.ts';
import { type CrawlResources, consumeStageQueue, stageFunction } from './stage-function.ts';

/** Index stage: records each page's outcome (manifest lines, the URL table where needed) and publishes document changes. */
export class IndexStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    // The change feed: one EventBridge event per index batch on the default bus (plus the S3 log).
    this.fn = stageFunction(this, 'index', { environment: { ...r.environment, TRAWL_EVENT_BUS: 'default' } });
    consumeStageQueue(this.fn, r.stageQueues.index.queue, STAGE_QUEUES.index);
    grantStage(this.fn, 'index', r);
  }
}
