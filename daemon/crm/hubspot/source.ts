// HubSpot: contacts through the CRM search API (date-versioned paths), webhooks verified with X-HubSpot-Signature-v3.
import type { RedisClient } from '../../state/connection.ts';
import type { Logger } from 'pino';
import type { DaemonKeys } from '../../state/keys.ts';
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import { HubSpotApi, SEARCH_CAP } from './client.ts';
import type { Metrics } from '../../metrics.ts';
import { FIVE_MINUTES, header, hmacSha256, sameSignature } from '../../signing.ts';
import { reword } from '../../errors.ts';
import type { PullOptions, PullPage, Source, SourceContact, WebhookRequest, WebhookVerdict } from '../../sources/source.ts';
import type { HubSpotConfig } from './config.ts';
import { ignorableStatusField } from '../../sources/status-field.ts';

/** HubSpot's Filter: every value is a string (the configuration converts numbers). */
type Filter = { propertyName: string; operator: string; value?: string; highValue?: string; values?: string[] };


const searchAnswer = z.object({
  total: z.number().optional(),
  results: z.array(z.object({ id: z.string(), properties: z.record(z.string(), z.unknown()).default({}) })),
  paging: z.object({ next: z.object({ after: z.string() }).optional() }).optional(),
});
const recordId = z.union([z.string(), z.number()]).transform(String);
const joinOrderAnswer = z.object({
  results: z.array(z.object({ recordId })),
  paging: z.object({ next: z.object({ after: z.string() }).optional() }).optional(),
});
const recordMembershipsAnswer = z.object({
  results: z.array(z.object({ recordId, recordListMemberships: z.array(z.object({ listId: recordId }).loose()) }).loose()),
});
/** The contacts object's id in the lists API. */
const CONTACTS_TYPE_ID = '0-1';
/** Records per batch read (contacts, list memberships) and ids per IN filter. */
const BATCH = 100;
/** Members per page of a list's join order: HubSpot's maximum, and on a full read two batch reads' worth. */
const MEMBERS_PAGE = 250;
const MEMBERS_PAGE_FULL = 2 * BATCH;
const batchAnswer = z.object({ results: z.array(z.object({ id: z.string(), properties: z.record(z.string(), z.unknown()).default({}) })) });

const events = z.array(z.object({
  eventId: z.union([z.number(), z.string()]),
  subscriptionType: z.string(),
  objectId: z.union([z.number(), z.string()]),
  occurredAt: z.number().optional(),
  propertyName: z.string().optional(),
}).loose()).min(1).max(1000);

/** Characters HubSpot decodes in the request URI before signing (its request-validation guide). */
const DECODED: Record<string, string> = { '%3A': ':', '%2F': '/', '%3F': '?', '%40': '@', '%21': '!', '%24': '$', '%27': "'", '%28': '(', '%29': ')', '%2A': '*', '%2C': ',', '%3B': ';' };

export function hubspotSignatureV3(secret: string, method: string, uri: string, body: Buffer | string, timestamp: string): Buffer {
  const decoded = uri.replace(/%(3A|2F|3F|40|21|24|27|28|29|2A|2C|3B)/gi, (m) => DECODED[m.toUpperCase()]!);
  return hmacSha256(secret, Buffer.concat([Buffer.from(`${method}${decoded}`), Buffer.isBuffer(body) ? body : Buffer.from(body), Buffer.from(timestamp)]));
}

export class HubSpotSource implements Source {
  readonly kind = 'hubspot';
  readonly pulls = true;
  private readonly config: HubSpotConfig;
  private readonly properties: string[];
  private readonly api: HubSpotApi;
  readonly compareEvery: number;
  /**
   * Whether a webhook's contacts can be read by id: always for a list or the whole CRM, and for filterGroups while
   * each group has room for one more filter (hs_object_id IN the ids; HubSpot takes 6 filters a group).
   */
  private readonly readsById: boolean;
  readonly readBatch = BATCH;
  /** The property the mirror writes a number's final status into, when the sync does not read it. */
  private readonly statusProperty: string | null;

