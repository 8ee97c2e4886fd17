// `check` on webhooks: each sync's secrets (without one, the CRM's webhooks are refused and changes wait for the
// schedule), and `http.publicUrl`, the address CRMs call: https unless it is loopback (webhook bodies, signatures and
// Pipedrive's HTTP Basic password would cross the network in clear).
import type { Config, SyncConfig } from '../config.ts';
import { fail, ok, skip, warn, type CheckResult } from './result.ts';

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/i;

function every(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}

/** Whether the sync receives webhooks (its source's, or the dialer's call.finished events), and the lines about its secrets. */
function secrets(sync: SyncConfig): { receives: boolean; results: CheckResult[] } {
  const s = sync.source;
  const id = sync.id;
  const polled = sync.schedule.every !== undefined ? `every ${every(sync.schedule.every)}` : `on its cron schedule (${sync.schedule.cron})`;
  const results: CheckResult[] = [];
  let receives = false;
  if (s.type === 'hubspot') {
    if (s.clientSecret) { receives = true; results.push(ok(id, 'webhooks.secret', 'HubSpot webhooks are verified with source.clientSecret (X-HubSpot-Signature-v3)')); } else {
      results.push(warn(id, 'webhooks.secret', `source.clientSecret is not set: HubSpot webhooks are refused, so changes are read only ${polled}`,
        'set source.clientSecret to the app\'s client secret (${HUBSPOT_CLIENT_SECRET}) and subscribe the app to contact events'));
    }
  } else if (s.type === 'pipedrive') {
    if (s.webhookUser && s.webhookPassword) { receives = true; results.push(ok(id, 'webhooks.secret', 'Pipedrive webhooks are verified with source.webhookUser and source.webhookPassword (HTTP Basic)')); } else if (s.webhookUser || s.webhookPassword) {
      results.push(fail(id, 'webhooks.secret', `only one of source.webhookUser and source.webhookPassword is set: Pipedrive webhooks are refused, so changes are read only ${polled}`,
        'set both (the http_auth_user and http_auth_password of the webhook)'));
    } else {
      results.push(warn(id, 'webhooks.secret', `source.webhookUser and source.webhookPassword are not set: Pipedrive webhooks are refused, so changes are read only ${polled}`,
        'create a Pipedrive webhook (person, *) with http_auth_user and http_auth_password, and set them here'));
    }
  } else if (s.type === 'salesforce') {
    if (s.orgId) { receives = true; results.push(ok(id, 'webhooks.secret', `Outbound Messages from org ${s.orgId} are accepted`)); } else {
      results.push(warn(id, 'webhooks.secret', `source.orgId is not set: Outbound Messages are refused, so changes are read only ${polled}`, 'set source.orgId to the org\'s id (00D…)'));
    }
  } else if (s.type === 'webhook') {
    receives = true;
    const key = s.secret.startsWith('whsec_') ? Buffer.from(s.secret.slice(6), 'base64') : Buffer.from(s.secret);
    if (key.length < 24) {
      results.push(fail(id, 'webhooks.secret', `source.secret holds ${key.length} bytes of key: a guessable secret lets anyone add numbers to the campaign`,
        'use a secret of 24 bytes or more, e.g. whsec_ + 32 random bytes in base64 (openssl rand -base64 32)'));
    } else results.push(ok(id, 'webhooks.secret', 'deliveries are verified with source.secret (Standard Webhooks)'));
  }
  if (sync.mirror && sync.mirror.sink.type !== 'none') {
    if (sync.mirror.eventsSecret) { receives = true; results.push(ok(id, 'webhooks.events', 'the dialer\'s call.finished events are verified with mirror.eventsSecret')); } else {
      results.push(skip(id, 'webhooks.events', `mirror.eventsSecret is not set: call activities are mirrored by the poll (every ${every(sync.mirror.every)}), not as each call ends`));
    }
  }
  return { receives, results };
}

export function checkWebhooks(config: Config, syncs: readonly SyncConfig[]): CheckResult[] {
  const out: CheckResult[] = [];
  const receiving: string[] = [];
  for (const sync of syncs) {
    const r = secrets(sync);
    out.push(...r.results);
    if (r.receives) receiving.push(sync.id);
  }
  const publicUrl = config.http.publicUrl;
  if (!receiving.length) return out;
  if (!publicUrl) {
    out.push(warn(null, 'webhooks.publicUrl', `http.publicUrl is not set, and ${receiving.join(', ')} receive${receiving.length === 1 ? 's' : ''} webhooks: the daemon takes its address from each request's Host, which a proxy may change (HubSpot signs the URL it called)`,
      'set http.publicUrl to the https:// address CRMs call (scheme, host, port, path prefix)'));
    return out;
  }
  const url = new URL(publicUrl);
  if (url.protocol === 'https:') out.push(ok(null, 'webhooks.publicUrl', `http.publicUrl ${publicUrl} is https`));
  else if (LOOPBACK.test(url.hostname)) out.push(ok(null, 'webhooks.publicUrl', `http.publicUrl ${publicUrl} is http on loopback (nothing crosses a network)`));
  else {
    out.push(fail(null, 'webhooks.publicUrl', `http.publicUrl ${publicUrl} is http on a host that is not loopback: webhook bodies, their signatures and Pipedrive's HTTP Basic password would cross the network in clear`,
      `serve the daemon behind TLS (a reverse proxy) and set http.publicUrl to https://${url.host}${url.pathname === '/' ? '' : url.pathname}`));
  }
  return out;
}
