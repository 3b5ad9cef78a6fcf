import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS, FUNCTION_CATEGORIES } from '../../../../src/maps/formula/catalogue.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface FunctionModel {
  id: string;
  name: string;
  categoryName: string;
  descriptionURL: string;
  lastModificationDate: string;
}

describe.each(STORE_TARGETS)('Functions on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const list = () => svc.request<FunctionModel[]>('GET', `/v1/orgs/${svc.orgId}/Functions`);

  it('lists every catalogue function, by category then name, with Total-Count', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(FORMULA_FUNCTIONS.length);
    expect(res.body.length).toBeGreaterThanOrEqual(80);
    expect(res.headers['total-count']).toBe(String(res.body.length));
    const order = (f: FunctionModel) =>
      FUNCTION_CATEGORIES.indexOf(f.categoryName as (typeof FUNCTION_CATEGORIES)[number]);
    for (let i = 1; i < res.body.length; i += 1) {
      const [a, b] = [res.body[i - 1] as FunctionModel, res.body[i] as FunctionModel];
      expect(
        order(a) < order(b) || (order(a) === order(b) && a.name.localeCompare(b.name, 'en') < 0),
        `${a.name} before ${b.name}`,
      ).toBe(true);
    }
    expect(new Set(res.body.map((f) => f.id)).size).toBe(res.body.length);
    const left = res.body.find((f) => f.name === 'LEFT');
    expect(left).toMatchObject({ categoryName: 'Text', descriptionURL: `${svc.url}/functions/LEFT` });
    expect(left?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Date(left?.lastModificationDate ?? '').toISOString()).toBe(left?.lastModificationDate);
    // Stable ids: the same on every call and store.
    expect((await list()).body.map((f) => f.id)).toEqual(res.body.map((f) => f.id));
  });

  it('is readable with the Read-only role and hidden from outsiders; the path is case-insensitive', async () => {
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/functions`, { auth: reader })).status).toBe(200);
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/Functions`, { auth: outsider })).status).toBe(404);
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/Functions`, { auth: null })).status).toBe(401);
  });

  it('serves the public description page each descriptionURL points to', async () => {
    const models = (await list()).body;
    for (const name of ['LEFT', 'LOOKUPTABLEVALUE1_DEFAULT', 'FORMATDATE']) {
      const model = models.find((f) => f.name === name);
      const page = await svc.request('GET', new URL(model?.descriptionURL ?? '').pathname, { auth: null });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      const fn = FORMULA_FUNCTIONS.find((f) => f.name === name);
      expect(page.text).toContain(`<h1>${name}</h1>`);
      expect(page.text).toContain(fn?.signature.replace(/&/g, '&amp;'));
      expect(page.text).not.toMatch(/<script/i);
    }
    expect((await svc.request('GET', '/functions/left', { auth: null })).status).toBe(200);
  });

  it('escapes the catalogue text in the page', async () => {
    const page = await svc.request('GET', '/functions/HTMLENCODE', { auth: null });
    expect(page.text).toContain('HTMLENCODE(&quot;&lt;b&gt;Fish &amp; Chips&lt;/b&gt;&quot;)');
    expect(page.text).not.toContain('<b>Fish');
    const proper = await svc.request('GET', '/functions/PROPER', { auth: null });
    expect(proper.text).toContain('o&#39;neil-smith');
  });

  it('answers an unknown function with a 404 problem', async () => {
    const res = await svc.request<{ code: string; detail: string }>('GET', '/functions/NOSUCHFUNCTION', { auth: null });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('API_NOT_FOUND');
    const script = await svc.request('GET', `/functions/${encodeURIComponent('<script>alert(1)</script>')}`, {
      auth: null,
    });
    expect(script.status).toBe(404);
    expect(script.headers['content-type']).not.toMatch(/html/);
  });
});

describe('Functions behind a public URL', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' }, { publicUrl: 'https://ferry.example.com/' });
  });
  afterAll(async () => svc?.close());

  it('builds descriptionURL from FERRY_PUBLIC_URL', async () => {
    const res = await svc.request<FunctionModel[]>('GET', `/v1/orgs/${svc.orgId}/Functions`);
    expect(res.body.find((f) => f.name === 'NOW')?.descriptionURL).toBe('https://ferry.example.com/functions/NOW');
  });
});
