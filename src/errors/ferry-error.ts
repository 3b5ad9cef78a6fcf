import { errorSpec, type ErrorCode, type ErrorKind } from './codes.js';

/** One problem with one field of an input, as the REST API reports it under `errors`. */
export interface FieldError {
  path: string;
  message: string;
}

/** The plain-data form of an error, as it crosses a boundary (REST, channel, isolate). */
export interface ErrorData {
  code: ErrorCode;
  kind: ErrorKind;
  message: string;
  details?: Record<string, unknown>;
  errors?: FieldError[];
}

/**
 * The one error class of Ferry. Test for errors by `code`, never by `instanceof` across a boundary:
 * {@link toErrorData} turns it into plain data there.
 */
export class FerryError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly details: Record<string, unknown> | undefined;
  readonly errors: FieldError[] | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: Record<string, unknown>; errors?: FieldError[]; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'FerryError';
    this.code = code;
    this.kind = errorSpec(code).kind;
    this.details = opts.details;
    this.errors = opts.errors;
  }

  get status(): number {
    return errorSpec(this.code).status;
  }
}

export function isFerryError(err: unknown): err is FerryError {
  return err instanceof FerryError;
}

export function toErrorData(err: FerryError): ErrorData {
  const data: ErrorData = { code: err.code, kind: err.kind, message: err.message };
  if (err.details) data.details = err.details;
  if (err.errors) data.errors = err.errors;
  return data;
}

/** Shorthands for the errors the REST API raises most. */
export const notFound = (what: string): FerryError => new FerryError('API_NOT_FOUND', `${what} was not found.`);
export const invalid = (message: string, errors?: FieldError[]): FerryError =>
  new FerryError('API_VALIDATION', message, errors ? { errors } : {});
export const conflict = (message: string): FerryError => new FerryError('API_CONFLICT', message);
