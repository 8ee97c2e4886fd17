// Takes secrets out of a URL before it is logged: API tokens, the console token and webhook secrets, wherever they sit.

export const REDACTED = '[REDACTED]';

/** Query parameters whose value is a secret whatever it looks like. */
const SECRET_PARAMS = /^(token|access_token|api_key|apikey|key|secret|password|console_token|csrf)$/i;
/** What our secrets look like: API tokens and generated console tokens (base64url), webhook signing secrets (base64). */
const SECRET_SHAPES = /(cdk_|console_)[A-Za-z0-9_-]+|(whsec_)[A-Za-z0-9+/=%]+/g;

/**
 * The URL with every secret replaced by [REDACTED]: a query value that is one of our token shapes, contains the
 * console token, or belongs to a parameter named like a secret; and the same shapes anywhere in the path. Each part is
 * matched as sent and percent-decoded, so `cdk%5F…` and `%63dk_…` are caught as well as `cdk_…`.
 */
export function redactUrl(url: string, consoleToken: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = redactPart(path, consoleToken, false);
  if (q < 0) return safePath;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (eq >= 0 && value !== '' && (SECRET_PARAMS.test(decode(name, true)) || redactPart(value, consoleToken, true) !== value)) {
      return `${redactPart(name, consoleToken, true)}=${REDACTED}`;
    }
    return redactPart(pair, consoleToken, true);
  });
  return `${safePath}?${query.join('&')}`;
}

/** Free text (an error's message or stack) with every secret in it replaced by [REDACTED], spelled plain or percent-encoded. */
export function redactSecrets(text: string, consoleToken: string): string {
  return redactPart(text, consoleToken, false);
}

/**
 * A part of a URL as it is logged: as sent, with the secrets it shows redacted; or, when decoding it reveals one more,
 * decoded and redacted (the log then shows the decoded form, which no longer hides anything).
 */
function redactPart(part: string, consoleToken: string, plusIsSpace: boolean): string {
  const raw = redactText(part, consoleToken);
  const decoded = decode(raw, plusIsSpace);
  const safe = redactText(decoded, consoleToken);
  return safe === decoded ? raw : safe;
}

function redactText(text: string, consoleToken: string): string {
  let out = text;
  if (consoleToken) {
    for (const form of new Set([consoleToken, encodeURIComponent(consoleToken)])) out = out.split(form).join(REDACTED);
  }
  return out.replace(SECRET_SHAPES, (_m, token?: string, webhook?: string) => `${token ?? webhook}${REDACTED}`);
}

/**
 * Every %XX that decodes: a run that is not UTF-8 still gives up its ASCII bytes, so one bad escape cannot shield a
 * `%63dk_` beside it.
 */
function decode(s: string, plusIsSpace: boolean): string {
  return (plusIsSpace ? s.replace(/\+/g, ' ') : s).replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%([0-9a-f]{2})/gi, (escape, hex: string) => (parseInt(hex, 16) < 0x80 ? String.fromCharCode(parseInt(hex, 16)) : escape));
    }
  });
}
