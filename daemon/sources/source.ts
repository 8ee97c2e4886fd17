// What every source (one module per CRM) gives the sync: pages of contacts to pull, and webhook verification.

/** A contact as a source delivers it: its id in the CRM and its fields (flat; values as the CRM gives them). */
export interface SourceContact {
  id: string;
  fields: Record<string, unknown>;
  /** Where it came from in a file (CSV), for error reports. */
  line?: number;
}

export interface PullOptions {
  /** Read the whole selection (a first run, `sync --full`), else what changed since `since`. */
  full: boolean;
  /**
   * Besides what changed, list the whole selection's ids (pages with `present`): whoever is held and not present
   * has left. The scheduled comparison that finds contacts removed or deleted without a change or a webhook.
   */
  compare: boolean;
  /** Start of the last complete run (ms): incremental reads start there, less the source's overlap. */
  since: number | null;
  /** Where an interrupted full read of this run stopped (from `checkpoint`). */
  resume: string | null;
  /** Remembers how far the read got, once the pages before it are applied. */
  checkpoint(position: string): Promise<void>;
  /** Which of these contact ids the sync already holds. */
  known(ids: string[]): Promise<Set<string>>;
  /** The source's own position kept between runs (a HubSpot list's join-order cursor), null before the first. */
  position: string | null;
  /** Keeps `position` for the next run; called once the pages before it are applied. */
  savePosition(position: string): Promise<void>;
  signal?: AbortSignal;
}

export interface PullPage {
  contacts: SourceContact[];
  /** Ids of contacts that changed but are no longer in the selection. */
  left?: string[];
  /** Ids in the selection (a full read or a comparison): every contact held and not present by the run's end has left. */
  present?: string[];
  /** Rows the source refused or could not read (CSV): line and reason, and the contact id and field when known. */
  errors?: { line: number; reason: string; contactId?: string; field?: string; value?: string }[];
}

export interface WebhookRequest {
  method: string;
  /** The URL the sender called, as it signed it (the daemon's public URL + path and query). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
  now: number;
}

/** An answer body a sender expects besides the status (Salesforce's SOAP Ack or fault); without it, JSON. */
export interface WebhookReply { contentType: string; body: string }

export type WebhookVerdict =
  | {
    ok: true;
    /** Ids of the events delivered: a delivery whose ids were all seen is acknowledged and ignored. */
    eventIds: string[];
    /** What makes a delivery unique (its signature): the same one twice is a replay. */
    replayKey: string | null;
    /** Contacts carried in the body (generic webhooks), and deletions. */
    contacts: SourceContact[];
    deleted: string[];
    /** Whether the source should be read (an event said something changed). */
    pull: boolean;
    /** Ids of contacts the events named, to be read by id (`Source.read`) instead of a pull. */
    read?: string[];
    /**
     * Why no run may be queued now (the CRM's allowance is spent): what the delivery names waits in the inbox for
     * the next scheduled run, which drains it first.
     */
    hold?: string;
    reply?: WebhookReply;
  }
  | { ok: false; status: 400 | 401 | 413; reason: string; reply?: WebhookReply };

export interface Source {
  readonly kind: string;
  /** Pages of the selection; contacts must carry the fields the mapping names. */
  pull(options: PullOptions): AsyncGenerator<PullPage>;
  /** Whether pulling reads the CRM (webhook sources only drain what webhooks delivered). */
  readonly pulls: boolean;
  verifyWebhook(req: WebhookRequest): WebhookVerdict;
  /**
   * Reads these contacts by id: those in the selection come back as contacts, the others as `left`. Sources that
   * have it are sent webhook events' ids instead of a pull, so a webhook costs what it names, not the selection.
   */
  read?(ids: string[], signal?: AbortSignal): AsyncGenerator<PullPage>;
  /** Ids `read` takes in one CRM request: a burst of webhooks is read in batches of this many (default 100). */
  readonly readBatch?: number;
  /** How often the whole selection is compared with what the daemon holds (ms); undefined: never. */
  readonly compareEvery?: number;
}