  constructor(sync: SyncConfig, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics) {
    this.config = sync.source as HubSpotConfig;
    this.compareEvery = this.config.compareEvery;
    this.readsById = (this.config.selection.filterGroups ?? []).every((g) => g.filters.length < 6);
    const filtered = (this.config.selection.filterGroups ?? []).flatMap((g) => g.filters.map((f) => f.propertyName));
    this.statusProperty = ignorableStatusField(sync, [...filtered, ...this.config.properties]);
    // The calling window's evidence fields (hs_timezone, state, zip, country) are mapped fields too.
    const { timeZone, region, postalCode, country } = sync.mapping;
    this.properties = [...new Set([...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...sync.mapping.doNotCall.map((d) => d.field),
      ...[timeZone, region, postalCode, country].filter((f) => f !== undefined), ...this.config.properties, 'lastmodifieddate'])];
    this.api = new HubSpotApi(this.config, redis, keys, log, metrics);
  }

  private contact(r: { id: string; properties: Record<string, unknown> }): SourceContact {
    return { id: r.id, fields: { ...r.properties, id: r.id } };
  }

  private async search(filterGroups: { filters: Filter[] }[], sortBy: string, after: string | undefined, properties: string[], signal?: AbortSignal) {
    const body = await this.api.search('contacts', {
      filterGroups, sorts: [{ propertyName: sortBy, direction: 'ASCENDING' }], properties, limit: this.config.pageSize, ...(after ? { after } : {}),
    }, signal);
    return searchAnswer.parse(body);
  }

  /** The selection's filter groups, each with `extra` ANDed in (HubSpot ORs groups and ANDs the filters of one). */
  private groups(extra: Filter[], withSelection = true): { filters: Filter[] }[] {
    const selection = withSelection ? this.config.selection.filterGroups : undefined;
    if (!selection?.length) return [{ filters: extra }];
    return selection.map((g) => ({ filters: [...g.filters, ...extra] }));
  }

  /**
   * Reads every contact matching `base` in ascending order of `key`, restarting a new query from the last value
   * seen whenever the next page would pass the search cap. `key` is hs_object_id (unique: no ties at a restart)
   * for full reads, lastmodifieddate for incremental ones (ties at the restart point are read again and
   * deduplicated by id).
   */
  private async *scan(key: 'hs_object_id' | 'lastmodifieddate', from: string, inclusive: boolean, withSelection: boolean, properties: string[],
    signal?: AbortSignal): AsyncGenerator<{ results: { id: string; properties: Record<string, unknown> }[]; last: string }> {
    let start = from;
    let op = inclusive ? 'GTE' : 'GT';
    let seenAtStart = new Set<string>();
    for (;;) {
      let after: string | undefined;
      let lastValue = start;
      const atLast = new Set<string>();
      for (;;) {
        const page = await this.search(this.groups([{ propertyName: key, operator: op, value: start }], withSelection), key, after, properties, signal);
        const fresh = page.results.filter((r) => !seenAtStart.has(r.id));
        for (const r of page.results) {
          const v = key === 'hs_object_id' ? r.id : String(Date.parse(String(r.properties.lastmodifieddate ?? '')) || lastValue);
          if (v !== lastValue) { lastValue = v; atLast.clear(); }
          atLast.add(r.id);
        }
        if (fresh.length) yield { results: fresh, last: lastValue };
        const next = page.paging?.next?.after;
        if (!next) return;
        if (Number(next) + this.config.pageSize > SEARCH_CAP) break;
        after = next;
      }
      if (key === 'hs_object_id') {
        op = 'GT';
        seenAtStart = new Set();
      } else {
        // Restart at the last timestamp, inclusive: contacts sharing it are read again and skipped by id.
        if (lastValue === start && op === 'GTE' && atLast.size >= SEARCH_CAP) {
          throw new Error(`more than ${SEARCH_CAP} contacts share lastmodifieddate ${new Date(Number(start)).toISOString()}; run a full sync`);
        }
        op = 'GTE';
        seenAtStart = atLast;
      }
      start = lastValue;
    }
  }

