/** Refresh: aged documents back into the refresh source; out-of-scope ones deleted. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { scheduledHandler } from '../../shared/stages/handler-kit.ts';
import { containerMetrics, METRIC, publishMetrics } from '../../shared/stages/metrics.ts';
import { runRefreshStage } from '../../shared/stages/refresh-stage.ts';

export const handler = scheduledHandler('refresh', async (deps) => {
  const summary = await runRefreshStage(deps);
  publishMetrics(containerMetrics(), 'refresh', [
    { name: METRIC.documentsDeleted, unit: MetricUnit.Count, value: summary.deleted },
  ]);
  return summary;
});
