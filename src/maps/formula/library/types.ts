/**
 * The shape of the function library as it lives inside the sandbox: one object `L` that the
 * installers of `library/*.ts` fill in, in order (core first), and that compiled formula programs
 * bind to local constants. Types only: nothing here exists at run time.
 */

/** A value inside the sandbox. Dates are `Date` objects; everything else is a JSON primitive. */
export type FValue = string | number | boolean | null | Date;

/** A formula function as the library implements it. */
export type FormulaFn = (...args: FValue[]) => FValue;

/** The error a formula function throws for a record: it becomes a record error on the host. */
export interface FailureLike extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  /** Set by the traced program: the offset of the call or operator that failed. */
  pos?: number;
  /** Set by the traced program: the function or operator that failed. */
  fn?: string | null;
}

/** One record error as the program returns it: `[record, formula, code, message, details, offset, function]`. */
export type ErrorTuple = [number, number, string, string, Record<string, unknown> | null, number, string | null];

/** A Lookup Table as it crosses into the sandbox: its identity and its pairs, in any order. */
export interface WireLookupTable {
  readonly id: string;
  readonly name: string;
  /** `[value1, value2]` pairs. */
  readonly pairs: ReadonlyArray<readonly [string, string]>;
}

export interface FormulaLibrary {
  // ── state of the current batch ──
  /** The batch's clock: NOW() in every record of the batch. */
  now: Date;
  /** NOW() at 00:00 UTC. */
  today: Date;
  /** The longest text a function may produce, in UTF-16 code units. */
  maxText: number;

  // ── errors ──
  /** Throws a record error. */
  fail: (code: string, message: string, details?: Record<string, unknown>) => never;
  /** Whether a thrown value is a record error raised by the library. */
  isFailure: (e: unknown) => e is FailureLike;
  /** Turns anything thrown while evaluating a record into its error tuple. */
  errorTuple: (e: unknown, record: number, formula: number) => ErrorTuple;
  /** Calls `f(...args)`, and on failure stamps the error with `pos` and `name` (the traced programs). */
  call: (pos: number, name: string | null, f: (...args: FValue[]) => FValue, args: FValue[]) => FValue;
  /** Quotes a value for an error message, cut to a readable length. */
  show: (v: FValue) => string;

  // ── conversions ──
  text: (v: FValue) => string;
  /** A number's text: the shortest that reads back the same, never in exponent notation. */
  numText: (n: number) => string;
  /** Reads text as a number, or undefined when it is not one. */
  parseNum: (s: string) => number | undefined;
  num: (v: FValue) => number;
  /** A number cut toward zero. */
  int: (v: FValue) => number;
  bool: (v: FValue) => boolean;
  /** A date, or null for null. */
  date: (v: FValue) => Date | null;
  /** Reads ISO-8601 text as a date, or undefined when it is not one. */
  parseDate: (s: string) => Date | undefined;
  /** A Date from epoch milliseconds; out of range fails the record. */
  mkDate: (ms: number) => Date;
  /** Epoch milliseconds of a UTC calendar instant; any year, parts carry over. */
  utc: (
    year: number,
    month: number,
    day: number,
    hour?: number,
    minute?: number,
    second?: number,
    ms?: number,
  ) => number;
  /** Reads text in a date format (the codes of FORMATDATE), or undefined when it does not fit. */
  parseWithFormat: (s: string, format: string) => Date | undefined;
  /** TODATETIME with a format: null stays null, a date stays itself, text must fit the format. */
  toDateWithFormat: (v: FValue, format: FValue) => Date | null;
  /** Checks a produced text against {@link maxText}. */
  checkText: (s: string, fn: string) => string;
  /** Checks that a number is finite. */
  finite: (n: number, fn: string) => number;
  /** How many decimal places the shortest text of a number has. */
  decimals: (n: number) => number;
  /** number × 10^digits computed on the decimal text, so that 1.005 shifted by 2 is 100.5 exactly. */
  shift: (n: number, digits: number) => number;

  // ── operators ──
  add: (a: FValue, b: FValue) => number;
  sub: (a: FValue, b: FValue) => number;
  mul: (a: FValue, b: FValue) => number;
  div: (a: FValue, b: FValue) => number;
  neg: (a: FValue) => number;
  plus: (a: FValue) => number;
  cat: (a: FValue, b: FValue) => string;
  eq: (a: FValue, b: FValue) => boolean;
  ne: (a: FValue, b: FValue) => boolean;
  lt: (a: FValue, b: FValue) => boolean;
  le: (a: FValue, b: FValue) => boolean;
  gt: (a: FValue, b: FValue) => boolean;
  ge: (a: FValue, b: FValue) => boolean;
  /** The value a formula hands back: undefined → null, a number must be finite, text within limits. */
  out: (v: FValue | undefined) => FValue;

  // ── randomness ──
  /** Seeds the batch's generator (four 32-bit words from the host's crypto). */
  seed: (a: number, b: number, c: number, d: number) => void;
  /** A uniformly distributed number in [0, 1) with 53 random bits. */
  random: () => number;
  /** 32 random bits. */
  random32: () => number;
  /** Starts a batch: its clock and its random seed. */
  begin: (now: number, s0: number, s1: number, s2: number, s3: number) => void;

  // ── lookups ──
  /** Loads the run's Lookup Tables (JSON of {@link WireLookupTable}[]), replacing any loaded before. */
  loadLookupTables: (json: string) => void;

  /** The formula functions by catalogue name. */
  fn: Record<string, FormulaFn>;
}
