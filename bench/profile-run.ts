/**
 * One or more realistic-network profiles alone, with the figures behind the line: requests by
 * operation and SQS billed requests per page, Lambda seconds per stage. For looking into a
 * profile's cost without the whole `npm run bench`.
 * Usage: node --import tsx bench/profile-run.ts [profile index | HOSTS,MEDIAN_MS,WAIT_MS[,HANDSHAKE_MS] …]   (default: all)
 * (HANDSHAKE_MS: https, every handshake that long)
 * e.g. `64,200,1000`: a profile of 64 hosts, 200 ms median latency and a 1 s wait, beside the bench's own.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const { startEmulator, useEmulatorEnv } = await import('../cli/emulator.ts');
const { PROFILES, profileConfig, profileLine, silentLine, startSlowServer } = await import('./realistic.ts');
const { CORPUS_ROOT, corpusAvailable } = await import('./sites.ts');
const { runTrawl } = await import('./trawl-run.ts');

if (!corpusAvailable()) throw new Error('bench/fixtures/boost-math is missing');
const args = process.argv.slice(2);
const custom = args
  .filter((a) => a.includes(','))
  .map((a) => {
    const [hosts = 0, medianMs = -1, waitMs = -1, handshake] = a.split(',').map(Number);
    const handshakeMs = handshake !== undefined && handshake >= 0 ? handshake : undefined;
    if (!(hosts > 0 && medianMs >= 0 && waitMs >= 0)) throw new Error(`not HOSTS,MEDIAN_MS,WAIT_MS: ${a}`);
    const name =
      `${hosts} hosts, ${medianMs} ms, ${waitMs ? `${waitMs / 1000} s wait` : 'no wait'}` +
      (handshakeMs === undefined ? '' : `, https ${handshakeMs} ms handshake`);
    return { name, hosts, medianMs, sigma: 0.6, waitMs, handshakeMs };
  });
const picked = args.filter((a) => !a.includes(',')).map(Number);
const chosen = args.length === 0 ? PROFILES : [...PROFILES.filter((_, i) => picked.includes(i)), ...custom];
const emulator = await startEmulator();
useEmulatorEnv(emulator.endpoint);
try {
  for (const [i, p] of chosen.entries()) {
    const server = await startSlowServer(CORPUS_ROOT, p);
    try {
      const name = `profile-${i}-${process.pid % 10000}`;
      const run = await runTrawl(p.name, profileConfig(name, p, server.port, '/doc/html/index.html'));
      console.log(profileLine(p, run, server.pageTimes).line);
      const silent = silentLine(p, run, server.silentRequests);
      if (silent) console.log(silent);
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
