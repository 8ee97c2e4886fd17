// The one error type the server throws for a client's mistake; the HTTP layer renders it as problem+json.
import { PROBLEMS, type FieldError, type ProblemKind } from '../api/problems.ts';

export class ApiError extends Error {
  readonly kind: ProblemKind;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extensions: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(kind: ProblemKind, detail: string, options: {
    errors?: FieldError[];
    extensions?: Record<string, unknown>;
    headers?: Record<string, string>;
  } = {}) {
    super(detail);
    this.kind = kind;
    this.status = PROBLEMS[kind].status;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }
}

/** A 400 listing every bad input, with the first one's text as the detail. */
export function invalid(errors: FieldError[]): ApiError {
  const first = errors[0]?.detail ?? 'Invalid request';
  const detail = errors.length > 1 ? `${first} (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : first;
  return new ApiError('invalid-request', detail, { errors });
}

/** 404 for an unknown id: `Campaign "…" does not exist in this account`. */
export function notFound(what: string, id: string, within = 'in this account'): ApiError {
  return new ApiError('not-found', `${what} ${JSON.stringify(id)} does not exist ${within}`);
}
