// The web console's page (/console): sign-in and sign-out, the page shell, and its script and style (no build step, no CDN).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { CSRF_FIELD, SESSION_REFUSALS, type ConsoleAccess } from '../console-access.ts';
import { ApiError } from '../errors.ts';

export const CONSOLE_PATH = '/console';

/** Scripts and styles only from this server, never inline; the page talks only to this server; no framing. */
export const CONSOLE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
  "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

const DIR = join(import.meta.dirname, '..', 'console-page');
/** Every file under /console/assets/ by name: a URL never becomes a path on disk. Read once, at start. */
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'console.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(DIR, 'console.js')) },
  'console.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(DIR, 'console.css')) },
};

type Notice = { kind: 'error' | 'info'; text: string } | null;

export function consolePageRoutes(app: FastifyInstance, access: ConsoleAccess): void {
  const send = (reply: FastifyReply, status: number, html: string) => secured(reply).code(status).type('text/html; charset=utf-8').send(html);

  app.get(CONSOLE_PATH, async (request, reply) => {
    const state = access.session(request);
    if (state.ok) return send(reply, 200, shell(state.session.csrf));
    // A cookie the server does not take (expired, signed out, forged) is cleared, and the sign-in page says why.
    if (state.reason !== 'none') access.clearCookie(reply);
    const query = request.query as { signedOut?: string };
    const notice: Notice = state.reason !== 'none' ? { kind: 'error', text: SESSION_REFUSALS[state.reason] }
      : query.signedOut !== undefined ? { kind: 'info', text: 'You are signed out.' } : null;
    return send(reply, 200, signInPage(notice));
  });

  app.get(`${CONSOLE_PATH}/`, async (_request, reply) => reply.redirect(CONSOLE_PATH, 308));

  // A plain form post: works without the script, and the token never appears in a URL.
  app.post(`${CONSOLE_PATH}/session`, async (request, reply) => {
    const token = request.body instanceof URLSearchParams ? request.body.get('token') ?? '' : '';
    if (token === '') return send(reply, 400, signInPage({ kind: 'error', text: 'Enter the console token (CONSOLE_TOKEN, printed by the server at start).' }));
    // The same attempts as a bearer token on the console API: one limit however the token is presented.
    const check = access.signIn(request.ip, token);
    if (check.verdict === 'limited') {
      reply.header('retry-after', String(check.retryAfterSeconds));
      return send(reply, 429, signInPage({ kind: 'error', text: `Too many sign-in attempts from this address; try again in ${check.retryAfterSeconds} s.` }));
    }
    if (check.verdict === 'wrong') {
      return send(reply, 401, signInPage({
        kind: 'error', text: 'That is not the console token. Use the token the server printed at start (or CONSOLE_TOKEN); API keys (cdk_…) do not sign in here.',
      }));
    }
    access.setCookie(reply, check.session.id, check.session.expiresAt);
    return reply.redirect(CONSOLE_PATH, 303);
  });

  // Signing out is a change too: only the session's own page (its cookie and CSRF token) ends it. A form on another
  // site sends no cookie (SameSite=Strict); its post changes nothing, not even the browser's cookie.
  app.post(`${CONSOLE_PATH}/session/end`, async (request, reply) => {
    const state = access.session(request);
    if (!state.ok && state.reason === 'none') {
      return send(reply, 403, signInPage({
        kind: 'error', text: 'Refused: the sign-out request carried no session cookie (a form on another site cannot send it); nothing was changed.',
      }, true));
    }
    // A session already gone: the console page clears its cookie and says why.
    if (!state.ok) return reply.redirect(CONSOLE_PATH, 303);
    if (!access.csrfMatches(request, state.session)) {
      return send(reply, 403, signInPage({ kind: 'error', text: 'Refused: the sign-out form had no valid CSRF token; nothing was changed. Reload /console.' }, true));
    }
    access.signOut(request);
    access.clearCookie(reply);
    return reply.redirect(`${CONSOLE_PATH}?signedOut`, 303);
  });

  app.get(`${CONSOLE_PATH}/assets/:file`, async (request, reply) => {
    const name = (request.params as { file: string }).file;
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name]! : undefined;
    if (!asset) throw new ApiError('not-found', `no file ${JSON.stringify(name)} under ${CONSOLE_PATH}/assets/`);
    return secured(reply).header('cache-control', 'no-cache').type(asset.type).send(asset.body);
  });
}

function secured(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store');
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function head(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${CONSOLE_PATH}/assets/console.css">`;
}

function signInPage(notice: Notice, signedIn = false): string {
  const message = notice
    ? `<p id="signin-message" class="notice ${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${escapeHtml(notice.text)}</p>` : '';
  return `${head('Sign in · Campaign Dialing console')}
</head>
<body>
<main class="signin">
<h1>Campaign Dialing console</h1>
${message}
${signedIn ? `<p><a href="${CONSOLE_PATH}">Back to the console</a></p>` : `<form method="post" action="${CONSOLE_PATH}/session">
<label for="token">Console token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus${notice?.kind === 'error' ? ' aria-describedby="signin-message"' : ''}>
<button type="submit">Sign in</button>
</form>
<p class="hint">The server prints the console token at start (or takes it from CONSOLE_TOKEN). The session lasts 8 hours.</p>`}
</main>
</body>
</html>
`;
}

/** The signed-in page: its script renders the rest from the console API. The CSRF token rides in a meta tag. */
function shell(csrf: string): string {
  return `${head('Campaign Dialing console')}
<meta name="csrf-token" content="${escapeHtml(csrf)}">
<script src="${CONSOLE_PATH}/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<h1><a href="#/">Campaign Dialing console</a></h1>
<section id="clock" aria-labelledby="clock-title" class="clock">
<h2 id="clock-title" class="visually-hidden">Simulation clock</h2>
<p><span id="clock-mode">clock</span> <time id="clock-now"></time></p>
<div id="clock-advance" class="buttons" hidden>
<button type="button" data-advance="60">+1 min</button>
<button type="button" data-advance="600">+10 min</button>
<button type="button" data-advance="3600">+1 hour</button>
<button type="button" data-advance="86400">+1 day</button>
</div>
</section>
<form method="post" action="${CONSOLE_PATH}/session/end" class="signout">
<input type="hidden" name="${CSRF_FIELD}" value="${escapeHtml(csrf)}">
<button type="submit">Sign out</button>
</form>
</header>
<p id="status" class="notice" role="status" aria-live="polite"></p>
<p id="error" class="notice error" role="alert" hidden></p>
<main id="main" tabindex="-1"><p>Loading…</p></main>
<noscript><p class="notice error">The console needs JavaScript (its own script, from this server only).</p></noscript>
</body>
</html>
`;
}
