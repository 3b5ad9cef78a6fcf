import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { FerryError } from '../../src/errors/ferry-error.js';
import { parseAddress } from './ip-range.js';

/*
 * Throttles password guessing without locking anyone else out (docs/decisions.md, API conventions).
 *
 *   attempt ─▶ (email, address) pair locked? ──yes──▶ 429, no lookup, no hash
 *                 │ no
 *                 ▼
 *              credentials verified before (cache)? ──yes──▶ in (pair count cleared)
 *                 │ no
 *                 ▼
 *              same credentials being verified? ──yes──▶ wait for that verification: its answer
 *                 │ no                                   (in, 401 or 429), counted on nothing
 *                 ▼
 *              address over its failure budget? ──yes──▶ wait for the address's turn (queue full: 429)
 *                 │ no                                     │ pair locked meanwhile: 429
 *                 ▼                                        ▼
 *              counted as a failure of the pair and the address
 *                 ▼
 *              scrypt ─▶ right: in (pair cleared, address count taken back) │ wrong: 401
 *
 * - Attempts with the same credentials (login as sent, password, address as counted here, and the
 *   account and stored hash looked up) share one verification while it runs (service/http/guard.ts):
 *   the first is counted and hashed, the others get its answer. A client's burst of first calls
 *   with its right password (an empty cache after every restart) is one attempt, not one each,
 *   which used to lock the pair past 10; a burst of one wrong password is one guess. Each distinct
 *   password still counts. Calls arriving after the verification has ended find the cache, or
 *   start the next one.
 * - The pair is the login as sent (lower-cased, whether or not such a user exists, so a lock tells
 *   nothing about which accounts exist) and the client address; IPv6 addresses count by their /64,
 *   which one client usually holds whole.
 * - A locked pair refuses its correct password too: letting it through would answer every guess
 *   (a cached password costs one sha256), and the lock would slow nothing. Other accounts at that
 *   address, and that account at other addresses, are not touched.
 * - The address budget stops one client spraying a few passwords over many accounts without
 *   refusing anyone else there: past it, the address's unverified attempts are hashed one at a time,
 *   each wrong one followed by a pause, so a sprayer gets a slow trickle of guesses and no more than
 *   one core, while a colleague's right password is verified in its turn. Only when the address
 *   already has a full queue of attempts waiting is one refused; such refusals, like a locked pair's,
 *   count on nothing, so a client retrying on 429 locks no pair.
 * - Credentials no account can have (service/auth/basic-credentials.ts: a NUL, bytes that are not
 *   UTF-8, over-long) take the same path as a wrong password, minus the lookup and the hash: the
 *   pair check, an attempt ended at once as a failure. They neither escape the counts nor reach a
 *   store that would fail on them.
 * - Windows are fixed, starting at a pair's or address's first failure. The maps are bounded: past
 *   their cap, ended windows are dropped, then the oldest entries. An address's queue exists only
 *   while attempts from it wait or run.
 * - Two implementations of {@link LoginThrottling}: this file's LoginThrottle counts in memory (the
 *   single process on SQLite); shared-login-throttle.ts counts the pairs and addresses in the
 *   database, so that replicas on one PostgreSQL share them (a guesser gets the same 10 tries however
 *   many replicas the load balancer spreads them over). The address's queue (its turns, the pause
 *   after a wrong password) stays per process in both ({@link AddressTurns}): with N replicas an
 *   address past its budget gets up to N verifications at a time, one per replica, not one.
 */

/** How many failed logins a {@link LoginThrottle} allows, and how long it remembers them. */
export interface LoginThrottleLimits {
  /** Failed logins of one account from one address within a window before the pair is locked. */
  readonly perPair: number;
  /** Failed logins from one address, over all accounts, within a window before its unverified attempts queue. */
  readonly perAddress: number;
  /** Attempts of an address past its budget that may wait for their turn; one more is refused. */
  readonly queuePerAddress: number;
  /** Pause after a wrong password verified in turn before the address's next turn, in milliseconds. */
  readonly pauseMs: number;
  /** Length of a window in milliseconds. */
  readonly windowMs: number;
  /** Most pairs and addresses remembered (each). */
  readonly maxEntries: number;
}

export const LOGIN_THROTTLE_DEFAULTS: LoginThrottleLimits = Object.freeze({
  perPair: 10,
  perAddress: 300,
  queuePerAddress: 10,
  pauseMs: 500,
  windowMs: 15 * 60_000,
  maxEntries: 100_000,
});

