/**
 * User info in URLs (`https://user:password@host/`) is a secret: every log line and CLI message
 * shows it as `***` (issue 16 item 4). Normalized URLs have none (normalize-url.ts drops it), so
 * only raw input (a start URL, a sitemap or robots.txt line, an error message) can carry it.
 */

// scheme:// (a bounded scheme keeps the scan linear), then up to the LAST "@" before the path
// (a raw "@" may sit in a password)
const USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#]*@/gi;

/** `text` with the user info of every URL in it replaced by `***`. */
export function maskUserInfo(text: string): string {
  return text.includes('@') ? text.replace(USERINFO, '$1***@') : text;
}

/** A JSON.stringify replacer for log lines: every string value masked. */
export function maskingReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? maskUserInfo(value) : value;
}
