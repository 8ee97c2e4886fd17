// OpenTelemetry traces of the reference server: off unless the OTEL_* environment names an endpoint, the SDK and
// @fastify/otel loaded only then; each request is a SERVER span that continues the caller's W3C traceparent.
import { context, propagation, trace, SpanStatusCode, type Attributes } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import { exportDelay, rootSampling, type TelemetrySettings } from '../api/telemetry-settings.ts';

let enabled = false;
let shutdownSdk: (() => Promise<void>) | null = null;
const TRACER = 'campaign-dialing-server';

/**
 * Starts the SDK: spans batched and POSTed as OTLP JSON, the async-hooks context manager, the W3C trace-context
 * propagator, and @fastify/otel, which wires itself into every fastify instance created from now on (through
 * fastify's `fastify.initialization` diagnostics channel): so call it before the app is built. Once per process.
 */
export async function startTelemetry(settings: TelemetrySettings | null): Promise<void> {
  if (!settings || enabled) return;
  const [{ TracerProvider, BatchSpanProcessor, ParentBasedSampler, AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler },
    { OTLPTraceExporter }, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-trace'), import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'), import('@opentelemetry/resources'), import('@fastify/otel'),
  ]);
  const sampling = rootSampling(settings);
  const root = sampling === 'on' ? new AlwaysOnSampler() : sampling === 'off' ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(sampling);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    sampler: settings.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root,
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: settings.tracesUrl }), scheduledDelayMillis: exportDelay(process.env) })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  // One span per request, no span per hook or handler (instrumentHooks, instrumentHandler): the route's name and its
  // status are what a trace of the daemon's push needs, and a dozen spans a request would cost more than they tell.
  const instrumentation = new FastifyOtelInstrumentation({
    registerOnInitialization: true, instrumentHooks: false, instrumentHandler: false,
    requestHook: (span, request) => {
      const route = request.routeOptions.url;
      span.updateName(route ? `${request.method} ${route}` : request.method);
      // @fastify/otel puts the whole URL there, query included: a token pasted into one (?token=cdk_…) must not reach
      // the tracing backend any more than the log. The path alone is what url.path means.
      const query = request.url.indexOf('?');
      if (query >= 0) span.setAttribute('url.path', request.url.slice(0, query));
    },
  });
  instrumentation.setTracerProvider(provider);
  shutdownSdk = async () => {
    instrumentation.disable();
    await provider.shutdown();
  };
  enabled = true;
}

/** Sends the spans still buffered (a graceful stop); nothing when tracing is off. */
export async function stopTelemetry(): Promise<void> {
  await shutdownSdk?.().catch(() => {});
}

/**
 * Runs the synchronous `fn` (a store write) in a span under the request's, an error recorded on it; with tracing off
 * it only runs `fn`. `attributes` is a function so that nothing is built when off.
 */
export function inRequestSpan<T>(request: FastifyRequest, name: string, attributes: () => Attributes, fn: () => T): T {
  if (!enabled) return fn();
  const span = trace.getTracer(TRACER).startSpan(name, { attributes: attributes() }, request.opentelemetry().context ?? context.active());
  try {
    return fn();
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
