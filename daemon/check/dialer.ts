// `check` on the dialer: the key is valid, its roles against what each sync does, each campaign exists, is Dynamic and
// in a state that takes numbers, and the account's time zone against `dialer.timeZone`.
//
// The API has no resource that shows a key its own roles (spec §4.12: API-key endpoints are not shown), so they are
// learned from what the key may do, cheaply and without changing anything:
// - listing campaigns (§4.2) is allowed to Campaign Admin and Campaign Reader only: refused, the key has neither (so
//   no Campaign Admin either, a certainty by the role table of §5);
// - reading a campaign's numbers (one record) and adding an empty list of them: Campaign Number Admin (or Admin);
// - changing the state to none (a body §3.1 says no request may set): a 403 means the key lacks Campaign Admin, any
//   other refusal means the dialer looked at the body after the role. A dialer that reads bodies before roles would
//   pass a key without the role here: the first real pause then answers 403, and `start` refuses the sync then;
// - reading one call-detail record: Campaign Reader (or Admin), which the mirror (and a cap's count) needs.
import type { Config, SyncConfig } from '../config.ts';
import { dialerOf } from '../config.ts';
import { DialerClient, DialerError } from '../dialer.ts';
import { toUtc } from '../local-time.ts';
import { offsetAt } from '../../api/wall-clock.ts';
import { error, fail, ok, skip, warn, type CheckResult } from './result.ts';

/** A check waits this long for the dialer (the sync's own requests wait dialer.timeout). */
const CHECK_TIMEOUT_MS = 10_000;
/** Clocks disagree by this much before a record's time says the zone is wrong. */
const SLACK_MS = 5 * 60_000;

interface Campaign { id: string; name?: string; state?: string; type?: string; startedAt?: string | null }

/** The campaigns a sync feeds: its own, or one per route. */
function campaignsOfSync(sync: SyncConfig): string[] {
  return sync.routes ? sync.routes.map((r) => r.campaignId) : [sync.campaignId];
}

const offsetText = (minutes: number) => `UTC${minutes < 0 ? '-' : '+'}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}:${String(Math.abs(minutes) % 60).padStart(2, '0')}`;

/** Where the sync's key comes from, for messages (never the token). */
function keySetting(sync: SyncConfig): string {
  return sync.dialer?.apiToken ? `syncs[${sync.id}].dialer.apiToken` : 'dialer.apiToken';
}

export async function checkDialer(config: Config, syncs: readonly SyncConfig[], now = Date.now()): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  // Syncs sharing a key share its campaigns list: one request per key.
  const byKey = new Map<string, SyncConfig[]>();
  for (const sync of syncs) {
    const d = dialerOf(config, sync);
    const key = `${d.baseUrl}\n${d.accountId}\n${d.apiToken}`;
    byKey.set(key, [...byKey.get(key) ?? [], sync]);
  }
  for (const group of byKey.values()) {
    const dialer = dialerOf(config, group[0]!);
    const client = new DialerClient({ ...dialer, timeout: Math.min(dialer.timeout, CHECK_TIMEOUT_MS) });
    const ids = [...new Set(group.flatMap(campaignsOfSync))];
    let listed: Map<string, Campaign> | null = null;
    let listRefusal = '';
    try {
      listed = new Map((await client.campaigns(ids)).map((c) => [c.id, c]));
    } catch (err) {
      const e = err as DialerError;
      if (e.status === 401) {
        for (const sync of group) {
          out.push(fail(sync.id, 'dialer.key', `the dialer at ${dialer.baseUrl} refused the API key (401): ${e.message}`,
            `set ${keySetting(sync)} to the token of a live key of account ${dialer.accountId}. Keys are made in the dialer's web console ` +
            `(the service's Settings > API Keys; the reference server's: the account's page, "API keys", and --seed demo prints one), ` +
            'which shows a token only when its key is made: a lost token needs a new key'));
        }
        continue;
      }
      if (e.status !== 403) {
        for (const sync of group) out.push(error(sync.id, 'dialer.key', `the dialer at ${dialer.baseUrl} did not answer the campaigns list: ${e.message}`));
        continue;
      }
      listRefusal = e.message;
    }
    for (const sync of group) {
      if (listed) out.push(ok(sync.id, 'dialer.key', `the key is valid for account ${dialer.accountId} and may list campaigns (Campaign Admin or Campaign Reader)`));
      else out.push(ok(sync.id, 'dialer.key', `the key is valid for account ${dialer.accountId}; it may not list campaigns (${listRefusal}): it has neither Campaign Admin nor Campaign Reader`));
      for (const campaignId of campaignsOfSync(sync)) out.push(...await checkCampaign(client, sync, campaignId, listed, listRefusal, dialer.timeZone, now));
    }
  }
  return out;
}

