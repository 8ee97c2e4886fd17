// How a request's text becomes values: JSON bodies (nested at most MAX_JSON_DEPTH deep) and url-encoded query strings and
// form bodies (strict percent-encoded UTF-8, no name special), each failure a 400 that names what was wrong.
import type { FieldError } from '../api/problems.ts';

/**
 * Deepest nesting of arrays and objects a JSON body may have. The API's bodies need 4 (a campaign's dialer settings);
 * a body nested thousands deep would parse, then overflow the stack of whatever walks it (JSON.stringify of a detail).
 */
export const MAX_JSON_DEPTH = 32;

/** Where `text` first nests deeper than `max` (the character's offset), or -1. Strings are skipped whole. */
export function tooDeepAt(text: string, max: number): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) { // [ {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) { // ] }
      depth--;
    } else if (c === 0x22) { // "
      // To the closing quote: one not escaped by an odd run of backslashes.
      for (;;) {
        const end = text.indexOf('"', i + 1);
        if (end < 0) return -1; // unterminated: JSON.parse says so
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
        i = end;
        if (slashes % 2 === 0) break;
      }
    }
  }
  return -1;
}

/** Names and values of `a=1&b=2` (`+` is a space), and the names of the pairs that are not valid percent-encoded UTF-8. */
export function decodeForm(text: string): { pairs: [string, string][]; malformed: string[] } {
  const pairs: [string, string][] = [];
  const malformed: string[] = [];
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = strictDecode(rawName);
    const value = strictDecode(eq < 0 ? '' : pair.slice(eq + 1));
    if (name === null || value === null) malformed.push(name ?? rawName);
    else pairs.push([name, value]);
  }
  return { pairs, malformed };
}

/** `decodeURIComponent`, which refuses what is not UTF-8 (`%ED%A0%80` is half of a surrogate pair, `%E0%A4%A` is cut short). */
function strictDecode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/** One 400 entry per malformed pair of a query string or form body. */
export function malformedParams(names: readonly string[]): FieldError[] {
  return names.map((name) => ({
    in: 'query', name,
    detail: `The ${name} parameter is not valid percent-encoded UTF-8 (each %XX is one byte of a UTF-8 character)`,
  }));
}

/** The malformed pairs of a parsed query string, which fastify's router parses before a request exists to fail. */
const malformedQueries = new WeakMap<object, string[]>();

/**
 * fastify's query string parser: values by name (an array for a name given twice) in an object with no prototype, so
 * `__proto__` is a parameter like any other (and refused as unknown). Never throws: `params()` reports the malformed.
 */
export function parseQuery(text: string): Record<string, string | string[]> {
  const { pairs, malformed } = decodeForm(text);
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of pairs) {
    const had = out[name];
    if (had === undefined) out[name] = value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = [had, value];
  }
  if (malformed.length) malformedQueries.set(out, malformed);
  return out;
}

export function malformedQuery(query: unknown): string[] {
  return (typeof query === 'object' && query !== null && malformedQueries.get(query)) || [];
}
