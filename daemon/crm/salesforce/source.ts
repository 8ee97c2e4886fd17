// Salesforce: a Campaign's members (their Leads and Contacts) or a SOQL WHERE over Contact or Lead, read through the
// query resource in Id order (a lost cursor restarts after the last Id), incrementally by SystemModstamp (a change of
// DoNotCall moves it too); Outbound Messages from the configured org are acknowledged and their records read by id.
import type { SyncConfig } from '../../config.ts';
import type { PullOptions, PullPage, Source, WebhookRequest, WebhookVerdict } from '../../sources/source.ts';
import { id18, SalesforceError, soqlDateTime, soqlString, type SalesforceApi, type SfRow } from './client.ts';
import type { SalesforceConfig } from './config.ts';
import { parseOutboundMessage, SOAP_ACK, SOAP_CONTENT_TYPE, soapFault } from './outbound.ts';

const FIELD = /^[A-Za-z][A-Za-z0-9_]{0,79}$/;
/** Ids per `Id IN (…)` query: keeps the URL well under Salesforce's 16,384 characters. */
const IDS_PER_QUERY = 300;

export class SalesforceSource implements Source {
  readonly kind = 'salesforce';
  readonly pulls = true;
  readonly readBatch = IDS_PER_QUERY;
  readonly compareEvery: number;
  private readonly config: SalesforceConfig;
  private readonly api: SalesforceApi;
  /** The Lead's or Contact's fields read: the mapping's, the configured ones, and what the daemon needs itself. */
  private readonly fields: string[];

  constructor(sync: SyncConfig, api: SalesforceApi) {
    this.config = sync.source as SalesforceConfig;
    this.compareEvery = this.config.compareEvery;
    this.api = api;
    // The Do Not Call fields (DoNotCall always) are the mapping's: the sync reads them like any mapped field.
    // The calling window's evidence fields (a state, a postal code, a country, a time zone) are mapped fields too.
    const { timeZone, region, postalCode, country } = sync.mapping;
    const wanted = [...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...sync.mapping.doNotCall.map((d) => d.field),
      ...[timeZone, region, postalCode, country].filter((f) => f !== undefined), ...this.config.fields];
    for (const f of wanted) {
      if (!FIELD.test(f)) throw new Error(`sync ${sync.id}: mapping field "${f}" is not a Salesforce field API name (such as Phone or Mobile__c)`);
    }
    const seen = new Set<string>();
    this.fields = ['Id', 'SystemModstamp', ...wanted].filter((f) => !seen.has(f.toLowerCase()) && seen.add(f.toLowerCase()));
  }

  /**
   * Rows of `object` matching every condition, in Id order, page by page. Query cursors expire when left alone
   * (15 minutes), so a lost one restarts the query after the last Id read: a read of any size gets through.
   */
  private async *scan(object: string, fields: string[], where: string[], after: string | null, signal?: AbortSignal, all = false): AsyncGenerator<SfRow[]> {
    for (;;) {
      const conditions = [...where, ...(after ? [`Id > ${soqlString(after)}`] : [])];
      const soql = `SELECT ${fields.join(', ')} FROM ${object}${conditions.length ? ` WHERE ${conditions.map((c) => `(${c})`).join(' AND ')}` : ''} ORDER BY Id`;
      try {
        for await (const rows of this.api.query(soql, { all, signal })) {
          yield rows;
          after = String(rows.at(-1)!.Id);
        }
        return;
      } catch (err) {
        if (err instanceof SalesforceError && err.code === 'INVALID_QUERY_LOCATOR' && after) continue;
        throw err;
      }
    }
  }

  private get campaign(): boolean {
    return this.config.selection.campaignId !== undefined;
  }

  /** The CampaignMember conditions of the selection. */
  private memberWhere(): string[] {
    const s = this.config.selection;
    return [`CampaignId = ${soqlString(s.campaignId!)}`, ...(s.memberStatuses ? [`Status IN (${s.memberStatuses.map(soqlString).join(', ')})`] : [])];
  }

  private memberFields(personFields: string[]): string[] {
    return ['Id', 'LeadOrContactId', 'Status', ...personFields.flatMap((f) => [`Contact.${f}`, `Lead.${f}`])];
  }

  /** A CampaignMember row as its person: the Contact's or Lead's fields, the member status beside them. */
  private memberPerson(row: SfRow): SfRow | null {
    const person = (row.Contact ?? row.Lead) as SfRow | null | undefined;
    if (!person || typeof row.LeadOrContactId !== 'string') return null;
    return { ...person, Id: row.LeadOrContactId, CampaignMemberStatus: row.Status };
  }

  /** Records as a page of contacts (Do Not Call ones too: the mapping's doNotCall reads them, as for every source). */
  private page(people: SfRow[]): PullPage {
    return { contacts: people.map(({ attributes: _, ...fields }) => ({ id: String(fields.Id), fields: { ...fields, id: String(fields.Id) } })) };
  }

