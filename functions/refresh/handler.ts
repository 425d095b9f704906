/** Refresh: aged documents back into the refresh source; out-of-scope ones deleted. */
import { scheduledHandler } from '../../shared/stages/handler-kit.ts';
import { runRefreshStage } from '../../shared/stages/refresh-stage.ts';

export const handler = scheduledHandler('refresh', (deps) => runRefreshStage(deps));