  async *pull(options: PullOptions): AsyncGenerator<PullPage> {
    if (this.config.selection.listId) {
      yield* this.pullList(this.config.selection.listId, options);
      return;
    }
    if (options.full) {
      for await (const page of this.scan('hs_object_id', options.resume ?? '0', false, true, this.properties, options.signal)) {
        yield { contacts: page.results.map((r) => this.contact(r)) };
        await options.checkpoint(page.last);
      }
      return;
    }
    if (options.compare) {
      // The whole selection's ids; a search page costs the same with the properties, so contacts not held come along.
      for await (const page of this.scan('hs_object_id', '0', false, true, this.properties, options.signal)) {
        const ids = page.results.map((r) => r.id);
        const held = await options.known(ids);
        yield { contacts: page.results.filter((r) => !held.has(r.id)).map((r) => this.contact(r)), present: ids };
      }
    }
    const since = String(Math.max(0, (options.since ?? 0) - this.config.overlap));
    const selected = new Set<string>();
    for await (const page of this.scan('lastmodifieddate', since, true, true, this.properties, options.signal)) {
      for (const r of page.results) selected.add(r.id);
      yield { contacts: page.results.map((r) => this.contact(r)) };
    }
    if (!this.config.selection.filterGroups?.length) return;
    // A contact changed so that it no longer matches is not in the answer above: read which contacts changed at
    // all, and those outside the selection have left it.
    for await (const page of this.scan('lastmodifieddate', since, true, false, ['hs_object_id'], options.signal)) {
      const left = page.results.map((r) => r.id).filter((id) => !selected.has(id));
      if (left.length) yield { contacts: [], left };
    }
  }

  /**
   * A list's members. Full reads and comparisons read the membership in join order from the start (the ids are the
   * comparison; contacts are read for members not held, or for all on a full read); incremental runs read only the
   * members who joined after the last run's cursor, then the contacts changed since the last run, checking the list
   * memberships of those held (a dynamic list drops a contact whose change no longer matches it).
   */
  private async *pullList(listId: string, options: PullOptions): AsyncGenerator<PullPage> {
    const everyone = options.full || options.compare;
    let after: string | undefined = options.full ? options.resume ?? undefined : everyone ? undefined : options.position ?? undefined;
    for (;;) {
      const body = joinOrderAnswer.parse(await this.api.request('GET', this.api.lists(`/${listId}/memberships/join-order`), {
        searchParams: { limit: String(options.full ? MEMBERS_PAGE_FULL : MEMBERS_PAGE), ...(after ? { after } : {}) },
      }, options.signal).catch((err: unknown) => {
        throw reword(err, 404, (d) => `HubSpot has no list ${listId} (source.selection.listId ${listId}) this token can read (${d})`);
      }));
      const ids = body.results.map((r) => r.recordId);
      let wanted = ids;
      if (!options.full) {
        const held = await options.known(ids);
        wanted = ids.filter((id) => !held.has(id));
      }
      for (let i = 0; i < wanted.length; i += BATCH) yield { contacts: await this.batchRead(wanted.slice(i, i + BATCH), options.signal) };
      if (everyone && ids.length) yield { contacts: [], present: ids };
      const next = body.paging?.next?.after;
      // The last page is read again by the next run (its cursor is kept): members who join later come after it.
      if (!next) break;
      after = next;
      if (options.full) await options.checkpoint(next);
      await options.savePosition(next);
    }
    if (options.full) return;
    const since = String(Math.max(0, (options.since ?? 0) - this.config.overlap));
    for await (const page of this.scan('lastmodifieddate', since, true, false, this.properties, options.signal)) {
      const held = await options.known(page.results.map((r) => r.id));
      // Contacts not held that joined the list are in its join order (above); the others are not ours.
      const check = page.results.filter((r) => held.has(r.id));
      if (!check.length) continue;
      const members = await this.listMembers(listId, check.map((r) => r.id), options.signal);
      yield { contacts: check.filter((r) => members.has(r.id)).map((r) => this.contact(r)), left: check.filter((r) => !members.has(r.id)).map((r) => r.id) };
    }
  }

  /** Contacts by id (batch read, at most 100); ids not found (archived) are missing from the answer. */
  private async batchRead(ids: string[], signal?: AbortSignal): Promise<SourceContact[]> {
    if (!ids.length) return [];
    const body = batchAnswer.parse(await this.api.request('POST', `${this.api.objects('contacts')}/batch/read`, {
      json: { inputs: ids.map((id) => ({ id })), properties: this.properties },
    }, signal));
    return body.results.map((r) => this.contact(r));
  }

