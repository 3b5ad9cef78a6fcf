/**
 * Debian's Chromium driven by playwright-core, for the console's browser tests: headless, no
 * sandbox (tests may run as root), nothing in the background that reaches the network, and a fresh
 * profile each launch (Playwright gives every launch its own temporary user-data-dir and removes it
 * on close). In CI (CI=true) a missing Chromium fails the tests; elsewhere they are skipped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env['FERRY_CHROMIUM'] ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = fs.existsSync(CHROMIUM);
if (!HAS_CHROMIUM && process.env['CI'] === 'true') {
  throw new Error(
    `${CHROMIUM} is missing: the console's browser tests need Debian's chromium (apt-get install chromium).`,
  );
}
if (!HAS_CHROMIUM) process.stderr.write(`Console browser tests skipped: no Chromium at ${CHROMIUM}.\n`);

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/** The built console must exist (npm install / npm run build makes it) for the Service to serve it. */
export const CONSOLE_BUILT = fs.existsSync(path.resolve(import.meta.dirname, '../../../dist/console/index.html'));
if (!CONSOLE_BUILT && process.env['CI'] === 'true') {
  throw new Error('dist/console is missing: npm ci (npm run build) builds the console before the tests run.');
}

/** When FERRY_CONSOLE_SCREENSHOTS=1, screenshots of the pages go to docs/console/<name>.png. */
const SHOTS = process.env['FERRY_CONSOLE_SCREENSHOTS'] === '1';
const SHOT_DIR = path.resolve(import.meta.dirname, '../../../docs/console');

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  fs.mkdirSync(SHOT_DIR, { recursive: true });
  // The passing notices would cover the page.
  const dismiss = page.getByRole('button', { name: 'Dismiss' });
  while ((await dismiss.count()) > 0) await dismiss.first().click();
  await page.screenshot({
    path: path.join(SHOT_DIR, `${name}.png`),
    fullPage: true,
    animations: 'disabled',
    caret: 'hide',
  });
}
