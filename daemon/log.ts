// Structured logs (pino) with secrets and phone numbers redacted wherever they appear.
import { pino, type Logger } from 'pino';
import { logTraceFields } from './telemetry.ts';

/**
 * What looks like a phone number keeps only its last 4 digits: E.164 (`+` and 7-15 digits), a North American
 * national form (`(212) 555-0100`, `212.555.0100`), or 8-15 digits standing alone. Ids, addresses, dates and
 * UUIDs do not match (their digits touch letters, or come in groups too short).
 */
const PHONE = /\+\d[\d\s().-]{5,18}\d|\(?\b\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b|(?<![\w.:-])\d{8,15}(?![\w.:-])/g;

function redactText(text: string): string {
  return text
    .replace(/(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [redacted]')
    .replace(/(api_token|token|secret|password)=([^&\s]+)/gi, '$1=[redacted]')
    .replace(PHONE, (m) => `[phone …${m.replace(/\D/g, '').slice(-4)}]`);
}

export { redactText };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'campaign-sync' },
    // A line written inside a span leads to its trace (nothing is added while tracing is off).
    mixin: logTraceFields,
    redact: {
      paths: ['*.apiToken', '*.accessToken', '*.clientSecret', '*.secret', '*.password', '*.webhookPassword', '*.authorization',
        'headers.authorization', 'req.headers.authorization', '*.phone', '*.number', '*.phones'],
      censor: '[redacted]',
    },
    hooks: {
      // Messages and error texts can carry what a redact path cannot name (a URL with a token, a number in an error).
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? redactText(a) : a && typeof a === 'object' ? redactObject(a) : a)) as Parameters<typeof method>);
      },
    },
  }, destination);
}

function redactObject(value: object): object {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = typeof v === 'string' ? redactText(v) : v;
  return out;
}
