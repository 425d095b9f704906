/** Index: delta check, document bulks in S3, URL state in DynamoDB, the change feed. */
import { sqsBatchHandler } from '../../shared/stages/handler-kit.ts';
import { runIndexStage } from '../../shared/stages/index-stage.ts';
import type { IndexMessage } from '../../shared/types.ts';

export const handler = sqsBatchHandler<IndexMessage>('index', runIndexStage);
