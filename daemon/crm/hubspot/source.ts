// HubSpot: contacts through the CRM search API (date-versioned paths), webhooks verified with X-HubSpot-Signature-v3.
import type { RedisClient } from '../../state/connection.ts';
import type { Logger } from 'pino';
import type { DaemonKeys } from '../../state/keys.ts';
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import { HubSpotApi, SEARCH_CAP } from './client.ts';
import type { Metrics } from '../../metrics.ts';
import { FIVE_MINUTES, header, hmacSha256, sameBytes } from '../../signing.ts';
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
const membershipAnswer = z.object({
  results: z.array(z.object({ recordId: z.union([z.string(), z.number()]) })),
  paging: z.object({ next: z.object({ after: z.string() }).optional() }).optional(),
});
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
  /** The property the mirror writes a number's final status into, when the sync does not read it. */
  private readonly statusProperty: string | null;

  constructor(sync: SyncConfig, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics) {
    this.config = sync.source as HubSpotConfig;
    const filtered = (this.config.selection.filterGroups ?? []).flatMap((g) => g.filters.map((f) => f.propertyName));
    this.statusProperty = ignorableStatusField(sync, [...filtered, ...this.config.properties]);
    this.properties = [...new Set([...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...this.config.properties, 'lastmodifieddate'])];
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
      yield* this.pullList(options);
      return;
    }
    if (options.full) {
      for await (const page of this.scan('hs_object_id', options.resume ?? '0', false, true, this.properties, options.signal)) {
        yield { contacts: page.results.map((r) => this.contact(r)) };
        await options.checkpoint(page.last);
      }
      return;
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

  /** A list's members: every run reads the membership (ids); contacts are read for new members and for changes. */
  private async *pullList(options: PullOptions): AsyncGenerator<PullPage> {
    const c = this.config;
    const members = new Set<string>();
    let after: string | undefined;
    do {
      const body = membershipAnswer.parse(await this.api.request('GET', this.api.lists(`/${c.selection.listId}/memberships`), {
        searchParams: { limit: '250', ...(after ? { after } : {}) },
      }, options.signal).catch((err: unknown) => {
        throw reword(err, 404, (d) => `HubSpot has no list ${c.selection.listId} (source.selection.listId ${c.selection.listId}) this token can read (${d})`);
      }));
      for (const r of body.results) members.add(String(r.recordId));
      after = body.paging?.next?.after;
    } while (after);
    // Members changed since the last run (or all, on a full read) are read in batches of 100.
    let wanted: string[];
    if (options.full || options.since === null) {
      wanted = [...members];
    } else {
      const changed = new Set<string>();
      const since = String(Math.max(0, options.since - c.overlap));
      for await (const page of this.scan('lastmodifieddate', since, true, false, ['hs_object_id'], options.signal)) {
        for (const r of page.results) changed.add(r.id);
      }
      const all = [...members];
      const known = new Set<string>();
      for (let i = 0; i < all.length; i += 1000) for (const id of await options.known(all.slice(i, i + 1000))) known.add(id);
      wanted = all.filter((id) => changed.has(id) || !known.has(id));
    }
    for (let i = 0; i < wanted.length; i += 100) {
      const body = batchAnswer.parse(await this.api.request('POST', `${this.api.objects('contacts')}/batch/read`, {
        json: { inputs: wanted.slice(i, i + 100).map((id) => ({ id })), properties: this.properties },
      }, options.signal));
      yield { contacts: body.results.map((r) => this.contact(r)) };
    }
    yield { contacts: [], members };
  }

  verifyWebhook(req: WebhookRequest): WebhookVerdict {
    const secret = this.config.clientSecret;
    if (!secret) return { ok: false, status: 401, reason: 'this sync has no clientSecret: HubSpot webhooks are refused' };
    const signature = header(req, 'x-hubspot-signature-v3');
    const timestamp = header(req, 'x-hubspot-request-timestamp');
    if (!signature || !timestamp) return { ok: false, status: 401, reason: 'missing X-HubSpot-Signature-v3 or X-HubSpot-Request-Timestamp' };
    const ts = Number(timestamp);
    if (!Number.isFinite(ts) || Math.abs(req.now - ts) > FIVE_MINUTES) return { ok: false, status: 401, reason: 'timestamp older than 5 minutes (or not a timestamp)' };
    const expected = hubspotSignatureV3(secret, req.method, req.url, req.rawBody, timestamp);
    if (!sameBytes(Buffer.from(signature, 'base64'), expected)) return { ok: false, status: 401, reason: 'signature does not match' };
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
    return {
      ok: true, eventIds: parsed.data.map((e) => String(e.eventId)), replayKey: signature, contacts: [],
      deleted: parsed.data.filter(deletion).map((e) => String(e.objectId)),
      pull: parsed.data.some((e) => !deletion(e) && !ownWrite(e)),
    };
  }
}
