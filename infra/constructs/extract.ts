import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { STAGE_QUEUES } from '../../shared/topology.ts';
import { allowInvoke, allowObjects, allowQueues, allowTable } from './grants.ts';
import { type CrawlResources, consumeStageQueue, stageFunction } from './stage-function.ts';
import { PREFIXES } from './storage.ts';

/** Extract stage: parses page bundles, writes documents, routes new links to the frontier. */
export class ExtractStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources) {
    super(scope, id);
    this.fn = stageFunction(this, 'extract', { environment: r.environment });
    // The event source grants ReceiveMessage, DeleteMessage, ChangeMessageVisibility,
    // GetQueueAttributes and GetQueueUrl on the extract queue (no wildcards).
    consumeStageQueue(this.fn, r.stageQueues.extract.queue, STAGE_QUEUES.extract);
    allowQueues(this.fn, [...r.frontier, r.stageQueues.index.queue], ['SendMessage']);
    allowTable(this.fn, r.storage.urls, ['GetItem', 'PutItem', 'UpdateItem', 'BatchGetItem']);
    allowTable(this.fn, r.storage.hosts, ['GetItem', 'PutItem', 'UpdateItem']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.pages, PREFIXES.config], ['GetObject']);
    allowObjects(this.fn, r.storage.bucket, [PREFIXES.docs], ['PutObject']);
    allowInvoke(this.fn, r.fetchFunctionArn);
  }
}
