// OTLP/JSON trace requests decoded into span lines: the one format the demo's receiver writes and `daemon trace` reads.
// The encoding is OTLP's (opentelemetry-proto docs/specification.md, "JSON Protobuf Encoding"): proto3 JSON with
// lowerCamelCase keys, trace and span ids as hex (not base64), enums as integers, 64-bit integers as decimal strings
// or numbers; unknown fields are ignored.
import { z } from 'zod/v4';

/** One span as the receiver keeps it: one JSON line of the traces file. */
export interface SpanLine {
  traceId: string;
  spanId: string;
  /** Absent on a trace's root span. */
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  /** The resource's `service.name` ("unknown_service" when it has none, as the SDKs name it). */
  service: string;
  /** Unix time in milliseconds (microsecond fractions kept). */
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: { name: string; atMs: number; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status?: { code: 'ok' | 'error'; message?: string };
}

/** Span.SpanKind by its enum number. */
const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
export type SpanKind = (typeof KINDS)[number];

const hexId = (bytes: number, what: string) => z.string()
  .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `${bytes * 2} hex digits (OTLP/JSON writes ${what} as hex, not base64)`)
  .refine((s) => !/^0+$/.test(s), `an all-zero ${what} is invalid`)
  .transform((s) => s.toLowerCase());
const traceId = hexId(16, 'a trace id');
const spanId = hexId(8, 'a span id');

/** A fixed64 of nanoseconds since the epoch (a decimal string or a number), in milliseconds. */
// Older JS SDKs wrote a number, past 2^53 and so rounded (zod's int() would refuse it): still a time to the microsecond.
const unixNanos = z.union([z.string().regex(/^\d{1,20}$/), z.number().nonnegative().refine(Number.isInteger)],
  { error: (issue) => (issue.input === undefined ? 'required' : 'nanoseconds since 1970 (a decimal string or a whole number)') })
  .transform((v) => Number(BigInt(v) / 1000n) / 1000);

/** Path steps a value may sit at (three per level of arrays or kvlists): deeper is refused, not recursed into. */
const MAX_DEPTH = 3 * 32;

/** AnyValue as a plain JSON value: strings, numbers, booleans, arrays and objects (kvlist); bytes stay base64. */
function plainValue(v: unknown, ctx: z.RefinementCtx, path: (string | number)[]): unknown {
  if (path.length > MAX_DEPTH) {
    ctx.addIssue({ code: 'custom', message: `attribute values nested deeper than ${MAX_DEPTH / 3} levels`, path });
    return undefined;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    ctx.addIssue({ code: 'custom', message: 'an AnyValue object such as {"stringValue": "…"}', path });
    return undefined;
  }
  const o = v as Record<string, unknown>;
  if ('stringValue' in o) return typeof o.stringValue === 'string' ? o.stringValue : bad('stringValue', 'a string');
  if ('boolValue' in o) return typeof o.boolValue === 'boolean' ? o.boolValue : bad('boolValue', 'true or false');
  if ('intValue' in o) {
    const i = o.intValue;
    if (typeof i === 'number' && Number.isInteger(i)) return i;
    if (typeof i === 'string' && /^-?\d{1,20}$/.test(i)) return Number.isSafeInteger(Number(i)) ? Number(i) : i;
    return bad('intValue', 'an integer (a number or a decimal string)');
  }
  if ('doubleValue' in o) {
    const d = o.doubleValue;
    if (typeof d === 'number' || d === 'NaN' || d === 'Infinity' || d === '-Infinity') return typeof d === 'number' ? d : String(d);
    return bad('doubleValue', 'a number');
  }
  if ('arrayValue' in o) {
    const values = (o.arrayValue as { values?: unknown } | null)?.values ?? [];
    if (!Array.isArray(values)) return bad('arrayValue', '{"values": [AnyValue, …]}');
    return values.map((x, i) => plainValue(x, ctx, [...path, 'arrayValue', 'values', i]));
  }
  if ('kvlistValue' in o) {
    const values = (o.kvlistValue as { values?: unknown } | null)?.values ?? [];
    if (!Array.isArray(values)) return bad('kvlistValue', '{"values": [{key, value}, …]}');
    return plainAttributes(values, ctx, [...path, 'kvlistValue', 'values']);
  }
  if ('bytesValue' in o) return typeof o.bytesValue === 'string' ? o.bytesValue : bad('bytesValue', 'a base64 string');
  // proto3 JSON leaves an empty AnyValue as {}: no value.
  return null;

  function bad(field: string, expected: string): undefined {
    ctx.addIssue({ code: 'custom', message: expected, path: [...path, field] });
    return undefined;
  }
}

