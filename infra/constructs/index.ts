import { Stack } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { STAGE_QUEUES } from '../../shared/topology.ts';
import { allowObjects, allowPutEventsDefaultBus, allowTable } from './grants.ts';
import { type CrawlResources, consumeStageQueue, stageFunction } from './stage-function.ts';
import { PREFIXES } from './storage.ts';

/** Index stage: records each page's outcome (manifest lines, the URL table where needed) and publishes document changes. */
export class IndexStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    // The change feed: one EventBridge event per index batch on the default bus (plus the S3 log).
    this.fn = stageFunction(this, 'index', { environment: { ...r.environment, TRAWL_EVENT_BUS: 'default' } });
    consumeStageQueue(this.fn, r.stageQueues.index.queue, STAGE_QUEUES.index);
    // Whole items only (BatchWriteItem puts and deletes); BatchGetItem reads compound elements' states.
    allowTable(this.fn, r.storage.urls, ['BatchGetItem', 'BatchWriteItem']);
    // docs/: spilled outcomes are read (the extract stage writes documents); changes/: only appended.
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.docs], ['GetObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.changes], ['PutObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.refresh], ['PutObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.config], ['GetObject']);
    allowPutEventsDefaultBus(this.fn, Stack.of(this));
  }
}
