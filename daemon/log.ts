// Structured logs (pino) with secrets and phone numbers redacted wherever they appear.
import { pino, type Logger } from 'pino';

/** Anything that looks like a phone number (7+ digits with separators) keeps only its last 4 digits. */
const PHONE = /\+?\d[\d\s().-]{5,}\d/g;

function redactText(text: string): string {
  return text
    .replace(/(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [redacted]')
    .replace(/(api_token|token|secret|password)=([^&\s]+)/gi, '$1=[redacted]')
    .replace(PHONE, (m) => `[phone …${m.replace(/\D/g, '').slice(-4)}]`);
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'campaign-sync' },
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
