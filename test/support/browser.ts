// A real browser for tests: Debian's Chromium (installed by `./dev test` when missing) driven by playwright-core.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Launches headless Chromium. The flags keep it off the network it would otherwise call on its own (updates, sync,
 * field trials, QUIC probes): this machine's network is closed, and a test must not depend on one anyway.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: run the tests with ./dev test (it installs Debian's chromium package), or apt-get install -y chromium`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}
