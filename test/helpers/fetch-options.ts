// FetchOptions for tests that call the fetcher directly (shared/net/fetcher.ts): loopback allowed.
import type { FetchOptions } from '../../shared/net/fetcher.ts';

export function fetchOptions(over: Partial<FetchOptions> = {}): FetchOptions {
  return {
    userAgent: 'trawl-test',
    timeoutMs: 5000,
    maxBytes: 1024 * 1024,
    allowPrivateNetworks: true,
    resolve: {},
    proxy: null,
    ignoredMimeTypes: ['video/*', 'audio/*', 'image/*'],
    metadataFirst: true,
    ...over,
  };
}
