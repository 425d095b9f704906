/**
 * One or more realistic-network profiles alone, with the figures behind the line: requests by
 * operation and SQS billed requests per page, Lambda seconds per stage. For looking into a
 * profile's cost without the whole `npm run bench`.
 * Usage: node --import tsx bench/profile-run.ts [profile index …]   (default: all)
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const { startEmulator, useEmulatorEnv } = await import('../cli/emulator.ts');
const { PROFILES, profileConfig, profileLine, startSlowServer } = await import('./realistic.ts');
const { CORPUS_ROOT, corpusAvailable } = await import('./sites.ts');
const { runTrawl } = await import('./trawl-run.ts');

if (!corpusAvailable()) throw new Error('bench/fixtures/boost-math is missing');
const picked = process.argv.slice(2).map(Number);
const emulator = await startEmulator();
useEmulatorEnv(emulator.endpoint);
try {
  for (const [i, p] of PROFILES.entries()) {
    if (picked.length > 0 && !picked.includes(i)) continue;
    const server = await startSlowServer(CORPUS_ROOT, p);
    try {
      const name = `profile-${i}-${process.pid % 10000}`;
      const run = await runTrawl(p.name, profileConfig(name, p, server.port, '/doc/html/index.html'));
      console.log(profileLine(p, run).line);
      const per = (n: number) => (n / Math.max(1, run.pages)).toFixed(3);
      const calls = Object.entries(run.usage.calls).sort((a, b) => b[1] - a[1]);
      console.log(`  calls a page: ${calls.map(([op, n]) => `${op} ${per(n)}`).join(', ')}`);
      console.log(`  SQS billed a page: ${per(run.usage.sqsBilledRequests)}`);
      const byQueue = Object.entries(run.meter.sqsByQueue).sort((a, b) => b[1] - a[1]);
      console.log(`  SQS billed a page by queue: ${byQueue.map(([k, n]) => `${k} ${per(n)}`).join(', ')}`);
      const units = Object.entries(run.meter.dynamo.write).sort((a, b) => b[1] - a[1]);
      console.log(`  write units a page: ${units.map(([op, n]) => `${op} ${per(n)}`).join(', ')}`);
      for (const [stage, s] of Object.entries(run.usage.stages))
        if (s.invocations > 0)
          console.log(
            `  ${stage}: ${s.invocations} invocations, ${(s.totalMs / 1000).toFixed(1)} s, AWS wait ${(s.awsWaitMs / 1000).toFixed(1)} s`,
          );
      console.log(`  cost a million pages: ${JSON.stringify(run.cost.perMillion)}`);
    } finally {
      await server.close();
    }
  }
} finally {
  await emulator.stop();
}
