/**
 * One moto server per integration test file, on a free loopback port, stopped after the file.
 * Every AWS client of the process is pointed at it through AWS_ENDPOINT_URL.
 */
import { freePort, startEmulator, useEmulatorEnv } from '../../cli/emulator.ts';
import { spawnMinistack } from '../../cli/local-cloud.ts';

export interface TestEmulator {
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts the emulator and points this process at it. */
export async function startTestEmulator(): Promise<TestEmulator> {
  // TRAWL_TEST_EMULATOR=ministack: the same suite on the local cloud (README: moto or ministack).
  const emu =
    process.env.TRAWL_TEST_EMULATOR === 'ministack'
      ? await spawnMinistack(await freePort())
      : await startEmulator();
  process.env.AWS_ENDPOINT_URL = emu.endpoint;
  useEmulatorEnv(emu.endpoint);
  return emu;
}

let counter = 0;
/** A crawl name no other test in this process uses (resource names derive from it). */
export function uniqueCrawlName(prefix: string): string {
  counter++;
  return `${prefix}-${process.pid % 10000}-${counter}`.slice(0, 31);
}
