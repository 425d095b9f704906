import { Stack } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { SCHEDULES } from '../../shared/topology.ts';
import {
  allowInvoke,
  allowListPrefix,
  allowObjects,
  allowPutEventsDefaultBus,
  allowQueues,
  allowTable,
} from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';
import { PREFIXES } from './storage.ts';

/** Refresh stage: reads the due days' refresh manifests (no scans) and re-enqueues or expires the URLs. */
export class RefreshStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    // Deletions found by the refresh stage (out of scope, now noIndex) go to the change feed's bus too.
    this.fn = stageFunction(this, 'refresh', {
      environment: { ...r.environment, TRAWL_EVENT_BUS: 'default' },
    });
    allowTable(this.fn, r.storage.urls, ['GetItem', 'BatchGetItem', 'UpdateItem', 'DeleteItem']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.refresh], ['GetObject', 'PutObject']);
    allowListPrefix(this.fn, r.storage.bucket, PREFIXES.refresh);
    // The refresh cursor (where the last cycle stopped) is a key/value item of the hosts table.
    allowTable(this.fn, r.storage.hosts, ['GetItem', 'PutItem']);
    allowPutEventsDefaultBus(this.fn, Stack.of(this));
    allowQueues(this.fn, r.frontier, ['SendMessage']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.config], ['GetObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.changes], ['PutObject']);
    allowInvoke(this.fn, r.fetchFunctionArn);
    scheduleStage(this, 'Schedule', SCHEDULES.refresh.everyMinutes, this.fn);
  }
}
