/** Seed: start URLs and sitemaps into the user source (crawl start and each discovery cycle). */
import { scheduledHandler } from '../../shared/stages/handler-kit.ts';
import { runSeedStage } from '../../shared/stages/seed-stage.ts';

export const handler = scheduledHandler('seed', (deps) => runSeedStage(deps));
