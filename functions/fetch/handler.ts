/** Fetch: weighted polling of the frontier, many concurrent fetches per invocation. */

import { runFetchStage, sourcesToPoll } from '../../shared/stages/fetch-stage.ts';
import { invocationDeadline, scheduledHandler } from '../../shared/stages/handler-kit.ts';
import { containerMetrics, fetchMetrics, publishMetrics } from '../../shared/stages/metrics.ts';

export const handler = scheduledHandler('fetch', async (deps, context, event) => {
  const stop = (context as { trawlStop?: AbortSignal }).trawlStop;
  const summary = await runFetchStage(deps, {
    deadline: invocationDeadline(context, deps.now()),
    // The local runner's Ctrl-C (cli/runner.ts); absent on Lambda.
    signal: stop,
    // Started by wake-up calls: only the sources they name.
    sources: sourcesToPoll(event),
    // What it may hold follows its memory: Lambda's, or the local runner's (sized from the config).
    memoryMb: Number(context.memoryLimitInMB) || undefined,
  });
  publishMetrics(containerMetrics(), 'fetch', fetchMetrics(summary));
  // Work left when the time ran out: start the next fetcher now instead of waiting for the tick.
  if (!summary.drained && !stop?.aborted) await deps.kickFetch();
  return {
    rounds: summary.rounds,
    fetched: summary.fetched,
    requeued: summary.requeued,
    drained: summary.drained,
  };
});