  async *pull(options: PullOptions): AsyncGenerator<PullPage> {
    const { signal } = options;
    const s = this.config.selection;
    const since = options.since === null ? null : soqlDateTime(Math.max(0, options.since - this.config.overlap));
    if (this.campaign) {
      if (options.full || since === null) {
        // Every member with its person; whoever is held and not seen has left (the run's sweep).
        for await (const rows of this.scan('CampaignMember', this.memberFields(this.fields), this.memberWhere(), options.resume, signal)) {
          yield this.page(rows.map((r) => this.memberPerson(r)).filter((p): p is SfRow => p !== null));
          await options.checkpoint(String(rows.at(-1)!.Id));
        }
        return;
      }
      // Members added or changed, and members whose person changed (a phone, Do Not Call) since the last run.
      const changed = `SystemModstamp >= ${since} OR Contact.SystemModstamp >= ${since} OR Lead.SystemModstamp >= ${since}`;
      for await (const rows of this.scan('CampaignMember', this.memberFields(this.fields), [...this.memberWhere(), changed], null, signal)) {
        yield this.page(rows.map((r) => this.memberPerson(r)).filter((p): p is SfRow => p !== null));
      }
      // On the comparison's schedule, the membership by id: members removed from the campaign, and deleted people
      // (their members go with them), leave. Incremental runs read only what changed.
      if (options.compare) {
        for await (const rows of this.scan('CampaignMember', this.memberFields([]), this.memberWhere(), null, signal)) {
          yield { contacts: [], present: rows.flatMap((r) => (typeof r.LeadOrContactId === 'string' ? [r.LeadOrContactId] : [])) };
        }
      }
      return;
    }
    const object = s.object!;
    const where = s.where ? [s.where] : [];
    if (options.full || since === null) {
      for await (const rows of this.scan(object, this.fields, where, options.resume, signal)) {
        yield this.page(rows);
        await options.checkpoint(String(rows.at(-1)!.Id));
      }
      return;
    }
    const matched = new Set<string>();
    for await (const rows of this.scan(object, this.fields, [...where, `SystemModstamp >= ${since}`], null, signal)) {
      for (const r of rows) matched.add(String(r.Id));
      yield this.page(rows);
    }
    if (where.length) {
      // Changed records outside the answer above no longer match the WHERE: they leave.
      for await (const rows of this.scan(object, ['Id'], [`SystemModstamp >= ${since}`], null, signal)) {
        const left = rows.map((r) => String(r.Id)).filter((id) => !matched.has(id));
        if (left.length) yield { contacts: [], left };
      }
    }
    if (options.compare) {
      // On the comparison's schedule: every id the selection holds now (whoever is held and not among them has left).
      for await (const rows of this.scan(object, ['Id'], where, null, signal)) {
        yield { contacts: [], present: rows.map((r) => String(r.Id)) };
      }
    }
    // Deleted records (in the recycle bin, which queryAll reads) leave too.
    for await (const rows of this.scan(object, ['Id'], [`SystemModstamp >= ${since}`, 'IsDeleted = true'], null, signal, true)) {
      yield { contacts: [], left: rows.map((r) => String(r.Id)) };
    }
  }

  /** Reads records by id: those still in the selection as contacts; the rest (removed, not matching, deleted) leave. */
  async *read(ids: string[], signal?: AbortSignal): AsyncGenerator<PullPage> {
    const s = this.config.selection;
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const chunk = ids.slice(i, i + IDS_PER_QUERY);
      const inList = chunk.map(soqlString).join(', ');
      const found: SfRow[] = [];
      if (this.campaign) {
        for await (const rows of this.scan('CampaignMember', this.memberFields(this.fields), [...this.memberWhere(), `LeadOrContactId IN (${inList})`], null, signal)) {
          found.push(...rows.map((r) => this.memberPerson(r)).filter((p): p is SfRow => p !== null));
        }
      } else {
        for await (const rows of this.scan(s.object!, this.fields, [...(s.where ? [s.where] : []), `Id IN (${inList})`], null, signal)) found.push(...rows);
      }
      const present = new Set(found.map((p) => String(p.Id)));
      yield { contacts: this.page(found).contacts, left: chunk.filter((id) => !present.has(id)) };
    }
  }

  verifyWebhook(req: WebhookRequest): WebhookVerdict {
    const refuse = (status: 400 | 401 | 413, reason: string): WebhookVerdict => ({ ok: false, status, reason, reply: { contentType: SOAP_CONTENT_TYPE, body: soapFault(reason) } });
    const org = this.config.orgId;
    if (!org) return refuse(401, 'this sync has no orgId: Salesforce Outbound Messages are refused');
    const parsed = parseOutboundMessage(req.rawBody, this.config.maxOutboundBytes, (id) => id.slice(0, 15) === org.slice(0, 15));
    if (!parsed.ok) return refuse(parsed.status, parsed.reason);
    const wanted = this.campaign ? ['Contact', 'Lead', 'CampaignMember'] : [this.config.selection.object!];
    const notes = parsed.notifications.filter((n) => wanted.includes(n.objectType));
    // Held contacts carry 18-character ids; a message may carry either form.
    const ids = [...new Set(notes.filter((n) => n.objectType !== 'CampaignMember').map((n) => id18(n.recordId)))];
    return {
      // A member added or removed is read with the membership (a pull); a person changed is read by id.
      ok: true, eventIds: parsed.notifications.map((n) => n.id), replayKey: null, contacts: [], deleted: [],
      pull: notes.some((n) => n.objectType === 'CampaignMember'),
      read: ids, reply: { contentType: SOAP_CONTENT_TYPE, body: SOAP_ACK },
      ...(this.api.exhaustedReason() ? { hold: this.api.exhaustedReason()! } : {}),
    };
  }
}
