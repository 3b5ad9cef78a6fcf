/**
 * The web console in a real browser (Debian's Chromium through playwright-core), end to end
 * against a real Service and a real Agent process: sign in, see the Agent Running, start a Solution
 * and watch it finish, open a record error with the failed record's values, fix the cause (the
 * target's trigger that refused the record), reprocess it, and find the record in the target. Also:
 * a cross-site form cannot use the session cookie, sign-out ends the session, and a Read-only user
 * gets the API's own 403 for an Administrator's action.
 *
 * FERRY_CONSOLE_SCREENSHOTS=1 saves a screenshot of each page to docs/console/ (docs/console.md).
 */
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type RunningAgent,
} from '../solutions/harness.js';
import { addUser } from '../../helpers/users.js';
import type { TestService } from '../../helpers/service.js';
import { CONSOLE_BUILT, HAS_CHROMIUM, launchChromium, screenshot } from './browser.js';

const PEOPLE = 'id,name\n1,ann\n2,bob\n3,cy\n4,dee\n';
const ADMIN = { email: 'admin@ferry.test', password: 'Admin-password-1' };

describe.skipIf(!HAS_CHROMIUM || !CONSOLE_BUILT)('the console in Chromium, with a real Service and Agent', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let browser: Browser;
  let file: string;
  let solutionId: string;
  let mapId: number;
  let O: string;

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { people: PEOPLE } });
    sut = bed.sut;
    agent = bed.agent;
    O = `/v1/orgs/${sut.orgId}`;
    // The failed records' values are kept by the Service, so the console can show them.
    const settings = await sut.request('PUT', `${O}/SecuritySettings`, {
      body: {
        captureOnFailedRecordsForReprocessing: true,
        captureDuringCloudAppRuns: true,
        captureDuringLocalAgentAppRuns: true,
        isSourceDataLocal: false,
      },
    });
    expect(settings.status).toBe(200);
    // The target refuses cy, until an operator drops the trigger.
    file = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['people'], { primaryKey: true }).file;
    withTarget((db) =>
      db.exec(
        "CREATE TRIGGER refuse_cy BEFORE INSERT ON people WHEN NEW.name = 'cy' BEGIN SELECT RAISE(ABORT, 'cy is not welcome'); END",
      ),
    );
    const csvId = await createConnection(sut, 'People files', CSV, { folder: bed.folder });
    const dbId = await createConnection(sut, 'People DB', SQLITE, { file });
    const sol = await createSolution(
      sut,
      agent.agentId,
      'People',
      [copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people' })],
      { prepare: true },
    );
    solutionId = sol.id;
    [mapId] = sol.mapIds as [number];
    const table = await sut.request('POST', `${O}/lookuptables`, {
      body: {
        name: 'Countries',
        description: 'ISO codes',
        lookupTableValues: [
          { value1: 'DE', value2: 'Germany' },
          { value1: 'FR', value2: 'France' },
        ],
      },
    });
    expect(table.status, JSON.stringify(table.body)).toBe(201);
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await stopAll(sut);
  });

  function withTarget<T>(use: (db: Database.Database) => T): T {
    const db = new Database(file);
    try {
      return use(db);
    } finally {
      db.close();
    }
  }
  const names = (): string[] =>
    withTarget((db) => db.prepare('SELECT name FROM people ORDER BY id').all() as Array<{ name: string }>).map(
      (r) => r.name,
    );

  async function signedIn(creds: {
    email: string;
    password: string;
  }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${sut.url}/console/`);
    // With the keyboard only: the email field has the focus, Tab goes to the password, Enter signs in.
    await expect.poll(() => page.evaluate<string | undefined>('document.activeElement?.name')).toBe('email');
    await page.keyboard.type(creds.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(creds.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    return { context, page };
  }
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name });

  it(
    'signs in, sees the Agent Running, runs the Solution, opens a record error, reprocesses it after the fix, and the target has the record',
    { timeout: 300_000 },
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${sut.url}/console/`);
      await page.getByRole('heading', { name: 'Ferry console' }).waitFor();
      await screenshot(page, 'sign-in');
      await page.getByLabel('Email').fill(ADMIN.email);
      await page.getByLabel('Password').fill(ADMIN.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      // Nothing secret in the page's storage: the session is the HttpOnly cookie.
      expect(await page.evaluate('[localStorage.length, sessionStorage.length, document.cookie]')).toEqual([0, 0, '']);

      await nav(page, 'Agents').click();
      const row = page.locator(`tr[data-agent="${agent.agentId}"]`);
      await row.getByText('Running', { exact: true }).waitFor();
      await screenshot(page, 'agents');

      await nav(page, 'Solutions').click();
      await page.getByRole('link', { name: 'People', exact: true }).waitFor();
      await screenshot(page, 'solutions');
      await page.getByRole('link', { name: 'People', exact: true }).click();
      await page.getByRole('heading', { name: 'People' }).waitFor();
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await page.getByText('People finished its run.').waitFor({ timeout: 120_000 });
      await expect.poll(() => page.getByTestId('processed').textContent()).toBe('4');
      expect(await page.getByTestId('failed').textContent()).toBe('1');
      await screenshot(page, 'solution');
      expect(names()).toEqual(['ann', 'bob', 'dee']);

      await page.getByRole('link', { name: /Run history of People/ }).click();
      const runLink = page.getByRole('link', { name: /^#\d+$/ });
      await runLink.first().waitFor();
      await screenshot(page, 'history');
      await runLink.first().click();
      const errorRow = page.locator('tr[data-error]');
      await errorRow.getByText(/cy is not welcome/).waitFor();
      await errorRow.getByRole('button', { name: 'Open' }).click();
      // The failed record's values, as the Service kept them.
      const values = page.getByRole('region', { name: 'Failed record values' });
      await values.getByText('"cy"').waitFor();
      await screenshot(page, 'execution');

      // The operator fixes the cause, then reprocesses the selected record.
      withTarget((db) => db.exec('DROP TRIGGER refuse_cy'));
      await errorRow.getByRole('checkbox').click();
      await expect.poll(() => page.getByTestId('remaining').textContent(), { timeout: 15_000 }).toBe('1');
      await page.getByRole('button', { name: 'Reprocess Selected' }).click();
      await page.getByText(/Reprocessing 1 record as a new run/).waitFor();
      await until('cy in the target', () => (names().includes('cy') ? true : undefined), 120_000);
      expect(names()).toEqual(['ann', 'bob', 'cy', 'dee']);
      await expect.poll(() => page.getByTestId('remaining').textContent(), { timeout: 30_000 }).toBe('0');

      // The reprocess run appears in the history, successful.
      await page.locator('.crumbs').getByRole('link', { name: 'Run history' }).click();
      await page.getByRole('link', { name: /\(reprocess\)/ }).waitFor({ timeout: 30_000 });
      await context.close();
    },
  );

  it(
    'shows every page (Overview, Connections, metadata, Map, Lookup Tables, Message Endpoints), also at phone width',
    { timeout: 180_000 },
    async () => {
      const { context, page } = await signedIn(ADMIN);
      await page.getByRole('region', { name: 'Agents' }).waitFor();
      await page.getByRole('heading', { name: 'Runs of the last 24 hours' }).waitFor();
      await page
        .getByRole('table', { name: 'Runs of the last 24 hours' })
        .getByRole('link', { name: 'People' })
        .first()
        .waitFor();
      await screenshot(page, 'overview');

      // Disable and enable again, from the list.
      await nav(page, 'Solutions').click();
      const people = page.locator('tr[data-solution="People"]');
      await people.getByRole('button', { name: 'Disable' }).click();
      await people.getByText('Disabled', { exact: true }).waitFor();
      await people.getByRole('button', { name: 'Enable' }).click();
      await people.getByRole('button', { name: 'Disable' }).waitFor();
      await expect
        .poll(
          async () =>
            (await sut.request<{ isDisabled: boolean }>('GET', `${O}/solutions/${solutionId}`)).body.isDisabled,
        )
        .toBe(false);

      await nav(page, 'Connections').click();
      await page.getByRole('link', { name: 'People files' }).waitFor();
      await screenshot(page, 'connections');
      await page.getByRole('link', { name: 'People files' }).click();
      await page.getByRole('button', { name: 'people' }).click();
      await page
        .getByRole('region', { name: 'Fields of people' })
        .getByText('name', { exact: true })
        .waitFor({ timeout: 60_000 });
      await screenshot(page, 'connection-metadata');

      await page.goto(`${sut.url}/console/#/o/${sut.orgId}/solutions/${solutionId}/maps/${mapId}`);
      await page.locator('li[data-block="Put"]').waitFor();
      await page.getByRole('button', { name: 'Validate' }).click();
      await page.getByText(/The Map is valid|validation answer/).waitFor({ timeout: 60_000 });
      await page.locator('li[data-block="Put"] summary').click();
      await screenshot(page, 'map');

      await nav(page, 'Lookup Tables').click();
      await page.getByRole('link', { name: 'Countries' }).click();
      await page.getByRole('cell', { name: 'Germany' }).waitFor();
      await screenshot(page, 'lookup-table');

      await nav(page, 'Message Endpoints').click();
      await page.getByRole('heading', { name: 'Message Endpoints' }).waitFor();
      await screenshot(page, 'endpoints');

      await page.setViewportSize({ width: 390, height: 844 });
      await nav(page, 'Overview').click();
      await page.getByRole('heading', { name: 'Runs of the last 24 hours' }).waitFor();
      // Nothing wider than the phone's screen but the tables' own scrolling regions.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await screenshot(page, 'overview-phone');
      await context.close();
    },
  );

  it(
    'refuses the session cookie to a form of another site, and signing out ends the session',
    { timeout: 120_000 },
    async () => {
      const { context, page } = await signedIn(ADMIN);
      const [cookie] = await context.cookies();
      expect(cookie).toMatchObject({ name: 'ferry_session', httpOnly: true, sameSite: 'Strict', path: '/' });

      // Another origin (another port) whose page posts a form to the Service: the browser sends the
      // cookie (same site), but a form cannot add X-Ferry-Console, so the Service refuses it.
      const target = `${sut.url}${O}/agents/provision_onpremise_agent`;
      const evil = http.createServer((_req, res) => {
        res.setHeader('Content-Type', 'text/html');
        res.end(
          `<form method="post" action="${target}"><input name="a" value="1"></form><script>document.forms[0].submit()</script>`,
        );
      });
      await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
      try {
        const port = (evil.address() as { port: number }).port;
        const attack = await context.newPage();
        const answer = attack.waitForResponse((res) => res.url() === target);
        await attack.goto(`http://127.0.0.1:${port}/`);
        const res = await answer;
        expect(res.status()).toBe(401);
        await attack.close();
      } finally {
        evil.close();
      }
      const keys = await sut.request<unknown[]>('GET', `${O}/agents`);
      expect(keys.status).toBe(200);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      expect(await context.cookies()).toEqual([]);
      // The old cookie, replayed with the header, is refused: the session is gone from the store.
      const replay = await context.request.get(`${sut.url}${O}/agents`, {
        headers: { 'X-Ferry-Console': '1', Cookie: `ferry_session=${cookie?.value ?? ''}` },
      });
      expect(replay.status()).toBe(401);
      await context.close();
    },
  );

  it('gives a Read-only user the same 403 as the API for an Administrator action', { timeout: 120_000 }, async () => {
    const viewer = await addUser({ service: sut.service } as unknown as TestService, sut.orgId, 'ReadOnly');
    const { context, page } = await signedIn(viewer);
    await nav(page, 'Agents').click();
    const row = page.locator(`tr[data-agent="${agent.agentId}"]`);
    await row.getByText('Running', { exact: true }).waitFor();
    const answer = page.waitForResponse((res) => res.url().includes('/restart'));
    await row.getByRole('button', { name: 'Restart after work' }).click();
    const res = await answer;
    const basic = await fetch(`${sut.url}${O}/agents/${agent.agentId}/restart`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${viewer.email}:${viewer.password}`).toString('base64')}` },
    });
    expect(res.status()).toBe(403);
    expect(basic.status).toBe(403);
    const [fromConsole, fromApi] = [(await res.json()) as { code: string }, (await basic.json()) as { code: string }];
    expect(fromConsole.code).toBe('API_FORBIDDEN_ROLE');
    expect(fromApi.code).toBe(fromConsole.code);
    await page.getByText(/Restart after work: .*API_FORBIDDEN_ROLE/).waitFor();
    await context.close();
  });
});
