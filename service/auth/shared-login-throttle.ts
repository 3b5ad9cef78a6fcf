import { createHash } from 'node:crypto';
import type { ServiceConfig } from '../config.js';
import { LimitWindows, limitsInDatabase, NO_LIMIT, type RunningWindow } from '../store/limit-windows.js';
import type { Store } from '../store/store.js';
import {
  AddressTurns,
  addressKey,
  LOGIN_THROTTLE_DEFAULTS,
  LoginThrottle,
  loginOf,
  rateLimited,
  type EndAttempt,
  type LoginThrottleLimits,
  type LoginThrottling,
} from './login-throttle.js';

/*
 * The failed-login throttle of Service replicas on one PostgreSQL: the rules of login-throttle.ts,
 * with the pair and address counts in `limit_windows` (service/store/limit-windows.ts), so that a
 * guesser gets the same 10 tries of a pair however many replicas the load balancer spreads them
 * over, and a pair locked through one replica is locked on all.
 *
 *   checkPair ─▶ read the pair's window (one SELECT)
 *   attempt   ─▶ one statement: the address under its budget? ─yes─▶ counted there, then on the pair
 *                 │                                                  unless it is locked: in
 *                 │                                                  (a pair locked meanwhile: 429,
 *                 │                                                   the address's count taken back)
 *                 └ no (nothing counted) ─▶ pair locked? 429 │ else wait for the address's turn in
 *                     this process, then one statement: counted on the address, then on the pair
 *                     unless it is locked (then 429, the address's count taken back)
 *   succeeded ─▶ an attempt's count taken back from the address; the pair's window deleted (a
 *                 login with cached credentials: only when checkPair saw failures of the pair)
 *
 * - Keys are hashes: `login-pair:` + sha256(login, address), `login-addr:` + sha256(address); no
 *   login or address is stored in clear. Their windows start at the first failure, as in memory;
 *   rows of ended windows are deleted within a minute, so the table holds no more than the failures
 *   of the last window, each of which cost its sender a scrypt.
 * - The address's queue stays per process (AddressTurns): past its budget an address gets one
 *   verification at a time on each replica, N at a time on N replicas.
 * - Both limits are exact across replicas: each row is counted under its row lock, so parallel
 *   guesses get exactly `perPair` tries of a pair and an address exactly `perAddress` unqueued
 *   attempts. A count taken back (the pair was locked after all) is briefly one too many.
 */

/** The failed-login counts of every replica on one PostgreSQL. */
export class SharedLoginThrottle implements LoginThrottling {
  readonly #windows: LimitWindows;
  readonly #limits: LoginThrottleLimits;
  readonly #now: () => number;
  readonly #turns: AddressTurns;
  /**
   * Pairs whose last checkPair here found failures, so that their success deletes them. A login
   * with cached credentials skips the lookup and the hash; it should not pay a DELETE either.
   */
  readonly #failed = new BoundedSet(10_000);

  constructor(windows: LimitWindows, limits: Partial<LoginThrottleLimits> = {}, now: () => number = Date.now) {
    this.#windows = windows;
    this.#limits = { ...LOGIN_THROTTLE_DEFAULTS, ...limits };
    this.#now = now;
    this.#turns = new AddressTurns(this.#limits);
  }

  async checkPair(email: string, ip: string): Promise<void> {
    const now = this.#now();
    const pair = pairKey(email, ip);
    const w = await this.#windows.read(now, pair);
    this.#refuseLocked(w, now);
    if (w && w.count > 0) this.#failed.add(pair);
  }

  async attempt(email: string, ip: string): Promise<EndAttempt> {
    const now = this.#now();
    const pair = pairKey(email, ip);
    const address = sharedAddressKey(ip);
    const { perAddress, perPair, windowMs } = this.#limits;
    const [onAddress, onPair] = await this.#windows.takeThen(
      now,
      { key: address, endMs: now + windowMs, limit: perAddress },
      { key: pair, endMs: now + windowMs, limit: perPair },
    );
    if (onAddress !== undefined) {
      if (onPair !== undefined) return () => undefined;
      // Locked since the guard's checkPair (a parallel guess took its last try): refused, counted on nothing.
      await this.#windows.takeBack(now, address);
      throw rateLimited(this.#retryAfter(await this.#windows.read(now, pair), now));
    }
    // The address is past its budget: nothing was counted.
    this.#refuseLocked(await this.#windows.read(now, pair), now);
    const turn = addressKey(ip);
    const gate = await this.#turns.take(turn);
    try {
      await this.#countInTurn(pair, address);
    } catch (err) {
      this.#turns.leave(turn, gate);
      throw err;
    }
    return this.#turns.ender(turn, gate);
  }

  async succeeded(email: string, ip: string, attempted: boolean): Promise<void> {
    const pair = pairKey(email, ip);
    const sawFailures = this.#failed.delete(pair);
    // One row a statement (not both in one): see the lock order in limit-windows.ts.
    if (attempted) await this.#windows.takeBack(this.#now(), sharedAddressKey(ip));
    // Cached credentials (every authenticated call) cost no statement here unless checkPair saw failures.
    if (attempted || sawFailures) await this.#windows.clear(pair);
  }

  /** An attempt that has the address's turn: counted on the address, then on the pair unless it is locked (429). */
  async #countInTurn(pair: string, address: string): Promise<void> {
    const now = this.#now();
    const end = now + this.#limits.windowMs;
    const [, onPair] = await this.#windows.takeThen(
      now,
      { key: address, endMs: end, limit: NO_LIMIT },
      { key: pair, endMs: end, limit: this.#limits.perPair },
    );
    if (onPair !== undefined) return;
    await this.#windows.takeBack(now, address);
    throw rateLimited(this.#retryAfter(await this.#windows.read(now, pair), now));
  }

  #refuseLocked(pair: RunningWindow | undefined, now: number): void {
    if (pair && pair.count >= this.#limits.perPair) throw rateLimited(this.#retryAfter(pair, now));
  }

  /** Seconds until the window ends; a whole window when it was gone by the time it was read (cleared meanwhile). */
  #retryAfter(w: RunningWindow | undefined, now: number): number {
    return Math.max(1, Math.ceil(((w?.endMs ?? now + this.#limits.windowMs) - now) / 1000));
  }
}

/**
 * The login throttle of a Service: shared through `limit_windows` on PostgreSQL, in memory on SQLite
 * (one process) or when the configuration says so (`FERRY_LIMIT_COUNTS=memory`).
 */
export function loginThrottleFor(
  store: Pick<Store, 'db' | 'dialect'>,
  config: Pick<ServiceConfig, 'limitCounts'>,
): LoginThrottling {
  return limitsInDatabase(store.dialect, config.limitCounts)
    ? new SharedLoginThrottle(new LimitWindows(store.db))
    : new LoginThrottle();
}

/** A set of at most `max` keys; full, it starts again empty (a forgotten key costs one more DELETE, or forgives less). */
class BoundedSet {
  readonly #keys = new Set<string>();
  constructor(readonly max: number) {}
  add(key: string): void {
    if (this.#keys.size >= this.max) this.#keys.clear();
    this.#keys.add(key);
  }
  delete(key: string): boolean {
    return this.#keys.delete(key);
  }
}

const hash = (text: string): string => createHash('sha256').update(text).digest('base64url');

function pairKey(email: string, ip: string): string {
  return `login-pair:${hash(`${loginOf(email)}\0${addressKey(ip)}`)}`;
}

function sharedAddressKey(ip: string): string {
  return `login-addr:${hash(addressKey(ip))}`;
}