async function checkCampaign(client: DialerClient, sync: SyncConfig, campaignId: string, listed: Map<string, Campaign> | null, listRefusal: string,
  timeZone: string, now: number): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const id = sync.id;
  const windowed = sync.rules.compliance !== undefined;
  const path = `/campaigns/${encodeURIComponent(campaignId)}`;
  const campaign = listed?.get(campaignId);
  const named = `campaign ${campaignId}${campaign?.name ? ` ("${campaign.name}")` : ''}`;
  // A campaign that cannot take numbers refuses the sync: `start` then leaves it untouched (no state change either).
  const missing = () => fail(id, 'dialer.campaign', `${named} does not exist in account ${client.config.accountId}`,
    `set ${sync.routes ? 'the route\'s campaignId' : 'campaignId'} to the id of a Dynamic campaign of the account (the console shows it)`, true);
  if (listed && !campaign) return [missing()];
  if (campaign) {
    if (campaign.type !== 'Dynamic') {
      out.push(fail(id, 'dialer.campaign', `${named} is ${campaign.type ?? 'of an unknown type'}: numbers are added only to a Dynamic campaign (spec §4.7)`,
        'feed a Dynamic campaign: create one in the console (a Static campaign cannot become Dynamic)', true));
    } else if (campaign.state === 'Active') out.push(ok(id, 'dialer.campaign', `${named} is Dynamic and Active`));
    else if (campaign.state === 'Paused' && windowed) out.push(ok(id, 'dialer.campaign', `${named} is Dynamic and Paused: its calling window resumes it when it opens`));
    else if (campaign.state === 'Paused' || campaign.state === 'Draft') {
      out.push(warn(id, 'dialer.campaign', `${named} is Dynamic and ${campaign.state}: numbers are added only while it is Active, they wait until then`, 'start the campaign in the console (or PUT .../state "Active")'));
    } else {
      out.push(fail(id, 'dialer.campaign', `${named} is ${campaign.state}: it takes no numbers and cannot become Active again`, 'feed a Dynamic campaign that is Active (or Paused)', true));
    }
  } else {
    out.push(skip(id, 'dialer.campaign', `${named}: its type and state are not seen: the key may not list campaigns (a Campaign Reader or Admin role would show them)`));
  }

  // The numbers: read (reconciliation, the window's counts) and add; the roles that allow both delete too (§5).
  let total: number | null = null;
  try {
    total = (await client.listNumbers(campaignId, 0, 0)).total;
    const added = await client.answerTo('POST', `${path}/numbers`, '[]');
    if (added.status === 403) {
      out.push(fail(id, 'dialer.numbers', `the key may read ${named}'s numbers but not add them (403: ${added.detail})`,
        `give the key the Campaign Number Admin role${sync.routes ? '' : ' (for this campaign, if it is restricted to some)'}`));
    } else {
      out.push(ok(id, 'dialer.numbers', `the key may read and add ${named}'s numbers (${total ?? '?'} held): Campaign Number Admin or Campaign Admin`));
    }
  } catch (err) {
    const e = err as DialerError;
    if (e.status === 404) return [...out.filter((r) => r.check !== 'dialer.campaign'), missing()];
    if (e.status === 403) {
      out.push(fail(id, 'dialer.numbers', `the key may not read ${named}'s numbers (403: ${e.message})`,
        'give the key the Campaign Number Admin role (for this campaign, if restricted to some); a deleted key or one of another account is refused the same way'));
    } else out.push(error(id, 'dialer.numbers', `reading ${named}'s numbers: ${e.message}`));
  }

  if (windowed) out.push(await checkStateChange(client, sync, path, named, listed === null, listRefusal));
  else out.push(skip(id, 'dialer.state', `the calling-window rules are off for this sync (${sync.rules.off}): the key need not change ${named}'s state`));

  if (sync.mirror) out.push(...await checkReports(client, sync, campaignId, named, campaign?.startedAt ?? null, timeZone, now));
  return out;
}

