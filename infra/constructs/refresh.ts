import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { grantStage } from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';

/** Refresh stage (every `everyMinutes`): reads the due days' refresh manifests (no scans) and re-enqueues or expires the URLs. */
export class RefreshStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources, everyMinutes: number) {
    super(scope, id);
    // Deletions found by the refresh stage (out of scope, now noIndex) go to the change feed's bus too.
    this.fn = stageFunction(this, 'refresh', {
      environment: { ...r.environment, TRAWL_EVENT_BUS: 'default' },
    });
    grantStage(this.fn, 'refresh', r);
    scheduleStage(this, 'Schedule', everyMinutes, this.fn);
  }
}
