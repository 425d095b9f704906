/** Extract: page bundles → outcomes and new links (exactly once per crawl). */
import { runExtractStage } from '../../shared/stages/extract-stage.ts';
import { sqsBatchHandler } from '../../shared/stages/handler-kit.ts';
import type { ExtractMessage } from '../../shared/types.ts';

export const handler = sqsBatchHandler<ExtractMessage>('extract', runExtractStage);
