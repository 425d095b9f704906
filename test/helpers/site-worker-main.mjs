// The worker thread's entry (site-worker.ts): plain JavaScript that registers tsx itself, since a
// worker does not always inherit the parent's `--import tsx` hooks; then the TypeScript server.
import { register } from 'tsx/esm/api';

register();
await import('./site-worker-serve.ts');