  /** Which of these contacts (at most 100) are members of the list: HubSpot's batch read of records' list memberships. */
  private async listMembers(listId: string, ids: string[], signal?: AbortSignal): Promise<Set<string>> {
    const members = new Set<string>();
    for (let i = 0; i < ids.length; i += BATCH) {
      const body = recordMembershipsAnswer.parse(await this.api.request('POST', this.api.lists('/records/memberships/batch/read'), {
        json: { inputs: ids.slice(i, i + BATCH).map((id) => ({ objectTypeId: CONTACTS_TYPE_ID, recordId: id })) },
      }, signal));
      for (const r of body.results) if (r.recordListMemberships.some((m) => m.listId === listId)) members.add(r.recordId);
    }
    return members;
  }

  /** A webhook's contacts by id: members of the selection come back as contacts, the others as left. */
  async *read(ids: string[], signal?: AbortSignal): AsyncGenerator<PullPage> {
    const { listId, filterGroups } = this.config.selection;
    for (let i = 0; i < ids.length; i += BATCH) {
      const chunk = ids.slice(i, i + BATCH);
      let contacts: SourceContact[];
      if (listId) {
        const members = await this.listMembers(listId, chunk, signal);
        contacts = await this.batchRead(chunk.filter((id) => members.has(id)), signal);
      } else if (filterGroups?.length) {
        const page = await this.search(this.groups([{ propertyName: 'hs_object_id', operator: 'IN', values: chunk }]), 'hs_object_id', undefined, this.properties, signal);
        contacts = page.results.map((r) => this.contact(r));
      } else {
        contacts = await this.batchRead(chunk, signal);
      }
      const found = new Set(contacts.map((c) => c.id));
      yield { contacts, left: chunk.filter((id) => !found.has(id)) };
    }
  }

  verifyWebhook(req: WebhookRequest): WebhookVerdict {
    const secret = this.config.clientSecret;
    if (!secret) return { ok: false, status: 401, reason: 'this sync has no clientSecret: HubSpot webhooks are refused' };
    const signature = header(req, 'x-hubspot-signature-v3');
    const timestamp = header(req, 'x-hubspot-request-timestamp');
    if (!signature || !timestamp) return { ok: false, status: 401, reason: 'missing X-HubSpot-Signature-v3 or X-HubSpot-Request-Timestamp' };
    const ts = Number(timestamp);
    if (!Number.isFinite(ts) || Math.abs(req.now - ts) > FIVE_MINUTES) return { ok: false, status: 401, reason: 'timestamp older than 5 minutes (or not a timestamp)' };
    // HubSpot sends the HMAC in standard base64; any other spelling of it is refused, so a replay cannot be respelled new.
    const expected = hubspotSignatureV3(secret, req.method, req.url, req.rawBody, timestamp).toString('base64');
    if (!sameSignature(signature, expected)) return { ok: false, status: 401, reason: 'signature does not match' };
    let parsed;
    try {
      parsed = events.safeParse(JSON.parse(req.rawBody.toString('utf8')));
    } catch {
      return { ok: false, status: 400, reason: 'body is not JSON' };
    }
    if (!parsed.success) return { ok: false, status: 400, reason: `not a HubSpot event array: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}` };
    const deletion = (e: { subscriptionType: string }) => /\.deletion$|\.privacyDeletion$/.test(e.subscriptionType);
    // A change of only the status property (the mirror's own write of a final status) changes nothing the sync reads.
    const ownWrite = (e: { subscriptionType: string; propertyName?: string }) =>
      this.statusProperty !== null && /\.propertyChange$/.test(e.subscriptionType) && e.propertyName === this.statusProperty;
    const changed = [...new Set(parsed.data.filter((e) => !deletion(e) && !ownWrite(e)).map((e) => String(e.objectId)).filter((id) => /^\d{1,20}$/.test(id)))];
    // Contact events name the contacts to read; another object's event (a company's) says only that something changed.
    const byId = this.readsById && parsed.data.every((e) => e.subscriptionType.startsWith('contact.'));
    return {
      ok: true, eventIds: parsed.data.map((e) => String(e.eventId)), replayKey: expected, contacts: [],
      deleted: parsed.data.filter(deletion).map((e) => String(e.objectId)),
      pull: !byId && parsed.data.some((e) => !deletion(e) && !ownWrite(e)), ...(byId && changed.length ? { read: changed } : {}),
    };
  }
}
