/** The project's errors. Seed 001 splits fetch failures into permanent and temporary ones. */
export class CrawlError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CrawlError';
  }
}

/** User input that cannot be used (config file, option, URL). The CLI exits 2 with the message, no stack. */
export class ConfigError extends CrawlError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/**
 * Error codes of a URL whose request was never sent: an address the guard refused (private,
 * loopback, link-local), a host held for its silence (politeness/host-turns.ts). Its URL's error,
 * not a fetch: crawl figures and reports do not count it as one.
 */
export const UNSENT_ERRORS: ReadonlySet<string> = new Set(['private-address', 'host-not-answering']);

/**
 * A fetch that failed, in seed 001's two classes: temporary (timeouts, resets, refused connections,
 * 503, DNS without an answer: retried) or permanent (404 and other 4xx/5xx, a malformed URL or
 * redirect, a refused address, DNS failure). `code` names the cause in the URL's state.
 */
export class FetchError extends CrawlError {
  constructor(
    message: string,
    readonly errorKind: 'temporary' | 'permanent',
    readonly code: string,
    readonly httpStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FetchError';
  }
}
