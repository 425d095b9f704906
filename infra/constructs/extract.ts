import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { STAGE_QUEUES } from '../../shared/topology.ts';
import { grantStage } from './grants.ts';
import { type CrawlResources, consumeStageQueue, stageFunction } from './stage-function.ts';

/** Extract stage: parses page bundles, writes documents, routes new links to the frontier. */
export class ExtractStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    this.fn = stageFunction(this, 'extract', { environment: r.environment });
    consumeStageQueue(this.fn, r.stageQueues.extract.queue, STAGE_QUEUES.extract);
    grantStage(this.fn, 'extract', r);
  }
}
