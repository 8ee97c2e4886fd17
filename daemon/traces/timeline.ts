// `./dev daemon trace <phone number>`: the traces of one phone number in a span-lines file (the demo receiver's), each
// printed as an indented timeline. The file is read twice as a stream, so memory follows the traces shown, not the file.
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { duration } from '../config-fields.ts';
import { countryCode, toE164 } from '../phone.ts';
import type { SpanLine } from './spans.ts';

export interface TraceQuery {
  /** The phone number as typed; normalised to E.164 as the sync normalises a CRM's numbers. */
  phone: string;
  file: string;
  /** Only numbers' spans that started at or after this (ISO time, or a duration back from now such as 30m). */
  since?: string;
  /** For a number without a country code. Default US. */
  country?: string;
}

export interface TraceAnswer {
  /** 0 found, 1 nothing found or no file, 2 a bad argument. */
  code: number;
  /** What to print: the timelines, or the sentence that says why there are none. */
  text: string;
}

interface FileStats { spans: number; unreadable: number; firstUnreadable?: number; withPhones: number; firstMs?: number; lastMs?: number }

/** Calls `visit` for every span line of the file; lines that are not span lines (a torn last line) are counted. */
async function eachSpan(file: string, visit: (s: SpanLine) => void): Promise<FileStats> {
  const stats: FileStats = { spans: 0, unreadable: 0, withPhones: 0 };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) {
    n++;
    if (!line.trim()) continue;
    let s: SpanLine;
    try {
      s = JSON.parse(line) as SpanLine;
    } catch {
      s = null as unknown as SpanLine;
    }
    if (!s || typeof s.traceId !== 'string' || typeof s.spanId !== 'string' || typeof s.startMs !== 'number' || typeof s.endMs !== 'number') {
      stats.unreadable++;
      stats.firstUnreadable ??= n;
      continue;
    }
    s.attributes ??= {};
    s.events ??= [];
    s.links ??= [];
    stats.spans++;
    if ('cds.phone' in s.attributes || 'cds.phones' in s.attributes) stats.withPhones++;
    stats.firstMs = Math.min(stats.firstMs ?? s.startMs, s.startMs);
    stats.lastMs = Math.max(stats.lastMs ?? s.endMs, s.endMs);
    visit(s);
  }
  return stats;
}

/** Whether the span names phone numbers (`cds.phone` or `cds.phones`), and whether `phone` is one of them. */
function phonesOf(s: SpanLine, phone: string): 'none' | 'this' | 'others' {
  const one = s.attributes['cds.phone'];
  const many = s.attributes['cds.phones'];
  if (one === undefined && many === undefined) return 'none';
  return one === phone || (Array.isArray(many) && many.includes(phone)) ? 'this' : 'others';
}

function parseSince(since: string, now: number): number | string {
  const ago = duration.safeParse(/^\d+(\.\d+)?$/.test(since) ? Number(since) : since);
  if (ago.success) return now - ago.data;
  const at = Date.parse(since);
  if (Number.isNaN(at)) return `--since takes an ISO time (2026-11-26T08:00:00Z) or a duration back from now (30m, 2h, 1d); got "${since}"`;
  return at;
}

export async function traceNumber(q: TraceQuery, now = Date.now()): Promise<TraceAnswer> {
  const country = countryCode(q.country ?? 'US');
  if (!country) return { code: 2, text: `--country takes a two-letter country code such as US or GB; got "${q.country}"` };
  const e164 = toE164(q.phone, country);
  if (!e164.ok) return { code: 2, text: `"${q.phone}" is not a phone number (${e164.reason}); give it in E.164 (+ and the country code) or with --country` };
  const phone = e164.e164;
  let since: number | undefined;
  if (q.since !== undefined) {
    const s = parseSince(q.since, now);
    if (typeof s === 'string') return { code: 2, text: s };
    since = s;
  }
  if (!existsSync(q.file)) {
    return { code: 1, text: `no trace file at ${q.file}: run the demo with tracing (./dev start --traces writes traces.jsonl), or name the receiver's file with --file` };
  }

  // First pass: the traces that carry the number, and every span link (as trace → trace).
  const matched = new Set<string>();
  const links: [string, string][] = [];
  const stats = await eachSpan(q.file, (s) => {
    if ((since === undefined || s.startMs >= since) && phonesOf(s, phone) === 'this') matched.add(s.traceId);
    for (const l of s.links) if (l.traceId !== s.traceId) links.push([s.traceId, l.traceId]);
  });
  if (matched.size === 0) {
    const span = stats.firstMs === undefined ? '' : `, from ${new Date(stats.firstMs).toISOString()} to ${new Date(stats.lastMs!).toISOString()}`;
    const hint = stats.spans && !stats.withPhones ? ' No span carries a phone number at all: is the daemon exporting its traces (OTEL_EXPORTER_OTLP_ENDPOINT)?' : '';
    return { code: 1, text: `no span in ${q.file} carries ${phone} (cds.phone or cds.phones)${since === undefined ? '' : ` since ${new Date(since).toISOString()}`}: ` +
      `${stats.spans} spans read${span}.${hint}${unreadableNote(stats)}` };
  }
  // One hop of span links either way: the mirror of a call links to the trace that added the number, a resumed job to its first try.
  const linked = new Set<string>();
  for (const [from, to] of links) {
    if (matched.has(from) && !matched.has(to)) linked.add(to);
    if (matched.has(to) && !matched.has(from)) linked.add(from);
  }

  // Second pass: the spans of those traces.
  const byTrace = new Map<string, SpanLine[]>();
  await eachSpan(q.file, (s) => {
    if (!matched.has(s.traceId) && !linked.has(s.traceId)) return;
    let list = byTrace.get(s.traceId);
    if (!list) byTrace.set(s.traceId, (list = []));
    list.push(s);
  });
  // A linked trace that names numbers is about them (a batch's other webhooks), or about this one before --since: left out.
  for (const id of linked) if (byTrace.get(id)?.some((s) => phonesOf(s, phone) !== 'none')) byTrace.delete(id);

  const traces = [...byTrace.values()].sort((a, b) => firstStart(a) - firstStart(b));
  const names = new Map<string, string>();
  for (const list of traces) for (const s of list) names.set(s.spanId, s.name);
  const out = [`${phone}: ${traces.length} trace${traces.length > 1 ? 's' : ''} (${matched.size} carrying the number${traces.length > matched.size ? `, ${traces.length - matched.size} linked` : ''})`];
  for (const list of traces) out.push('', ...formatTrace(list, phone, names));
  const note = unreadableNote(stats);
  if (note) out.push('', note.trim());
  return { code: 0, text: out.join('\n') };
}

