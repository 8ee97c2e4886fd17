// Campaign rows: create, read, list with the §4.2 query, change state, delete, duplicate.
import { randomUUID } from 'node:crypto';
import type { CampaignState, CampaignType, DialerMode, NumberStatus } from '../../api/enums.ts';
import type { ListQuery } from '../../api/list-query.ts';
import type { Campaign, DialerSettings } from '../../api/records.ts';
import type { Database } from './db.ts';
import { limitOffset, orderBy, where, type ListTable } from './list-sql.ts';

export interface CampaignRow {
  pk: number; id: string; account_pk: number; name: string; state: CampaignState; type: CampaignType;
  phone_system_id: string | null; extension_id: string | null; dialer_mode: DialerMode; dialer_settings: string; tag_ids: string;
  start_date: string | null; end_date: string | null; started_at: string | null; ended_at: string | null;
  callflow_ids: string; human_callflow_id: string | null; machine_callflow_id: string | null;
  webhook_endpoint_id: string | null; is_archived: number; numbers_count: number; created_at: string;
}

export interface NewCampaign {
  name: string;
  state: CampaignState;
  type: CampaignType;
  phoneSystemId: string | null;
  extensionId: string | null;
  dialerMode: DialerMode;
  dialerSettings: DialerSettings;
  tagIds: string[];
  startDate: string | null;
  endDate: string | null;
  startedAt: string | null;
  endedAt: string | null;
  callflowIds: string[];
  humanAnswerCallflowId: string | null;
  answeringMachineCallflowId: string | null;
  webhookEndpointId: string | null;
  isArchived: boolean;
}

const sorted = (col: string) => (dir: 'ASC' | 'DESC') => `${col} ${dir}, pk ${dir}`;

const TABLE: ListTable = {
  columns: {
    id: { sql: 'id', type: 'text' },
    name: { sql: 'name', type: 'text' },
    phoneSystemId: { sql: 'phone_system_id', type: 'text' },
    extensionId: { sql: 'extension_id', type: 'text' },
    'dialer.mode': { sql: 'dialer_mode', type: 'text' },
    tagIds: { sql: 'tag_ids', type: 'json-array' },
    state: { sql: 'state', type: 'text' },
    type: { sql: 'type', type: 'text' },
    startDate: { sql: 'start_date', type: 'utc' },
    endDate: { sql: 'end_date', type: 'utc' },
    startedAt: { sql: 'started_at', type: 'utc' },
    endedAt: { sql: 'ended_at', type: 'utc' },
    callflowIds: { sql: 'callflow_ids', type: 'json-array' },
    'callBehavior.humanAnswerCallflowId': { sql: 'human_callflow_id', type: 'text' },
    'callBehavior.answeringMachineCallflowId': { sql: 'machine_callflow_id', type: 'text' },
    webhookEndpointId: { sql: 'webhook_endpoint_id', type: 'text' },
    isArchived: { sql: 'is_archived', type: 'boolean' },
  },
  orderBy: {
    name: sorted('name'), state: sorted('state'), type: sorted('type'), startDate: sorted('start_date'),
    endDate: sorted('end_date'), numbersCount: sorted('numbers_count'), startedAt: sorted('started_at'), endedAt: sorted('ended_at'),
  },
  defaultOrder: 'pk ASC',
};

export class Campaigns {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  create(accountPk: number, c: NewCampaign, now: Date): CampaignRow {
    const { lastInsertRowid } = this.db.run(
      `INSERT INTO campaigns(id, account_pk, name, state, type, phone_system_id, extension_id, dialer_mode, dialer_settings,
        tag_ids, start_date, end_date, started_at, ended_at, callflow_ids, human_callflow_id, machine_callflow_id,
        webhook_endpoint_id, is_archived, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      randomUUID(), accountPk, c.name, c.state, c.type, c.phoneSystemId, c.extensionId, c.dialerMode,
      JSON.stringify(c.dialerSettings), JSON.stringify(c.tagIds),
      c.startDate, c.endDate, c.startedAt, c.endedAt, JSON.stringify(c.callflowIds), c.humanAnswerCallflowId,
      c.answeringMachineCallflowId, c.webhookEndpointId, Number(c.isArchived), now.toISOString());
    return this.byPk(lastInsertRowid)!;
  }

  byPk(pk: number): CampaignRow | undefined {
    return this.db.get<CampaignRow>('SELECT * FROM campaigns WHERE pk = ?', pk);
  }

  byId(accountPk: number, id: string): CampaignRow | undefined {
    return this.db.get<CampaignRow>('SELECT * FROM campaigns WHERE id = ? AND account_pk = ?', id, accountPk);
  }

  list(accountPk: number, query: ListQuery, timeZone: string): { rows: CampaignRow[]; total: number } {
    const w = where(TABLE, query.conditions, timeZone);
    const cond = ['account_pk = ?', ...w.terms].join(' AND ');
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM campaigns WHERE ${cond}`, accountPk, ...w.params)!.n;
    const rows = this.db.all<CampaignRow>(
      `SELECT * FROM campaigns WHERE ${cond} ORDER BY ${orderBy(TABLE, query.sort)} ${limitOffset(query.range)}`,
      accountPk, ...w.params);
    return { rows, total };
  }

