// Problem types (RFC 9457) the API answers with, one per kind of failure, and how their details word lists and counts.

export const PROBLEMS = {
  'invalid-request': { status: 400, title: 'Invalid request' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict with the current state' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'uri-too-long': { status: 414, title: 'URI too long' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'unprocessable': { status: 422, title: 'Nothing could be processed' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'header-fields-too-large': { status: 431, title: 'Request header fields too large' },
  'internal': { status: 500, title: 'Internal error' },
} as const;
export type ProblemKind = keyof typeof PROBLEMS;

/** One bad input: `name` is the query parameter, path parameter or JSON pointer into the body. */
export interface FieldError {
  in: 'query' | 'path' | 'body' | 'header';
  name: string;
  detail: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The same text as detail: what simple REST clients display. */
  message: string;
  instance?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export function problemType(kind: ProblemKind): string {
  return `/problems/${kind}`;
}

/** `a`, `a or b`, `a, b or c`; past `max` items, the first `max` and how many more. */
export function listing(items: readonly string[], conjunction: 'and' | 'or', max = 20): string {
  if (items.length > max) return `${items.slice(0, max).join(', ')} ${conjunction} ${items.length - max} more`;
  if (items.length < 2) return items.join('');
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items.at(-1)}`;
}

/** `1 number`, `2 numbers`: a count with its noun, so no detail says "number(s)" when it knows how many. */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
