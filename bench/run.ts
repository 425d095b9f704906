/**
 * `npm run bench` (issue #7); the benchmark itself is bench/main.ts. The stages' logger reads
 * POWERTOOLS_LOG_LEVEL when its module loads, so the level is set before anything is imported.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const { main } = await import('./main.ts');
await main();