function plainAttributes(list: unknown[], ctx: z.RefinementCtx, path: (string | number)[]): Record<string, unknown> {
  // Entries, not assignments: a key "__proto__" stays an attribute.
  const out: [string, unknown][] = [];
  list.forEach((kv, i) => {
    const key = (kv as { key?: unknown } | null)?.key;
    if (typeof key !== 'string') {
      ctx.addIssue({ code: 'custom', message: 'a KeyValue {"key": "…", "value": {…}}', path: [...path, i, 'key'] });
      return;
    }
    out.push([key, plainValue((kv as { value?: unknown }).value ?? {}, ctx, [...path, i, 'value'])]);
  });
  return Object.fromEntries(out);
}

const attributes = z.array(z.unknown()).default([]).transform((list, ctx) => plainAttributes(list, ctx, []));

const span = z.object({
  traceId, spanId,
  parentSpanId: z.union([z.literal(''), spanId]).optional(),
  name: z.string().default(''),
  kind: z.number().int().min(0).max(5).default(0),
  startTimeUnixNano: unixNanos,
  endTimeUnixNano: unixNanos,
  attributes,
  events: z.array(z.object({ timeUnixNano: unixNanos, name: z.string().default(''), attributes })).default([]),
  links: z.array(z.object({ traceId, spanId, attributes })).default([]),
  status: z.object({ code: z.number().int().min(0).max(2).default(0), message: z.string().default('') }).optional(),
});

/** What of a request the envelope check reads; each span is then decoded on its own, so one bad span costs only itself. */
const envelope = z.object({
  resourceSpans: z.array(z.object({
    resource: z.object({ attributes }).default({ attributes: {} }),
    scopeSpans: z.array(z.object({ spans: z.array(z.unknown()).default([]) })).default([]),
  })).default([]),
});

export class BadRequest extends Error {}

export interface Decoded {
  spans: SpanLine[];
  /** One line per span that could not be decoded: where it is and what was wrong. */
  rejected: string[];
}

function describe(issues: z.core.$ZodIssue[], prefix: string): string {
  const first = issues[0]!;
  const path = first.path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : `${s}.${String(p)}`), prefix);
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})` : '';
  return `${path}: ${first.code === 'invalid_type' && first.input === undefined ? 'required' : first.message}${more}`;
}

/** Decodes an ExportTraceServiceRequest already parsed from JSON; throws BadRequest when its envelope is wrong. */
export function decodeTraceRequest(body: unknown): Decoded {
  const parsed = envelope.safeParse(body);
  if (!parsed.success) throw new BadRequest(describe(parsed.error.issues, 'request'));
  const spans: SpanLine[] = [];
  const rejected: string[] = [];
  parsed.data.resourceSpans.forEach((rs, r) => {
    const name = rs.resource.attributes['service.name'];
    const service = typeof name === 'string' && name ? name : 'unknown_service';
    rs.scopeSpans.forEach((ss, s) => ss.spans.forEach((raw, i) => {
      const one = span.safeParse(raw);
      if (!one.success) {
        rejected.push(describe(one.error.issues, `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`));
        return;
      }
      const d = one.data;
      const line: SpanLine = {
        traceId: d.traceId, spanId: d.spanId, name: d.name, kind: KINDS[d.kind]!, service,
        startMs: d.startTimeUnixNano, endMs: d.endTimeUnixNano, attributes: d.attributes,
        events: d.events.map((e) => ({ name: e.name, atMs: e.timeUnixNano, attributes: e.attributes })),
        links: d.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: l.attributes })),
      };
      if (d.parentSpanId) line.parentSpanId = d.parentSpanId;
      if (d.status && d.status.code !== 0) line.status = { code: d.status.code === 1 ? 'ok' : 'error', ...(d.status.message ? { message: d.status.message } : {}) };
      spans.push(line);
    }));
  });
  return { spans, rejected };
}
