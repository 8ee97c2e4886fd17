// OpenTelemetry traces: off unless configured (the standard OTEL_* environment or the configuration's `telemetry:`
// block), the SDK loaded only then; the rest of the daemon starts spans through inSpan and carries W3C traceparents.
import { context, propagation, trace, SpanKind, SpanStatusCode, TraceFlags, type Attributes, type Link, type Span } from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';
import { z } from 'zod/v4';
import { exportDelay, rootSampling, SAMPLERS, type TelemetrySettings } from '../api/telemetry-settings.ts';

export { SAMPLERS, telemetrySettings, type SamplerName, type TelemetrySettings } from '../api/telemetry-settings.ts';

export const telemetrySchema = z.strictObject({
  /** The OTLP/HTTP base URL (traces are POSTed to <endpoint>/v1/traces as JSON). */
  endpoint: z.url({ protocol: /^https?$/, error: 'an http(s) URL such as http://127.0.0.1:4318' }).optional(),
  serviceName: z.string().min(1).optional(),
  sampler: z.enum(SAMPLERS, { error: `one of ${SAMPLERS.join(', ')}` }).optional(),
  /** The ratio of traceidratio samplers, 0..1. */
  samplerArg: z.number().min(0).max(1).optional(),
  /** Where /ops links a trace: a URL with {traceId}, e.g. https://jaeger.example/trace/{traceId}. */
  viewerUrl: z.string().regex(/^https?:\/\/\S*\{traceId\}/, 'an http(s) URL containing {traceId}').optional(),
});
export type TelemetryConfig = z.infer<typeof telemetrySchema>;

let enabled = false;
let shutdownSdk: (() => Promise<void>) | null = null;
let bullmqTelemetry: Telemetry | undefined;
const TRACER = 'campaign-sync';

/** Whether spans are being recorded (the rest of the code skips the work of building attributes otherwise). */
export function tracing(): boolean { return enabled; }

/** BullMQ's telemetry option (bullmq-otel) when tracing, else undefined: queues and workers then carry no context. */
export function queueTelemetry(): Telemetry | undefined { return bullmqTelemetry; }

/**
 * Starts the SDK (imported only now): spans batched and POSTed as OTLP JSON, the async-hooks context manager and the
 * W3C trace-context propagator. Once per process, at its entry point; with null settings it does nothing.
 */
export async function startTelemetry(settings: TelemetrySettings | null): Promise<void> {
  if (!settings || enabled) return;
  const [{ TracerProvider, BatchSpanProcessor, ParentBasedSampler, AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler },
    { OTLPTraceExporter }, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }, { BullMQOtel }] = await Promise.all([
    import('@opentelemetry/sdk-trace'), import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'), import('@opentelemetry/resources'), import('bullmq-otel'),
  ]);
  const sampling = rootSampling(settings);
  const root = sampling === 'on' ? new AlwaysOnSampler() : sampling === 'off' ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(sampling);
  const processor = new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: settings.tracesUrl }), scheduledDelayMillis: exportDelay(process.env) });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    sampler: settings.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root,
    spanProcessors: [processor],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  bullmqTelemetry = new BullMQOtel({ tracerName: 'bullmq' }) as unknown as Telemetry;
  shutdownSdk = () => provider.shutdown();
  enabled = true;
}

/** Sends the spans still buffered (a graceful stop); nothing when tracing is off. */
export async function stopTelemetry(): Promise<void> {
  await shutdownSdk?.().catch(() => {});
}

export interface SpanOptions {
  kind?: 'server' | 'client' | 'producer' | 'consumer'; links?: Link[];
  /**
   * A new trace, linked to the active span: the work a schedule repeats (a job scheduler queues each next job in the
   * context of the one before, so its runs would otherwise make one trace that never ends).
   */
  root?: boolean;
  /** The incoming request's headers: a `traceparent` among them makes the span part of the caller's trace. */
  headers?: Record<string, string | string[] | undefined>;
}
const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER };

/**
 * Runs `fn` in a new active span (a child of the active one), ended when it settles, an error recorded on it; with
 * tracing off it runs `fn` with no span. `attributes` is a function so that nothing is built when off.
 */
export async function inSpan<T>(name: string, attributes: (() => Attributes) | null, fn: (span: Span | null) => Promise<T>, options: SpanOptions = {}): Promise<T> {
  if (!enabled) return fn(null);
  let links = options.links;
  if (options.root) {
    const parent = trace.getActiveSpan()?.spanContext();
    if (parent && trace.isSpanContextValid(parent)) links = [...links ?? [], { context: parent }];
  }
  const spanOptions = { kind: options.kind ? KINDS[options.kind] : SpanKind.INTERNAL, attributes: attributes?.(), links, root: options.root };
  const parent = options.headers ? propagation.extract(context.active(), options.headers) : context.active();
  return trace.getTracer(TRACER).startActiveSpan(name, spanOptions, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The active span's W3C traceparent (`00-<trace id>-<span id>-<flags>`), or undefined (tracing off, no span). */
export function currentTraceparent(): string | undefined {
  if (!enabled) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED ? 1 : 0).toString(16).padStart(2, '0')}`;
}

/** The trace id of a traceparent. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  const m = traceparent ? /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent) : null;
  return m ? m[1]! : null;
}

/** A span link to the span a traceparent names (a stored one: another trace, maybe another process). */
export function linkTo(traceparent: string, attributes?: Attributes): Link | null {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent);
  if (!m) return null;
  return { context: { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true }, attributes };
}

/**
 * A link to the span a stored traceparent names, when that span is in another trace than the active one (work a crash
 * moved out of the trace it was planned in); none otherwise, and none when off.
 */
export function linksOutsideTrace(traceparent: string | null, attributes?: Attributes): Link[] {
  const link = enabled && traceparent ? linkTo(traceparent, attributes) : null;
  return link && link.context.traceId !== trace.getActiveSpan()?.spanContext().traceId ? [link] : [];
}

/** An event of the active span (a wait, a retry); nothing when off. */
export function spanEvent(name: string, attributes?: Attributes): void {
  if (enabled) trace.getActiveSpan()?.addEvent(name, attributes);
}

/** An attribute of the active span learnt as it runs (an answer's status); nothing when off. */
export function spanAttribute(key: string, value: string | number): void {
  if (enabled) trace.getActiveSpan()?.setAttribute(key, value);
}

/** Links the active span to the span a stored traceparent names (a link added after the span started). */
export function linkActiveSpan(traceparent: string): void {
  const link = enabled ? linkTo(traceparent) : null;
  if (link) trace.getActiveSpan()?.addLink(link);
}

/** Adds the active trace's `traceparent` header to an outgoing request's headers (a no-op when off). */
export function injectTraceHeaders(headers: Record<string, string>): Record<string, string> {
  if (enabled) propagation.inject(context.active(), headers);
  return headers;
}

/** `trace_id`/`span_id` of the active span, for log lines (pino's mixin); {} when off or outside a span. */
export function logTraceFields(): Record<string, string> {
  if (!enabled) return {};
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** The trace-viewer link of a trace id, when a viewerUrl template is configured. */
export function viewerLink(template: string | undefined, traceId: string | null): string | null {
  return template && traceId ? template.replaceAll('{traceId}', traceId) : null;
}
