import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { allowInvoke, allowObjects, allowQueues, allowTable } from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';
import { PREFIXES } from './storage.ts';

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
    allowQueues(this.fn, r.frontier, ['SendMessage']);
    allowTable(this.fn, r.storage.urls, ['GetItem', 'PutItem', 'UpdateItem', 'BatchGetItem']);
    allowTable(this.fn, r.storage.hosts, ['GetItem', 'PutItem', 'UpdateItem']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.config], ['GetObject']);
    allowInvoke(this.fn, r.fetchFunctionArn);
    scheduleStage(this, 'Discovery', discoveryIntervalMinutes, this.fn);
  }
}
