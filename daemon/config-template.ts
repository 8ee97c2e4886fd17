// The configuration `init --source <type>` writes: commented YAML with a ${ENV} reference for every secret and every
// default spelled out (taken from the configuration schema itself, so the file says what the daemon does), ready for
// `check`. A CRM gives its own source block and mapping (its registry entry's `init`).
import { dirname, join } from 'node:path';
import { parseConfig, type Config } from './config.ts';
import { DEFAULT_COMPLIANCE } from './compliance/in-force.ts';
import { CRMS, crmOf } from './crm/registry.ts';
import { crmSchemas } from './crm/schemas.ts';

export const INIT_SOURCES = [...CRMS.map((c) => c.type), 'webhook', 'csv'] as const;

/** A duration as the configuration writes one: 30s, 15m, 1h, 1d. */
function duration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** The configuration of one sync with nothing but what is required: what the schema fills in are the defaults. */
function defaults(): Config {
  return parseConfig({
    dialer: { baseUrl: 'https://dialer.example.com', accountId: 'x', apiToken: 'x' },
    syncs: [{ id: 'x', campaignId: 'x', source: { type: 'webhook', secret: 'x' }, mapping: { phone: 'phone' }, mirror: { sink: { type: 'none' } } }],
  }, 'defaults', {});
}

/** Replaces {{path}} and {{path|duration}} with the value at `path` of `values`. */
function fill(text: string, values: Record<string, unknown>): string {
  return text.replace(/\{\{([\w.]+)(\|duration)?\}\}/g, (_, path: string, asDuration?: string) => {
    const value = path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], values);
    if (value === undefined) throw new Error(`config template: no default at ${path}`);
    return asDuration ? duration(value as number) : String(value);
  });
}

const GENERIC: Record<'webhook' | 'csv', { source: string; mapping: string; env: Record<string, string>; source0: Record<string, unknown> }> = {
  webhook: {
    source: `    source:
      type: webhook
      # A Standard Webhooks secret (whsec_ + base64, 24 bytes or more): each delivery to /webhooks/<sync id> is verified with it.
      secret: \${WEBHOOK_SECRET}`,
    mapping: `    mapping:
      id: {{sync.mapping.id}}                                # the field holding the contact's id
      phone: phone                          # or a list of fields: [phone, mobile]
      variables: { firstName: firstName }   # the campaign's variables, in order
      defaultCountry: US
      # doNotCall: doNotCall                # a yes/no field each delivery carries: marked contacts' numbers leave the campaign
      # Where the callee is, for the calling window (each optional; the number's area code is used too):
      # timeZone: timeZone
      # region: state
      # postalCode: zip`,
    env: { WEBHOOK_SECRET: 'the whsec_ secret your webhook sender signs with' },
    source0: { type: 'webhook', secret: 'x' },
  },
  csv: {
    source: `    source:
      type: csv
      path: {{csvPath}}                    # read whole at every run: contacts no longer in it leave the campaign (relative: to the folder the daemon runs in)
      delimiter: "{{source.delimiter}}"`,
    mapping: `    mapping:
      id: {{sync.mapping.id}}                                # the column holding the contact's id
      phone: phone                          # or a list of columns: [phone, mobile]
      variables: { firstName: firstName }
      defaultCountry: US
      # doNotCall: doNotCall                # a yes/no column: marked contacts' numbers leave the campaign
      # region: state
      # postalCode: zip`,
    env: {},
    source0: { type: 'csv', path: 'x' },
  },
};

export interface Template { text: string; env: Record<string, string> }

/** Where the file goes and how its header names the commands; a CSV source's files sit beside it. */
export interface TemplateOptions {
  /** The daemon's command as the user runs it (campaign-sync, or ./dev daemon in a checkout). */
  command: string;
  /** The file being written (--out), or undefined for stdout. */
  file?: string;
}

/**
 * The sample contacts `init --source csv --out FILE` writes beside FILE: the columns its mapping names, and phone
 * numbers of the 555-0100 to 555-0199 range, which North American numbering keeps for fiction (none is anyone's).
 */
export const SAMPLE_CONTACTS = `id,phone,firstName
c1,+1 212 555 0190,Ada
c2,+1 212 555 0191,Grace
c3,+1 212 555 0192,Alan
c4,+1 212 555 0193,Edsger
c5,+1 212 555 0194,Barbara
`;

/** A string as YAML reads it back: plain when it can be, else double-quoted (JSON's quoting is YAML's). */
const yamlString = (text: string) => (/^[\w./-]+$/.test(text) ? text : JSON.stringify(text));

/** The sample contacts' file for a configuration written to `file`: contacts.csv in the same folder. */
export function sampleContactsPath(file: string | undefined): string {
  return file ? join(dirname(file), 'contacts.csv') : 'contacts.csv';
}

