// `./dev start --crm salesforce` end to end: demo/start.ts in its own process starts the server, the Salesforce
// stand-in and the daemon; the Campaign's members are synced and called, every call comes back as a Task, a changed
// phone reaches the campaign through an Outbound Message (and the progress view says so), and a Ctrl-C (SIGINT) stops
// everything.
import { expect, it } from 'vitest';
import { waitFor } from './support/daemon.ts';
import { field, startDemo } from './support/demo.ts';

it('feeds the campaign from a Salesforce Campaign, writes every call back as a Task, and follows an Outbound Message', async () => {
  const demo = startDemo(['--crm', 'salesforce', '--contacts', '60', '--speed', '600', '--port-base', '0', '--interval', '0.5']);

  // Settled: every number called to its end, and as many Tasks in Salesforce as calls in the report.
  const progress = await waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    return line && / settled$/.test(line) ? { line } : null;
  }, 'the demo to settle', 50_000);
  const out = demo.output();
  expect(progress.line, `the demo exited early:\n${out}`).not.toBeNull();
  const line = progress.line!;
  expect(field(line, 'crm')).toBeGreaterThan(20);
  expect(field(line, 'synced')).toBeGreaterThanOrEqual(field(line, 'crm') * 0.7);
  expect(field(line, 'calls')).toBeGreaterThan(0);
  expect(field(line, 'activities')).toBe(field(line, 'calls'));
  // What the rules held back: the members marked DoNotCall, and (settled) none waiting for the calling window.
  expect(field(line, 'dnc')).toBeGreaterThan(0);
  expect(field(line, 'window')).toBe(0);

  // The "Try" line: a phone changed in Salesforce reaches the campaign through the Outbound Message it sends.
  const sfUrl = /Salesforce stand-in\s+(http:\/\/\S+)/.exec(out)?.[1];
  const serverUrl = /Reference server\s+(http:\/\/\S+)/.exec(out)?.[1];
  const secret = /secret (\S+)/.exec(out)?.[1];
  const contact = /sobjects\/Contact\/(\w+)/.exec(out)?.[1];
  const [, accountId, campaignId] = /\/v1\/accounts\/([^/]+)\/campaigns\/([^/]+)\/reports/.exec(out) ?? [];
  const adminToken = /Campaign Admin API token (\S+)/.exec(out)?.[1];
  for (const v of [sfUrl, serverUrl, secret, contact, accountId, campaignId, adminToken]) expect(v, out).toBeTruthy();
  const token = await fetch(`${sfUrl}/services/oauth2/token`, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: '3MVG9StandIn.ConsumerKey', client_secret: secret! }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  const patched = await fetch(`${sfUrl}/services/data/v62.0/sobjects/Contact/${contact}`, {
    method: 'PATCH', headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ Phone: '+1 212 555 0199' }),
  });
  expect(patched.status).toBe(204);
  await waitFor(async () => {
    const res = await fetch(`${serverUrl}/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?filter=${encodeURIComponent('{"number":"+12125550199"}')}`, { headers: { authorization: `Bearer ${adminToken}` } });
    return res.status === 200 && ((await res.json()) as unknown[]).length === 1;
  }, 'the changed phone in the campaign', 20_000);
  // The progress view follows the Contact changed last and says where its new number went.
  const said = await waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    return line?.includes(`| last change: contact ${contact} +12125550199 added to campaign ${campaignId}`) ? { line } : null;
  }, 'the progress view to say the changed phone was added', 10_000);
  expect(said.line, `the demo exited early:\n${demo.output()}`).not.toBeNull();

  demo.proc.kill('SIGINT');
  expect(await demo.exited, demo.output()).toEqual({ code: 0, signal: null });
  expect(demo.output()).toMatch(/stopped; removed \d+ Redis keys/);
}, 90_000);
