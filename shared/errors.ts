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

/** Seed 001 temporary errors: timeouts, resets, refused connections, 503 with Retry-After, DNS no answer. */
export class TemporaryFetchError extends CrawlError {
  constructor(
    message: string,
    readonly code: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TemporaryFetchError';
  }
}

/** Seed 001 permanent errors: 404, other 4xx/5xx, non-conditional 304, malformed redirect, DNS failure. */
export class PermanentFetchError extends CrawlError {
  constructor(
    message: string,
    readonly code: string,
    readonly httpStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PermanentFetchError';
  }
}
