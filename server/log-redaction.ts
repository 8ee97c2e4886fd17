// Takes secrets out of a URL before it is logged: API tokens, the console token and webhook secrets, wherever they sit.

export const REDACTED = '[REDACTED]';

/** Query parameters whose value is a secret whatever it looks like. */
const SECRET_PARAMS = /^(token|access_token|api_key|apikey|key|secret|password|console_token|csrf)$/i;
/** What our secrets look like: API tokens and generated console tokens (base64url), webhook signing secrets (base64). */
const SECRET_SHAPES = /(cdk_|console_)[A-Za-z0-9_-]+|(whsec_)[A-Za-z0-9+/=%]+/g;

/**
 * The URL with every secret replaced by [REDACTED]: a query value that is one of our token shapes, contains the
 * console token, or belongs to a parameter named like a secret; and the same shapes anywhere in the path. Values are
 * compared decoded, so `cdk%5F…` is caught as well as `cdk_…`.
 */
export function redactUrl(url: string, consoleToken: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = redactText(path, consoleToken);
  if (q < 0) return safePath;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    const decodedName = decode(name);
    if (eq >= 0 && value !== '' && (SECRET_PARAMS.test(decodedName) || redactText(decode(value), consoleToken) !== decode(value))) {
      return `${redactText(name, consoleToken)}=${REDACTED}`;
    }
    return redactText(pair, consoleToken);
  });
  return `${safePath}?${query.join('&')}`;
}

function redactText(text: string, consoleToken: string): string {
  // An escaped underscore (cdk%5F…) must not hide a token's prefix.
  let out = text.replace(/%5f/gi, '_');
  if (consoleToken) {
    for (const form of new Set([consoleToken, encodeURIComponent(consoleToken)])) out = out.split(form).join(REDACTED);
  }
  return out.replace(SECRET_SHAPES, (_m, token?: string, webhook?: string) => `${token ?? webhook}${REDACTED}`);
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