export function configTemplate(type: string, o: TemplateOptions): Template {
  const crm = crmOf(type);
  const part = crm ? { ...crm.init, source0: crm.init.minimal } : GENERIC[type as 'webhook' | 'csv'];
  if (!part) throw new Error(`no source type "${type}": one of ${INIT_SOURCES.join(', ')}`);
  const schema = crmSchemas.find((s) => s.shape.type.value === type);
  const base = defaults();
  const sourceDefaults = schema ? schema.parse(part.source0) : type === 'csv' ? { delimiter: ',' } : {};
  const c = DEFAULT_COMPLIANCE;
  const mirror = crm
    ? `    # Call-detail records back to the CRM as call activities (the key needs Campaign Reader for them).
    mirror:
      sink: { type: source }
      every: {{sync.mirror.every|duration}}                           # the poll, beside the dialer's call.finished events
      late: {{sync.mirror.late|duration}}                           # records may appear this long after later ones
      keepDays: {{sync.mirror.keepDays}}
      # eventsSecret: \${DIALER_EVENTS_SECRET}   # verifies call.finished events at /webhooks/<sync id>/events (the fast path)`
    : type === 'csv'
      ? `    # Every call back as one JSON line of a file (or to a signed webhook: sink: { type: webhook, url: ... }).
    mirror: { sink: { type: file, path: {{callsPath}} } }`
      : `    # Call activities to a file or a signed webhook (a sync under the state rows counts its calls even without one):
    # mirror: { sink: { type: file, path: activities.jsonl } }`;
  const csvPath = sampleContactsPath(o.file);
  const values = { ...base, sync: { ...base.syncs[0]!, mirror: { ...base.syncs[0]!.mirror, sink: undefined } }, source: sourceDefaults,
    csvPath: yamlString(csvPath), callsPath: yamlString(join(dirname(csvPath), 'calls.jsonl')) };
  const config = o.file ?? 'THIS_FILE';
  const text = fill(`# The sync daemon's configuration, written by \`init --source ${type}\`. Edit the values marked "your-", then:
#   ${o.command} check --config ${config}     (every connection and permission, read-only; exit 0 when all is well)
#   ${o.command} start --config ${config}
# Secrets are \${ENV} references, set in the daemon's environment, never in this file: ${['DIALER_API_TOKEN', ...Object.keys(part.env)].join(', ')}.
# Every default is spelled out: a line left out keeps the same value.
redis:
  url: {{redis.url}}                  # or cluster: [redis://node-1:6379, ...]; rediss:// for TLS
  prefix: {{redis.prefix}}                                # every key the daemon writes starts with it
  # password: \${REDIS_PASSWORD}
http:
  host: {{http.host}}
  port: {{http.port}}
  # publicUrl: https://sync.example.com   # the address CRMs and the dialer call (https unless it is loopback)
  # adminToken: \${CDS_ADMIN_TOKEN}        # the operations page (/ops); without it the page is off
dialer:
  baseUrl: https://dialer.example.com     # your dialing service's address (its API paths start with /v1)
  accountId: your-account-id              # the console shows it
  # A key with Campaign Number Admin (adds numbers), Campaign Reader (the mirror, the caps' counts) and Campaign
  # Admin (the calling window pauses and resumes the campaign); \`check\` says which one is missing.
  apiToken: \${DIALER_API_TOKEN}
  timeZone: {{dialer.timeZone}}                           # the account's time zone: report times are its wall clock
  rateLimit: { perSecond: {{dialer.rateLimit.perSecond}}, burst: {{dialer.rateLimit.burst}} }
  maxNumbersPerRequest: {{dialer.maxNumbersPerRequest}}
  pageSize: {{dialer.pageSize}}
  concurrency: {{dialer.concurrency}}
  timeout: {{dialer.timeout|duration}}
  attempts: {{dialer.attempts}}
# The calling-window rules hold every sync: the federal window (08:00-21:00) and the state rows (stricter hours,
# Florida's 3 calls in 24 hours), each in the callee's local time; the campaign is paused outside it. Turn them off
# for a sync whose calls are not telemarketing with compliance: { off: "<the reason>" } (in the sync, or here).
compliance:
  stateRules: ${c.ruleSet.stateRules}
  evidence: ${c.evidence}                         # all: a callee's zones are those of every clue (time zone, address, number)
  checkEvery: ${duration(c.checkEvery)}
  margin: ${duration(c.margin)}                            # the campaign pauses this long before its window closes
  rescanEvery: ${duration(c.rescanEvery)}
  # window: { from: "09:00", to: "20:00", days: [mon, tue, wed, thu, fri] }   # your own window, inside the law's
# Do Not Call: every number is checked against the company's own list (numbers added by \`dnc add\`, POST /dnc/company
# and the CRM's Do Not Call mark) and the lists named here, before it reaches the dialer. Put each download of the
# National Do Not Call Registry in the folder as full-YYYY-MM-DD/ or changes-YYYY-MM-DD/ and load it (\`dnc load\`)
# before you name the list: a list without a copy vouches for no number, and none is added.
# doNotCallLists:
#   - { name: national, type: registry, folder: /var/lib/campaign-sync/dnc/national }
# doNotCall: { off: "the reason" }        # no registry for syncs whose calls are not sales calls (surveys, charities)
syncs:
  - id: ${type}-sync
    campaignId: your-campaign-id          # a Dynamic campaign of the account
    # compliance: { off: "the reason" }   # this sync without the calling-window rules: calls that are not telemarketing, or a test dialer's simulated callees
${part.source}
${part.mapping}
    schedule: { every: {{sync.schedule.every|duration}} }             # or { cron: "0 */15 * * * *", tz: America/New_York }
    onLeave: {{sync.onLeave}}                       # a contact gone from the selection: its numbers leave the campaign (or keep)
    ownsCampaign: {{sync.ownsCampaign}}                  # numbers in the campaign this sync did not add are kept as they are;
                                               #   true: it feeds the campaign alone and takes them as its own
${mirror}
takeoverAfter: {{takeoverAfter|duration}}
scheduleCheckEvery: {{scheduleCheckEvery|duration}}
shutdownTimeout: {{shutdownTimeout|duration}}
log: { level: {{log.level}} }
`, values as unknown as Record<string, unknown>);
  return { text, env: { DIALER_API_TOKEN: 'the dialer API key\'s token', ...part.env } };
}