function unreadableNote(stats: FileStats): string {
  if (!stats.unreadable) return '';
  return ` ${stats.unreadable === 1 ? '1 line of the file is not a span' : `${stats.unreadable} lines of the file are not spans`} (first: line ${stats.firstUnreadable}); skipped.`;
}

function firstStart(spans: SpanLine[]): number {
  return spans.reduce((m, s) => Math.min(m, s.startMs), Infinity);
}

/** 212 ms, 12.4 s, 3.1 min. */
export function formatMs(ms: number): string {
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** The attributes worth a glance on a timeline: ours (cds.*), an HTTP status, an error type. */
function keyAttributes(attrs: Record<string, unknown>): string {
  const parts: string[] = [];
  const show = (v: unknown): string => {
    if (Array.isArray(v)) return v.length <= 3 ? `[${v.map(show).join(',')}]` : `[${v.length} items]`;
    return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  };
  for (const [k, v] of Object.entries(attrs)) if (k.startsWith('cds.')) parts.push(`${k}=${show(v)}`);
  const http = attrs['http.response.status_code'] ?? attrs['http.status_code'];
  if (http !== undefined) parts.push(`http=${show(http)}`);
  if (attrs['error.type'] !== undefined) parts.push(`error.type=${show(attrs['error.type'])}`);
  return parts.join(' ');
}

/** One trace as lines: a header, then each span under its parent, ordered by start, with its events and links. */
export function formatTrace(spans: SpanLine[], phone: string, spanNames = new Map<string, string>()): string[] {
  const start = firstStart(spans);
  const end = spans.reduce((m, s) => Math.max(m, s.endMs), -Infinity);
  const services = new Set(spans.map((s) => s.service));
  const serviceWidth = Math.max(...[...services].map((s) => s.length));
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | undefined, SpanLine[]>();
  for (const s of spans) {
    // A span whose parent never arrived (another process that did not export it) is shown as a root.
    const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : undefined;
    const list = children.get(parent) ?? [];
    list.push(s);
    children.set(parent, list);
  }
  for (const list of children.values()) list.sort((a, b) => a.startMs - b.startMs);

  const lines = [`trace ${spans[0]!.traceId} (${services.size} service${services.size > 1 ? 's' : ''}, ${formatMs(end - start)}, from ${new Date(start).toISOString()})`];
  const column = (offset: number, took: string, service: string, depth: number, text: string) =>
    `  ${`+${formatMs(offset - start)}`.padEnd(10)}${took.padStart(8)}  ${service.padEnd(serviceWidth)}  ${'  '.repeat(depth)}${text}`;
  let hidden = 0;
  const count = (s: SpanLine): number => 1 + (children.get(s.spanId) ?? []).reduce((n, c) => n + count(c), 0);
  const walk = (s: SpanLine, depth: number) => {
    if (phonesOf(s, phone) === 'others') { hidden += count(s); return; }
    const attrs = keyAttributes(s.attributes);
    const status = s.status?.code === 'error' ? `  error${s.status.message ? `: ${s.status.message}` : ''}` : '';
    lines.push(column(s.startMs, formatMs(s.endMs - s.startMs), s.service, depth, `${s.name}${attrs ? `   ${attrs}` : ''}${status}`));
    for (const e of s.events) {
      const a = Object.entries(e.attributes).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(' ');
      lines.push(column(e.atMs, '', '', depth + 1, `· ${e.name}${a ? `   ${a}` : ''}`));
    }
    for (const l of s.links) {
      const name = spanNames.get(l.spanId);
      lines.push(column(s.startMs, '', '', depth + 1, `↳ linked to trace ${l.traceId}${name ? ` (${name})` : ''}`));
    }
    for (const c of children.get(s.spanId) ?? []) walk(c, depth + 1);
  };
  for (const root of children.get(undefined) ?? []) walk(root, 0);
  if (hidden) lines.push(`  (${hidden} span${hidden > 1 ? 's' : ''} about other numbers not shown)`);
  return lines;
}
