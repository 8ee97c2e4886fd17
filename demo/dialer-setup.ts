// What an operator would click in the dialer's web console for the demo, done through the reference server's
// console API: an account, the events endpoint, a Dynamic campaign that dials around the clock, and API keys.

export interface DialerSetup {
  accountId: string;
  campaignId: string;
  /**
   * Campaign Number Admin (restricted to the campaign) + Campaign Admin (the calling window pauses and resumes the
   * campaign; also reads the call-details report): the daemon's key.
   */
  daemonToken: string;
  /** Campaign Reader: the progress view's own key (rate limits are per key, so it never slows the daemon). */
  viewToken: string;
  /** Campaign Admin: printed for the person following the demo. */
  adminToken: string;
  /** The endpoint's whsec_ secret: the daemon checks call.finished events with it. */
  eventsSecret: string;
}

export interface DialerSetupOptions {
  baseUrl: string;
  consoleToken: string;
  /** Where the server posts the campaign's events (the daemon's /webhooks/<sync>/events). */
  eventsUrl: string;
  agents: number;
  /** The campaign's name (after the CRM it is fed from). */
  campaignName: string;
}

export const TIME_ZONE = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

async function consoleCall<T>(o: DialerSetupOptions, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${o.baseUrl}/console${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.consoleToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /console${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

export async function setUpDialer(o: DialerSetupOptions): Promise<DialerSetup> {
  const account = await consoleCall<{ id: string }>(o, '/accounts', { name: 'Demo Company', timezone: TIME_ZONE });
  const a = `/accounts/${account.id}`;
  // A campaign takes its endpoint when it is created, so the endpoint comes first.
  const endpoint = await consoleCall<{ id: string; secret: string }>(o, `${a}/webhookEndpoints`, { url: o.eventsUrl });
  const campaign = await consoleCall<{ id: string }>(o, `${a}/campaigns`, {
    name: o.campaignName, type: 'Dynamic', state: 'Active', webhookEndpointId: endpoint.id,
    // Retries come after minutes rather than hours, so the demo shows numbers settling while one watches.
    dialer: { mode: 'Power', agents: o.agents, maxAttempts: 3, callingHours: ALL_DAY,
      retryDelaySeconds: { NoAnswer: 900, Busy: 300, CallError: 600, Machine: 900, Abandoned: 300 } },
  });
  const key = (name: string, roles: string[], campaignIds: string[] | null = null) =>
    consoleCall<{ token: string }>(o, `${a}/apiKeys`, { name, roles, campaignIds });
  const [daemonKey, viewKey, adminKey] = await Promise.all([
    key('sync daemon', ['CampaignNumberAdmin', 'CampaignAdmin'], [campaign.id]),
    key('demo progress view', ['CampaignReader']),
    key('demo admin', ['CampaignAdmin']),
  ]);
  return {
    accountId: account.id, campaignId: campaign.id, daemonToken: daemonKey.token, viewToken: viewKey.token,
    adminToken: adminKey.token, eventsSecret: endpoint.secret,
  };
}
