// Field types every part of the configuration uses (durations, URLs, secrets, ids), so a CRM's own schema reads
// like the rest of the file.
import { z } from 'zod/v4';

/** A duration such as `90s`, `15m`, `2h`, `1d` (or a number of seconds), in milliseconds. */
export const DURATION = 'a duration such as 30s, 15m, 2h or 1d (or a number of seconds)';
export const duration = z.union([z.number().positive(), z.string().regex(/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/)], { error: DURATION }).transform((v) => {
  if (typeof v === 'number') return v * 1000;
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(v)!;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms'];
});

export const url = z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).transform((u) => u.replace(/\/+$/, ''));
export const secret = z.string().min(1, 'a non-empty secret (use ${ENV_NAME})');
export const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, "_", "." or "-" (at most 64)');