/** Calling windows pause and resume the campaign: Campaign Admin (spec §5: state changes are no other role's). */
async function checkStateChange(client: DialerClient, sync: SyncConfig, path: string, named: string, cannotList: boolean, listRefusal: string): Promise<CheckResult> {
  const fix = 'give the key the Campaign Admin role, or turn the rules off for this sync with compliance: { off: "<reason>" } (if its calls are not telemarketing)';
  const cannot = 'the calling window could not pause the campaign when its callees\' window closes, so numbers would be called outside it';
  if (cannotList) {
    return fail(sync.id, 'dialer.state', `the key may not change ${named}'s state: it may not even list campaigns (${listRefusal}), so it lacks Campaign Admin; ${cannot}`, fix, true);
  }
  try {
    const answer = await client.answerTo('PUT', `${path}/state`, 'null');
    if (answer.status === 403) return fail(sync.id, 'dialer.state', `the key may not change ${named}'s state (403: ${answer.detail}): ${cannot}`, fix, true);
    if (answer.status === 401) return fail(sync.id, 'dialer.state', `the dialer refused the key (401): ${answer.detail}`, `set ${keySetting(sync)} to a live key's token`);
    if (answer.status < 300) return warn(sync.id, 'dialer.state', `the dialer accepted a state change to no state (${answer.status}) for ${named}: check the campaign's state in the console`);
    return ok(sync.id, 'dialer.state', `the key may change ${named}'s state (Campaign Admin): a change to no state was refused for its body (${answer.status}), not for the key's role`);
  } catch (err) {
    return error(sync.id, 'dialer.state', `probing ${named}'s state change: ${(err as Error).message}`);
  }
}

/**
 * The mirror reads the call-detail report (Campaign Reader or Admin); a cap (the state rows) counts calls from it, so
 * without it a cap would go uncounted. The first and the latest record also tell whether `dialer.timeZone` is the
 * account's: report times are its wall clock.
 */
async function checkReports(client: DialerClient, sync: SyncConfig, campaignId: string, named: string, startedAt: string | null, timeZone: string, now: number): Promise<CheckResult[]> {
  const caps = sync.rules.compliance?.ruleSet.stateRules === true;
  let latest: Record<string, unknown> | undefined;
  try {
    [latest] = await client.listCallDetails(campaignId, 0, 0, {}, 'DESC');
  } catch (err) {
    const e = err as DialerError;
    if (e.status !== 403) return [error(sync.id, 'dialer.reports', `reading ${named}'s call-detail report: ${e.message}`)];
    const why = caps ? 'the state rows\' per-number caps (Florida: 3 calls in 24 hours) count calls from it, so they could not be kept' : 'the mirror reads it to write call activities back';
    return [fail(sync.id, 'dialer.reports', `the key may not read ${named}'s call-detail report (403: ${e.message}): ${why}`,
      'give the key the Campaign Reader role (or Campaign Admin)', caps)];
  }
  const out = [ok(sync.id, 'dialer.reports', `the key may read ${named}'s call-detail report (Campaign Reader or Campaign Admin)${caps ? ': the state rows\' caps are counted' : ''}`)];
  if (!latest) {
    out.push(skip(sync.id, 'dialer.timeZone', `${named} has no call-detail record yet: dialer.timeZone (${timeZone}) is compared with the account's once a call has ended`));
    return out;
  }
  const zone = `dialer.timeZone (${timeZone}, ${offsetText(offsetAt(timeZone, now) / 60_000)})`;
  const fix = 'set dialer.timeZone to the account\'s time zone (the console\'s account settings): report times are its wall clock';
  const ended = String(latest.endedAtLocal ?? '');
  const endedAt = ended ? toUtc(ended, timeZone) : NaN;
  if (endedAt > now + SLACK_MS) {
    // The record cannot have ended after now: the account's clock is ahead of the configured zone's by at least this.
    const ahead = Math.round((endedAt - now) / 60_000);
    out.push(fail(sync.id, 'dialer.timeZone', `the latest call-detail record of ${named} ended at ${ended}, which in ${zone} is ${ahead} minutes from now: the account's clock is at least ${ahead} minutes ahead of ${timeZone}`, fix));
    return out;
  }
  if (startedAt) {
    try {
      const [first] = await client.listCallDetails(campaignId, 0, 0, {}, 'ASC');
      const started = String(first?.startedAtLocal ?? '');
      const firstAt = started ? toUtc(started, timeZone) : NaN;
      if (firstAt < Date.parse(startedAt) - SLACK_MS) {
        const behind = Math.round((Date.parse(startedAt) - firstAt) / 60_000);
        out.push(fail(sync.id, 'dialer.timeZone', `the first call-detail record of ${named} started at ${started}, which in ${zone} is ${behind} minutes before the campaign started (${startedAt}): the account's clock is at least ${behind} minutes behind ${timeZone}`, fix));
        return out;
      }
    } catch (err) {
      out.push(error(sync.id, 'dialer.timeZone', `reading ${named}'s first call-detail record: ${(err as Error).message}`));
      return out;
    }
  }
  out.push(ok(sync.id, 'dialer.timeZone', `${named}'s call-detail records fit ${zone}`));
  return out;
}
