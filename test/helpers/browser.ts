/**
 * The system's Chromium (Debian's `chromium` package, installed by scripts/setup.sh) driven by
 * playwright-core: Playwright's own browser downloads do not work on the CI machines.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The browser binary: $TRAWL_CHROMIUM or the first system one found; null when there is none. */
export function systemChromium(): string | null {
  const env = process.env.TRAWL_CHROMIUM;
  if (env) return existsSync(env) ? env : null;
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/** Launches it headless (no sandbox: CI runs as root, where Chromium's sandbox refuses to start). */
export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
}
