/**
 * Parallel first logins (service/http/guard.ts): attempts with the same credentials from one address
 * share one verification, so a burst of a client's right password is not locked out by its own
 * count, and a burst of one wrong password is one guess. The throttle is the Service's own: in
 * memory on SQLite, in the database on PostgreSQL.
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { addMembership, insertUser, newUserRow } from '../../../../service/store/repos/users.repo.js';
import { nowIso } from '../../../../service/util/values.js';
import { startService, type ApiResponse, type Credentials, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Problem {
  code: string;
}

const BURST = 40;

/**
 * A user whose password hash is made with 8 times the Service's scrypt work (p = 8, what a hash of
 * a later, costlier setting would hold), so that verifying it (some 0.4 s) outlasts the arrival of
 * a burst: calls arriving after a verification has ended start the next one, which counts again.
 */
async function addSlowUser(s: TestService): Promise<Credentials> {
  const email = `slow-${randomBytes(4).toString('hex')}@ferry.test`;
  const password = 'Slow-password-1';
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 64, { N: 16_384, r: 8, p: 8 });
  const passwordHash = ['scrypt', 16_384, 8, 8, salt.toString('base64'), hash.toString('base64')].join('$');
  const { db } = s.service.store;
  const row = newUserRow({ email, firstName: 'Slow', lastName: 'User', passwordHash, isApproved: true }, nowIso());
  const { id } = await insertUser(db, row);
  await addMembership(db, s.orgId, id, 'User', nowIso());
  return { email, password };
}

describe.each(STORE_TARGETS)('Parallel logins on $name', (target) => {
  let svc: TestService | undefined;
  afterEach(async () => {
    await svc?.close();
    svc = undefined;
  });

  /** GET /v1/users: any authenticated user, no Security Rule involved. */
  const login = (s: TestService, auth: Credentials): Promise<ApiResponse<Problem>> =>
    s.request<Problem>('GET', '/v1/users', { auth });

  const statuses = async (calls: Array<Promise<ApiResponse<Problem>>>): Promise<number[]> =>
    (await Promise.all(calls)).map((r) => r.status);

  const wrong = (c: Credentials, guess: string | number): Credentials => ({
    email: c.email,
    password: `${c.password}-wrong-${guess}`,
  });

  it('let a burst of first calls with the right password in on a Service that has verified nothing', async () => {
    const s = (svc = await startService(target));
    const calls = Array.from({ length: BURST }, () => s.request<Problem>('GET', `/v1/orgs/${s.orgId}`));
    expect(await statuses(calls)).toEqual(Array(BURST).fill(200));
    // A user the Service has never verified, on a route outside any Organization.
    const a = await addUser(s, s.orgId, 'User');
    expect(await statuses(Array.from({ length: BURST }, () => login(s, a)))).toEqual(Array(BURST).fill(200));
  });

  it('answer a burst of one wrong password 401 and count it as one failure of the pair', async () => {
    const s = (svc = await startService(target));
    const a = await addSlowUser(s);
    const b = await addUser(s, s.orgId, 'User');

    expect(await statuses(Array.from({ length: BURST }, () => login(s, wrong(a, 'same'))))).toEqual(
      Array(BURST).fill(401),
    );
    // One failure counted: nine distinct guesses more are answered, the pair locks on the tenth failure.
    const after: number[] = [];
    for (let i = 0; i < 9; i++) after.push((await login(s, wrong(a, i))).status);
    expect(after).toEqual(Array(9).fill(401));
    const locked = await login(s, a);
    expect([locked.status, locked.body.code]).toEqual([429, 'API_RATE_LIMITED']);

    // The right password after such a burst still gets in (and clears the pair).
    expect(await statuses(Array.from({ length: BURST }, () => login(s, wrong(b, 'same'))))).toEqual(
      Array(BURST).fill(401),
    );
    expect((await login(s, b)).status).toBe(200);
  });

  it('still lock a pair after 10 distinct wrong passwords sent in parallel, each several times', async () => {
    const s = (svc = await startService(target));
    const a = await addUser(s, s.orgId, 'User');
    const guesses = Array.from({ length: 15 }, (_, i) => wrong(a, i));
    const answers = await Promise.all(guesses.flatMap((g) => Array.from({ length: 4 }, () => login(s, g))));

    expect(new Set(answers.map((r) => r.status))).toEqual(new Set([401, 429]));
    // Every 401 comes from a verification counted on the pair: no more than 10 distinct guesses got one.
    const answered = new Set(answers.flatMap((r, i) => (r.status === 401 ? [Math.floor(i / 4)] : [])));
    expect(answered.size).toBeGreaterThan(0);
    expect(answered.size).toBeLessThanOrEqual(10);
    const locked = await login(s, a);
    expect([locked.status, locked.body.code]).toEqual([429, 'API_RATE_LIMITED']);
  });
});
