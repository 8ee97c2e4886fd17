// Call-detail records (§2.3): one per call attempt, written by the dialer, listed by the report of §4.10.
import type { ListQuery } from '../../api/list-query.ts';
import type { CallDetail } from '../../api/records.ts';
import type { Database } from './db.ts';
import { limitOffset, orderBy, where, type ListTable } from './list-sql.ts';

export interface CallDetailRow {
  id: number; campaign_pk: number; number_id: number; number: string; attempt: number;
  started_at_local: string; answered_at_local: string | null; ended_at_local: string;
  ring_result: CallDetail['ringResult']; answer_type: CallDetail['answerType']; sip_response_code: number;
  end_type: CallDetail['endType']; queue_id: string | null; outcome: CallDetail['outcome'];
}

const sorted = (col: string) => (dir: 'ASC' | 'DESC') => `${col} ${dir}, id ${dir}`;

const TABLE: ListTable = {
  columns: {
    id: { sql: 'id', type: 'integer' },
    number: { sql: 'number', type: 'phone' },
    attempt: { sql: 'attempt', type: 'integer' },
    startedAtLocal: { sql: 'started_at_local', type: 'local' },
    answeredAtLocal: { sql: 'answered_at_local', type: 'local' },
    endedAtLocal: { sql: 'ended_at_local', type: 'local' },
    ringResult: { sql: 'ring_result', type: 'text' },
    answerType: { sql: 'answer_type', type: 'text' },
    sipResponseCode: { sql: 'sip_response_code', type: 'integer' },
    endType: { sql: 'end_type', type: 'text' },
    queueId: { sql: 'queue_id', type: 'text' },
    outcome: { sql: 'outcome', type: 'text' },
  },
  orderBy: {
    number: (dir) => `number ${dir}, attempt ${dir}, id ${dir}`,
    attempt: sorted('attempt'), startedAtLocal: sorted('started_at_local'), answeredAtLocal: sorted('answered_at_local'),
    endedAtLocal: sorted('ended_at_local'), ringResult: sorted('ring_result'), answerType: sorted('answer_type'),
    sipResponseCode: sorted('sip_response_code'), endType: sorted('end_type'), outcome: sorted('outcome'),
  },
  defaultOrder: 'id ASC',
};

const INSERT = `INSERT INTO call_details(campaign_pk, number_id, number, attempt, started_at_local, answered_at_local, ended_at_local,
  ring_result, answer_type, sip_response_code, end_type, queue_id, outcome) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`;

export type NewCallDetail = Omit<CallDetail, 'id' | 'numberId'> & { numberId: number };

/** How many calls a campaign made and how many of them were answered. */
export interface CallTally { calls: number; answered: number }

export class CallDetails {
  private readonly db: Database;
  /**
   * Tallies by campaign id (never reused, unlike a deleted campaign's pk), with the last record id counted: records
   * are only ever appended (or go with their campaign), so a refresh counts just the records written since, not a
   * campaign's million calls on every look.
   */
  private readonly tallies = new Map<string, CallTally & { lastId: number }>();
  constructor(db: Database) { this.db = db; }

  tally(campaign: { pk: number; id: string }): CallTally {
    const t = this.tallies.get(campaign.id) ?? { calls: 0, answered: 0, lastId: 0 };
    const r = this.db.get<{ calls: number; answered: number; last: number | null }>(
      `SELECT count(*) AS calls, count(answered_at_local) AS answered, max(id) AS last FROM call_details
       WHERE id > ? AND campaign_pk = ?`, t.lastId, campaign.pk)!;
    const next = { calls: t.calls + r.calls, answered: t.answered + r.answered, lastId: r.last ?? t.lastId };
    this.tallies.set(campaign.id, next);
    return { calls: next.calls, answered: next.answered };
  }

  list(campaignPk: number, query: ListQuery, timeZone: string): { rows: CallDetailRow[]; total: number } {
    const w = where(TABLE, query.conditions, timeZone);
    const cond = ['campaign_pk = ?', ...w.terms].join(' AND ');
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM call_details WHERE ${cond}`, campaignPk, ...w.params)!.n;
    const rows = this.db.all<CallDetailRow>(
      `SELECT * FROM call_details WHERE ${cond} ORDER BY ${orderBy(TABLE, query.sort)} ${limitOffset(query.range)}`,
      campaignPk, ...w.params);
    return { rows, total };
  }

  /** The campaign's newest records, newest first: read backwards off the campaign's index, with nothing to count. */
  newest(campaignPk: number, limit: number): CallDetailRow[] {
    return this.db.all<CallDetailRow>(
      'SELECT * FROM call_details INDEXED BY call_details_by_campaign WHERE campaign_pk = ? ORDER BY id DESC LIMIT ?', campaignPk, limit);
  }

  /** One record (one per call, the dialer's hottest write): its id. */
  insert(campaignPk: number, d: NewCallDetail): number {
    const r = this.db.statement(INSERT).run(campaignPk, d.numberId, d.number, d.attempt, d.startedAtLocal, d.answeredAtLocal,
      d.endedAtLocal, d.ringResult, d.answerType, d.sipResponseCode, d.endType, d.queueId, d.outcome);
    return Number(r.lastInsertRowid);
  }
}

export function callDetailRecord(r: CallDetailRow): CallDetail {
  return {
    id: String(r.id), numberId: String(r.number_id), number: r.number, attempt: r.attempt,
    startedAtLocal: r.started_at_local, answeredAtLocal: r.answered_at_local, endedAtLocal: r.ended_at_local,
    ringResult: r.ring_result, answerType: r.answer_type, sipResponseCode: r.sip_response_code, endType: r.end_type,
    queueId: r.queue_id, outcome: r.outcome,
  };
}
