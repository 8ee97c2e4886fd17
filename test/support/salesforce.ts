// Fixtures for tests of the daemon with a Salesforce source: the sync's configuration, who a Campaign's members are
// and which numbers they should give (an oracle independent of the daemon's own parsing), a proxy that every request
// to the stand-in passes, and a campaign that dials on the reference server's virtual clock.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { SalesforceStandIn, SfRecord } from '../../crm-stand-ins/salesforce.ts';
import type { DialerFixture } from './daemon.ts';
import { startProxy } from './proxy.ts';
import { createAccount, createCampaign, createKey, startServer } from './server.ts';

export const PHONES = ['Phone', 'MobilePhone', 'Secondary_Phone__c'];
export const MAPPING = { phone: PHONES, defaultCountry: 'US', variables: { FirstName: 'FirstName', LastName: 'LastName' } };
export const TZ = 'America/New_York';

/** A proxy in front of the stand-in that every request passes: the token answer's instance_url is rewritten to it. */
export async function proxied(sf: SalesforceStandIn): Promise<Awaited<ReturnType<typeof startProxy>>> {
  const proxy = await startProxy(sf.url);
  proxy.onAnswer = (ex, body) => (ex.path.startsWith('/services/oauth2/token') && ex.status === 200
    ? { status: 200, body: body.toString('utf8').replace(JSON.stringify(sf.url).slice(1, -1), proxy.url) } : undefined);
  return proxy;
}

/** The phone number as the campaign should hold it (an oracle independent of the daemon's own parsing). */
export function e164(text: unknown): string | null {
  const p = parsePhoneNumberFromString(typeof text === 'string' ? text : '', 'US');
  return p?.isValid() ? p.number : null;
}

/** Every phone number of these people, Do Not Call ones left out. */
export function numbersOf(people: SfRecord[]): string[] {
  const out = new Set<string>();
  for (const p of people) {
    if (p.values.DoNotCall) continue;
    for (const f of PHONES) {
      const n = e164(p.values[f]);
      if (n) out.add(n);
    }
  }
  return [...out].sort();
}

/** The people in a campaign now. */
export function members(sf: SalesforceStandIn, campaignId: string): SfRecord[] {
  return sf.records('CampaignMember').filter((m) => m.values.CampaignId === campaignId).map((m) => sf.get(m.values.LeadOrContactId as string)!);
}

export function salesforceSync(sf: SalesforceStandIn, campaignId: string, selection: Record<string, unknown>, source: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    id: 'sf', campaignId, mapping: MAPPING, ...extra,
    source: {
      type: 'salesforce', loginUrl: sf.url, clientId: sf.clientId, auth: { flow: 'client_credentials', clientSecret: 'sf-client-secret' },
      orgId: sf.orgId, selection, ...source,
    },
  };
}

/** A campaign that dials round the clock on the reference server's virtual clock, two attempts a number. */
export async function dialingFixture(seed: number, agents = 8): Promise<DialerFixture> {
  const server = await startServer({ seed, clockStart: '2026-11-03T14:00:00Z' });
  const account = await createAccount(server, 'Tasks Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Callbacks', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents, maxAttempts: 2, callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] },
      retryDelaySeconds: { NoAnswer: 1200, Busy: 900, CallError: 900, Machine: 1200, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}
