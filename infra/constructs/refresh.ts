import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { SCHEDULES, TABLES } from '../../shared/topology.ts';
import { allowInvoke, allowObjects, allowQueues, allowTable } from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';
import { PREFIXES } from './storage.ts';

/** Refresh stage: queries due URLs from the byRefresh index (no scans) and re-enqueues or expires them. */
export class RefreshStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    this.fn = stageFunction(this, 'refresh', { environment: r.environment });
    allowTable(this.fn, r.storage.urls, ['Query'], TABLES.urls.refreshIndex);
    allowTable(this.fn, r.storage.urls, ['GetItem', 'UpdateItem', 'DeleteItem']);
    allowQueues(this.fn, r.frontier, ['SendMessage']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.config], ['GetObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.changes], ['PutObject']);
    allowInvoke(this.fn, r.fetchFunctionArn);
    scheduleStage(this, 'Schedule', SCHEDULES.refresh.everyMinutes, this.fn);
  }
}
