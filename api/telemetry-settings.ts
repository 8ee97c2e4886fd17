// Tracing's settings from the standard OTEL_* environment (and an optional block of a configuration file), read the
// same way by the daemon and the reference server: each sets up its own SDK from them at its entry point.

/** The samplers of the OpenTelemetry specification's OTEL_TRACES_SAMPLER. */
export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = typeof SAMPLERS[number];

/** A configuration file's telemetry block: each field given wins over its environment variable. */
export interface TelemetryBlock {
  endpoint?: string;
  serviceName?: string;
  sampler?: SamplerName;
  samplerArg?: number;
}

/** What tracing runs with, once the configuration and the environment are read together. */
export interface TelemetrySettings {
  /** Where spans are POSTed (the full URL, …/v1/traces). */
  tracesUrl: string;
  serviceName: string;
  sampler: SamplerName;
  samplerArg: number;
}

/**
 * Tracing's settings, or null when tracing is off: the configuration's block wins field by field, the standard
 * environment fills the rest. An endpoint from either turns it on; OTEL_SDK_DISABLED=true or sampler always_off
 * keeps it off. Bad environment values are errors that name the variable (as the configuration's are).
 */
export function telemetrySettings(block: TelemetryBlock | undefined, env: Record<string, string | undefined>, defaultService: string): TelemetrySettings | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const base = block?.endpoint ?? env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const tracesUrl = block?.endpoint ? `${block.endpoint.replace(/\/+$/, '')}/v1/traces`
    : env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : '');
  if (!tracesUrl) return null;
  if (!/^https?:\/\/[^\s/]+/.test(tracesUrl)) throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "${tracesUrl}" is not an http(s) URL`);
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol && protocol !== 'http/json') throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported; spans are exported as http/json`);
  const envSampler = env.OTEL_TRACES_SAMPLER?.trim();
  if (envSampler && !(SAMPLERS as readonly string[]).includes(envSampler)) throw new Error(`OTEL_TRACES_SAMPLER: "${envSampler}" is not one of ${SAMPLERS.join(', ')}`);
  const sampler = block?.sampler ?? (envSampler as SamplerName | undefined) ?? 'parentbased_always_on';
  if (sampler === 'always_off') return null;
  let samplerArg = block?.samplerArg ?? 1;
  if (block?.samplerArg === undefined && env.OTEL_TRACES_SAMPLER_ARG !== undefined) {
    samplerArg = Number(env.OTEL_TRACES_SAMPLER_ARG);
    if (!Number.isFinite(samplerArg) || samplerArg < 0 || samplerArg > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG: "${env.OTEL_TRACES_SAMPLER_ARG}" is not a ratio between 0 and 1`);
  }
  return { tracesUrl, serviceName: block?.serviceName ?? env.OTEL_SERVICE_NAME?.trim() ?? defaultService, sampler, samplerArg };
}

/** The ratio of a sampler's root decision: every trace, none, or OTEL_TRACES_SAMPLER_ARG's share of them. */
export function rootSampling(settings: TelemetrySettings): 'on' | 'off' | number {
  return settings.sampler.endsWith('always_on') ? 'on' : settings.sampler.endsWith('always_off') ? 'off' : settings.samplerArg;
}

/** The OTLP batch's delay between exports, ms: OTEL_BSP_SCHEDULE_DELAY, else one second. */
export function exportDelay(env: Record<string, string | undefined>): number {
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isFinite(delay) && delay > 0 ? delay : 1000;
}
