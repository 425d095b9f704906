// One Lambda container for bench/fetch-memory.ts: imports a handler bundle, runs one scheduled
// invocation, and sends the RSS once loaded and the peak RSS (the kernel's VmHWM: what Lambda
// reports as Max Memory Used) to its parent. Plain JavaScript on purpose: started from a .ts
// file, Node 24 would load its type stripper first, about 17 MB a Lambda container does not hold.
import { readFileSync } from 'node:fs';

const vm = (field) =>
  Number(/(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8').split(`${field}:`)[1] ?? '')?.[1]) / 1024;

const { handler } = await import(process.argv[2]);
const loaded = vm('VmRSS');
const cpu0 = process.cpuUsage();
const t0 = Date.now();
const deadline = t0 + 120_000;
const result = await handler(
  { version: '0', id: 'bench', 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} },
  {
    functionName: 'trawl-bench-fetch',
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: 'bench',
    getRemainingTimeInMillis: () => deadline - Date.now(),
  },
);
const cpu = process.cpuUsage(cpu0);
process.send?.({
  loaded,
  peak: vm('VmHWM'),
  fetched: result.fetched,
  cpuMs: (cpu.user + cpu.system) / 1000,
  wallMs: Date.now() - t0,
});
process.exit(0);