interface Window {
  start: number;
  count: number;
}

/** Failure counts in fixed windows per key, with at most `max` keys. */
class FailureWindows {
  readonly #windows = new Map<string, Window>();
  readonly #length: number;
  readonly #max: number;

  constructor(length: number, max: number) {
    this.#length = length;
    this.#max = max;
  }

  /** The window of `key` when it is still running and has reached `limit`. */
  full(key: string, limit: number, now: number): Window | undefined {
    const w = this.#current(key, now);
    return w && w.count >= limit ? w : undefined;
  }

  add(key: string, now: number): void {
    const w = this.#current(key, now);
    if (w) {
      w.count += 1;
      return;
    }
    this.#makeRoom(now);
    this.#windows.set(key, { start: now, count: 1 });
  }

  clear(key: string): void {
    this.#windows.delete(key);
  }

  /** Takes one count back (from a window still running). */
  remove(key: string, now: number): void {
    const w = this.#current(key, now);
    if (w && w.count > 0) w.count -= 1;
  }

  retryAfterSeconds(w: Window, now: number): number {
    return Math.max(1, Math.ceil((w.start + this.#length - now) / 1000));
  }

  #current(key: string, now: number): Window | undefined {
    const w = this.#windows.get(key);
    if (!w) return undefined;
    if (now - w.start < this.#length) return w;
    this.#windows.delete(key);
    return undefined;
  }

  #makeRoom(now: number): void {
    if (this.#windows.size < this.#max) return;
    for (const [key, w] of this.#windows) {
      if (now - w.start >= this.#length) this.#windows.delete(key);
    }
    // Still full of running windows: the oldest go (a Map iterates in insertion order).
    for (const key of this.#windows.keys()) {
      if (this.#windows.size < this.#max) break;
      this.#windows.delete(key);
    }
  }
}

/** The key a client address counts under: IPv4 as is, IPv6 by its /64. */
export function addressKey(ip: string): string {
  const addr = parseAddress(ip);
  if (!(addr instanceof ipaddr.IPv6)) return addr?.toString() ?? ip;
  return `${addr.parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}

/** Ends an {@link LoginThrottle.attempt}: `right` when the password was verified. */
export type EndAttempt = (right: boolean) => void;

/**
 * What the guard (service/http/guard.ts) asks of a login throttle, in this order: checkPair before
 * any lookup, attempt before a password is hashed, succeeded when it was right. The in-memory
 * throttle answers checkPair and succeeded at once; the shared one after a query.
 */
export interface LoginThrottling {
  /** Throws (or rejects with) API_RATE_LIMITED when this login has failed too often from this address. */
  checkPair(email: string, ip: string): void | Promise<void>;
  /** Counts an attempt as a failure before its password is hashed; see {@link LoginThrottle.attempt}. */
  attempt(email: string, ip: string): Promise<EndAttempt>;
  /** A successful login; see {@link LoginThrottle.succeeded}. */
  succeeded(email: string, ip: string, attempted: boolean): void | Promise<void>;
}

/** One verification at a time for an address past its budget; the turn passes in arrival order. */
export interface Gate {
  busy: boolean;
  waiting: Array<() => void>;
}

/**
 * The turns of the addresses past their budget that have attempts running or waiting, in this
 * process: one attempt at a time per address, at most `queuePerAddress` waiting, and a pause of
 * `pauseMs` after a wrong password before the next turn.
 */
export class AddressTurns {
  readonly #gates = new Map<string, Gate>();
  readonly #queuePerAddress: number;
  readonly #pauseMs: number;

  constructor(limits: Pick<LoginThrottleLimits, 'queuePerAddress' | 'pauseMs'>) {
    this.#queuePerAddress = limits.queuePerAddress;
    this.#pauseMs = limits.pauseMs;
  }

  /** Takes the address's turn, waiting behind the attempts already queued; throws when the queue is full. */
  async take(address: string): Promise<Gate> {
    let gate = this.#gates.get(address);
    if (!gate) {
      gate = { busy: false, waiting: [] };
      this.#gates.set(address, gate);
    }
    if (!gate.busy) {
      gate.busy = true;
      return gate;
    }
    if (gate.waiting.length >= this.#queuePerAddress) {
      throw new FerryError('API_RATE_LIMITED', 'Too many logins from your address at once; retry in a second.', {
        details: { retryAfterSeconds: 1 },
      });
    }
    const waiting = gate;
    await new Promise<void>((resolve) => waiting.waiting.push(resolve));
    return waiting;
  }

  /** Hands the turn to the next attempt waiting, or frees the address. */
  leave(address: string, gate: Gate): void {
    const next = gate.waiting.shift();
    if (next) {
      next();
      return;
    }
    gate.busy = false;
    if (this.#gates.get(address) === gate) this.#gates.delete(address);
  }

  /** The end of an attempt that holds the turn: a right password passes it on at once, a wrong one after the pause. */
  ender(address: string, gate: Gate): EndAttempt {
    let ended = false;
    return (right) => {
      if (ended) return;
      ended = true;
      if (right || this.#pauseMs <= 0) this.leave(address, gate);
      else setTimeout(() => this.leave(address, gate), this.#pauseMs).unref();
    };
  }
}

/** The answer to a locked pair: one message, whether or not the account exists. */
export const rateLimited = (retryAfterSeconds: number): FerryError =>
  new FerryError(
    'API_RATE_LIMITED',
    `Too many failed logins from your address; retry in ${retryAfterSeconds} seconds.`,
    {
      details: { retryAfterSeconds },
    },
  );

/** Per account–address and per address counts of failed logins in this process's memory (see the diagram above). */
export class LoginThrottle implements LoginThrottling {
  readonly #limits: LoginThrottleLimits;
  readonly #now: () => number;
  readonly #pairs: FailureWindows;
  readonly #addresses: FailureWindows;
  readonly #turns: AddressTurns;

  constructor(limits: Partial<LoginThrottleLimits> = {}, now: () => number = Date.now) {
    this.#limits = { ...LOGIN_THROTTLE_DEFAULTS, ...limits };
    this.#now = now;
    this.#pairs = new FailureWindows(this.#limits.windowMs, this.#limits.maxEntries);
    this.#addresses = new FailureWindows(this.#limits.windowMs, this.#limits.maxEntries);
    this.#turns = new AddressTurns(this.#limits);
  }

  /** Throws API_RATE_LIMITED when this login has failed too often from this address; before any lookup. */
  checkPair(email: string, ip: string): void {
    const now = this.#now();
    const w = this.#pairs.full(pairKey(email, ip), this.#limits.perPair, now);
    if (w) throw rateLimited(this.#pairs.retryAfterSeconds(w, now));
  }

  /**
   * Before a password is hashed: throws API_RATE_LIMITED when the pair is locked, else counts the
   * attempt as a failure until {@link succeeded} says otherwise and resolves to the function that
   * ends it (called with whether the password was right). Checking and counting in one step means
   * parallel guesses cannot all pass the check before the first of them fails. Past the address's
   * budget the attempt first waits for the address's turn, and is counted only when it gets it; a
   * full queue refuses it uncounted.
   */
  async attempt(email: string, ip: string): Promise<EndAttempt> {
    const now = this.#now();
    const pair = pairKey(email, ip);
    const address = addressKey(ip);
    this.#refuseLocked(pair, now);
    if (!this.#addresses.full(address, this.#limits.perAddress, now)) {
      this.#count(pair, address, now);
      return () => undefined;
    }
    const gate = await this.#turns.take(address);
    try {
      this.#refuseLocked(pair, this.#now());
    } catch (err) {
      this.#turns.leave(address, gate);
      throw err;
    }
    this.#count(pair, address, this.#now());
    return this.#turns.ender(address, gate);
  }

  /**
   * A successful login: the pair's earlier mistakes are forgiven (the address's are not), and an
   * {@link attempt} it made is taken back from the address.
   */
  succeeded(email: string, ip: string, attempted: boolean): void {
    this.#pairs.clear(pairKey(email, ip));
    if (attempted) this.#addresses.remove(addressKey(ip), this.#now());
  }

  #refuseLocked(pair: string, now: number): void {
    const locked = this.#pairs.full(pair, this.#limits.perPair, now);
    if (locked) throw rateLimited(this.#pairs.retryAfterSeconds(locked, now));
  }

  #count(pair: string, address: string, now: number): void {
    this.#pairs.add(pair, now);
    this.#addresses.add(address, now);
  }
}

/** A login as it is looked up: the same normalisation, so letter case does not make a fresh pair. */
export function loginOf(email: string): string {
  return email.trim().toLowerCase();
}

function pairKey(email: string, ip: string): string {
  // Hashed, so that a full map holds 44 characters per login, not up to 320.
  const login = createHash('sha256').update(loginOf(email)).digest('base64');
  return `${login}\0${addressKey(ip)}`;
}
