/**
 * Direct tests of the AWS adapters (shared/aws/), one suite per adapter in test/integration/adapters/,
 * all against one real emulator (moto) started by the first suite and stopped here: one process
 * and one emulator for the set keeps it to seconds. Not through the stages: each adapter's own
 * contract, the edges the stages rely on (limits, conditions, retries, idempotency).
 */
import { after } from 'node:test';
import { stopSharedAdapterEnv } from '../helpers/adapter-env.ts';
import './adapters/url-table.ts';
import './adapters/host-table.ts';
import './adapters/work-queues.ts';
import './adapters/page-store.ts';
import './adapters/provision-secrets.ts';

after(stopSharedAdapterEnv);
