import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { grantStage } from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';

export interface SeedStageProps {
  resources: CrawlResources;
  /** EventBridge rate for sitemap/start-URL discovery */
  discoveryIntervalMinutes: number;
}

/** Seed stage: puts start URLs and sitemap URLs into the frontier on a schedule, then kicks fetch. */
export class SeedStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, { resources: r, discoveryIntervalMinutes }: SeedStageProps) {
    super(scope, id);
    this.fn = stageFunction(this, 'seed', { environment: r.environment });
    grantStage(this.fn, 'seed', r);
    scheduleStage(this, 'Discovery', discoveryIntervalMinutes, this.fn);
  }
}
