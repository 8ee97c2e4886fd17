// What every route shares: merged request parameters, list responses, problem+json rendering.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatContentRange, type ListResource } from '../api/content-range.ts';
import { decodeListQuery, type ListQuery, type ListSpec } from '../api/list-query.ts';
import { listing, PROBLEMS, problemType, type FieldError, type Problem, type ProblemKind } from '../api/problems.ts';
import { ApiError, invalid } from './errors.ts';
import { malformedQuery, malformedParams } from './request-decoding.ts';

/** Parameters sent url-encoded in a GET body (curl --data-urlencode without --get), read by app.ts. */
export const bodyParams = new WeakMap<FastifyRequest, URLSearchParams>();

/**
 * The request's parameters: the query string, plus url-encoded ones from the body of a GET or of a
 * form-encoded POST. The query string wins where both give one. A parameter given twice is a 400.
 */
export function params(request: FastifyRequest): Record<string, string | undefined> {
  // No prototype: `__proto__` is a name like any other, kept and refused as unknown.
  const out = Object.create(null) as Record<string, string | undefined>;
  const errors: FieldError[] = malformedParams(malformedQuery(request.query));
  const fromBody = bodyParams.get(request) ?? (request.body instanceof URLSearchParams ? request.body : undefined);
  if (fromBody) {
    for (const key of new Set(fromBody.keys())) {
      const all = fromBody.getAll(key);
      if (all.length > 1) errors.push({ in: 'query', name: key, detail: givenTwice(key, all.length) });
      out[key] = all[0];
    }
  }
  for (const [key, value] of Object.entries(request.query as Record<string, string | string[]>)) {
    if (Array.isArray(value)) errors.push({ in: 'query', name: key, detail: givenTwice(key, value.length) });
    else out[key] = value;
  }
  if (errors.length) throw invalid(errors);
  return out;
}

function givenTwice(name: string, times: number): string {
  return `The ${name} parameter is given ${times} times; give it once`;
}

/** 400 naming every parameter that is not one of `allowed`. */
export function onlyParams(p: Record<string, string | undefined>, allowed: readonly string[]): void {
  const unknown = Object.keys(p).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    throw invalid(unknown.map((name) => ({
      in: 'query', name,
      detail: `Unknown parameter ${JSON.stringify(name)}; this operation takes ${allowed.length ? listing(allowed, 'and') : 'no parameters'}`,
    })));
  }
}

/** The decoded range, sort and filter of a list request; 400 for anything else or anything wrong. */
export function listQuery(request: FastifyRequest, spec: ListSpec): ListQuery {
  const p = params(request);
  onlyParams(p, ['range', 'sort', 'filter']);
  const q = decodeListQuery(spec, p);
  if (!q.ok) throw invalid(q.errors);
  return q.value;
}

export function sendList(reply: FastifyReply, resource: ListResource, range: [number, number], records: unknown[], total: number): unknown {
  return sendListJson(reply, resource, range, { json: JSON.stringify(records), count: records.length, total });
}

/** A list page whose records are already JSON text (the store wrote it): sent as it is. */
export function sendListJson(reply: FastifyReply, resource: ListResource, range: [number, number],
  page: { json: string; count: number; total: number }): unknown {
  reply.header('x-total-count', String(page.total));
  reply.header('content-range', formatContentRange(resource, range[0], page.count, page.total));
  return reply.code(200).type('application/json; charset=utf-8').send(page.json);
}

/** `instance` is the request's path; without one (a request whose URL could not be read), the member is left out. */
export function problem(kind: ProblemKind, detail: string, instance: string | undefined, errors?: FieldError[],
  extensions: Record<string, unknown> = {}): Problem {
  const p: Problem = { type: problemType(kind), title: PROBLEMS[kind].title, status: PROBLEMS[kind].status, detail, message: detail };
  if (instance !== undefined) p.instance = instance;
  // No extension may replace a standard member (an extension `type` once hid the problem type).
  for (const [k, v] of Object.entries(extensions)) if (!(k in p)) p[k] = v;
  if (errors?.length) p.errors = errors;
  return p;
}

/** `instance`: the request's path unless given (one too long to echo). */
export function sendProblem(reply: FastifyReply, err: ApiError, instance = reply.request.url.split('?')[0]!): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply
    .code(err.status)
    .type('application/problem+json; charset=utf-8')
    .send(problem(err.kind, err.message, instance, err.errors, err.extensions));
}

/** `true`/`false` (also 1/0) for boolean query parameters. */
export function booleanParam(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw invalid([{ in: 'query', name, detail: `The ${name} parameter must be true or false; got ${JSON.stringify(raw)}` }]);
}

export function integerParam(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) {
    throw invalid([{ in: 'query', name, detail: `The ${name} parameter must be an integer from ${min} to ${max}; got ${JSON.stringify(raw)}` }]);
  }
  return n;
}

export function jsonParam(name: string, raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw invalid([{ in: 'query', name, detail: `The ${name} parameter must be URL-encoded JSON; got ${JSON.stringify(raw.slice(0, 80))}` }]);
  }
}
