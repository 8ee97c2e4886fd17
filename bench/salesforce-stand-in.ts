// `./dev bench salesforce-stand-in [--contacts 100000 --leads 50000]`: how fast the Salesforce stand-in seeds, pages a full SOQL export, answers an incremental query and upserts call Tasks.
//
// The figures say whether the stand-in can feed the daemon's benchmarks without being the bottleneck: the export
// goes through nextRecordsUrl 2,000 records at a time as the daemon's first sync would, the incremental query scans
// every contact for a SystemModstamp range, and the upserts are sObject Collections of 200 Tasks.
import { performance } from 'node:perf_hooks';
import { startSalesforceStandIn } from '../crm-stand-ins/salesforce.ts';
import { describeMachine, loadAverage, machine, MB, readFlags, round, stats } from './support.ts';

const FLAGS = {
  contacts: { def: 100_000, help: 'contacts to seed' },
  leads: { def: 50_000, help: 'leads to seed' },
  upserts: { def: 20, help: 'collections of 200 Tasks to upsert' },
} as const;
const flags = readFlags(FLAGS, { command: 'salesforce-stand-in', example: 'BENCH_CONTACTS=20000', width: 9 });
const loadAtStart = loadAverage();

let t0 = performance.now();
const s = await startSalesforceStandIn({ contacts: flags.contacts, leads: flags.leads, campaigns: 3, dailyApiRequests: 1e9 });
const seedMs = performance.now() - t0;

const tokenRes = await fetch(`${s.url}/services/oauth2/token`, {
  method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: s.clientId, client_secret: 'sf-client-secret' }),
});
const { access_token: token } = await tokenRes.json() as { access_token: string };
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const get = async (path: string) => {
  const res = await fetch(s.url + path, { headers });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ totalSize: number; done: boolean; nextRecordsUrl?: string; records: unknown[] }>;
};
const query = (soql: string) => `/services/data/v62.0/query?q=${encodeURIComponent(soql)}`;

// A full export through the cursor.
const pageMs: number[] = [];
let exported = 0;
t0 = performance.now();
let path: string | undefined = query(`SELECT Id, FirstName, LastName, Phone, MobilePhone, ${s.customPhoneField}, DoNotCall, SystemModstamp FROM Contact ORDER BY SystemModstamp, Id`);
while (path) {
  const p0 = performance.now();
  const body = await get(path);
  pageMs.push(performance.now() - p0);
  exported += body.records.length;
  path = body.nextRecordsUrl;
}
const exportMs = performance.now() - t0;
if (exported !== flags.contacts) throw new Error(`export returned ${exported} contacts, not ${flags.contacts}`);

// Campaign members with their people's phones through relationships.
t0 = performance.now();
const campaignId = s.records('Campaign')[0]!.values.Id;
const members = await get(query(`SELECT Id, ContactId, LeadId, Contact.Phone, Contact.DoNotCall, Lead.Phone, Lead.DoNotCall FROM CampaignMember WHERE CampaignId = '${campaignId}'`));
const membersMs = performance.now() - t0;

// An incremental query after 100 changes.
const since = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
for (const c of s.records('Contact').slice(0, 100)) s.updateRecord(c.values.Id as string, { DoNotCall: true });
const incrementalMs: number[] = [];
for (let i = 0; i < 5; i++) {
  t0 = performance.now();
  const body = await get(query(`SELECT Id, DoNotCall FROM Contact WHERE SystemModstamp >= ${since} ORDER BY SystemModstamp`));
  incrementalMs.push(performance.now() - t0);
  if (body.totalSize !== 100) throw new Error(`incremental query found ${body.totalSize}, not 100`);
}

// Collections of 200 call Tasks.
const contactIds = s.records('Contact').slice(0, 200).map((c) => c.values.Id);
const upsertMs: number[] = [];
for (let u = 0; u < flags.upserts; u++) {
  const records = contactIds.map((who, i) => ({
    attributes: { type: 'Task' }, [s.taskExternalIdField]: `bench-${u}-${i}`, WhoId: who, Subject: 'Call', TaskSubtype: 'Call',
    CallType: 'Outbound', Status: 'Completed', CallDurationInSeconds: 30, CallDisposition: 'Connected',
  }));
  t0 = performance.now();
  const res = await fetch(`${s.url}/services/data/v62.0/composite/sobjects/Task/${s.taskExternalIdField}`, { method: 'PATCH', headers, body: JSON.stringify({ records }) });
  const results = await res.json() as Array<{ success: boolean }>;
  upsertMs.push(performance.now() - t0);
  if (!results.every((r) => r.success)) throw new Error('an upsert failed');
}
const rssMb = process.memoryUsage().rss / MB;
await s.close();

const page = stats(pageMs);
console.log(`FIGURES (${describeMachine(machine(loadAtStart))})`);
console.log(`seed ${flags.contacts} contacts + ${flags.leads} leads + members: ${round(seedMs)} ms`);
console.log(`full export of ${exported} contacts, ${pageMs.length} pages of 2,000: ${round(exportMs)} ms = ${Math.round(exported / (exportMs / 1000))} records/s; page p50 ${page.p50} ms, max ${page.max} ms (the first page runs the query)`);
console.log(`campaign members with relationship fields: ${members.totalSize} in the first batch of ${members.records.length}, ${round(membersMs)} ms`);
console.log(`incremental query (SystemModstamp range over ${flags.contacts}, 100 found): p50 ${stats(incrementalMs).p50} ms`);
console.log(`upsert of 200 Tasks: p50 ${stats(upsertMs).p50} ms, max ${stats(upsertMs).max} ms`);
console.log(`rss ${round(rssMb)} MB`);