  setState(pk: number, state: CampaignState, stamps: { startedAt?: string; endedAt?: string }): void {
    this.db.run(
      `UPDATE campaigns SET state = ?, started_at = coalesce(started_at, ?), ended_at = coalesce(ended_at, ?) WHERE pk = ?`,
      state, stamps.startedAt ?? null, stamps.endedAt ?? null, pk);
  }

  /** Names in the account starting with `base (`: what a copy's incrementing suffix is chosen from. */
  namesLike(accountPk: number, base: string): string[] {
    return this.db.all<{ name: string }>(
      `SELECT name FROM campaigns WHERE account_pk = ? AND substr(name, 1, ?) = ?`, accountPk, base.length + 2, `${base} (`)
      .map((r) => r.name);
  }

  /** Deletes campaigns with their numbers, counters and call details, in one transaction. */
  delete(pks: number[]): void {
    this.db.transaction(() => {
      for (const pk of pks) {
        this.db.run('DELETE FROM call_details WHERE campaign_pk = ?', pk);
        this.db.run('DELETE FROM numbers WHERE campaign_pk = ?', pk);
        this.db.run('DELETE FROM number_counts WHERE campaign_pk = ?', pk);
        this.db.run('DELETE FROM campaigns WHERE pk = ?', pk);
      }
    });
  }

  /** A Draft copy with a new id and name; numbers of the chosen statuses copied as NotContacted. */
  duplicate(source: CampaignRow, name: string, numberStatuses: NumberStatus[] | null, now: Date): CampaignRow {
    return this.db.transaction(() => {
      const copy = this.create(source.account_pk, {
        ...fromRow(source), name, state: 'Draft', startedAt: null, endedAt: null,
      }, now);
      if (numberStatuses && numberStatuses.length) {
        const { changes } = this.db.run(
          `INSERT INTO numbers(campaign_pk, number, status, attempts, var_names, var_values)
           SELECT ?, number, 'NotContacted', 0, var_names, var_values FROM numbers
           WHERE campaign_pk = ? AND status IN (${numberStatuses.map(() => '?').join(',')}) ORDER BY id`,
          copy.pk, source.pk, ...numberStatuses);
        if (changes) {
          this.db.run(`INSERT INTO number_counts(campaign_pk, status, attempts, n) VALUES (?, 'NotContacted', 0, ?)`, copy.pk, changes);
          this.db.run('UPDATE campaigns SET numbers_count = ? WHERE pk = ?', changes, copy.pk);
        }
      }
      return this.byPk(copy.pk)!;
    });
  }
}

function fromRow(r: CampaignRow): NewCampaign {
  return {
    name: r.name, state: r.state, type: r.type, phoneSystemId: r.phone_system_id, extensionId: r.extension_id,
    dialerMode: r.dialer_mode, dialerSettings: dialerSettings(r), tagIds: JSON.parse(r.tag_ids) as string[],
    startDate: r.start_date, endDate: r.end_date,
    startedAt: r.started_at, endedAt: r.ended_at, callflowIds: JSON.parse(r.callflow_ids) as string[],
    humanAnswerCallflowId: r.human_callflow_id, answeringMachineCallflowId: r.machine_callflow_id,
    webhookEndpointId: r.webhook_endpoint_id, isArchived: r.is_archived === 1,
  };
}

export function campaignRecord(r: CampaignRow): Campaign {
  return {
    id: r.id, name: r.name, state: r.state, type: r.type, phoneSystemId: r.phone_system_id, extensionId: r.extension_id,
    dialer: { mode: r.dialer_mode, ...dialerSettings(r) }, tagIds: JSON.parse(r.tag_ids) as string[], startDate: r.start_date, endDate: r.end_date,
    startedAt: r.started_at, endedAt: r.ended_at, callflowIds: JSON.parse(r.callflow_ids) as string[],
    callBehavior: { humanAnswerCallflowId: r.human_callflow_id, answeringMachineCallflowId: r.machine_callflow_id },
    webhookEndpointId: r.webhook_endpoint_id, isArchived: r.is_archived === 1, numbersCount: r.numbers_count,
    createdAt: r.created_at,
  };
}

export function dialerSettings(r: CampaignRow): DialerSettings {
  return JSON.parse(r.dialer_settings) as DialerSettings;
}
