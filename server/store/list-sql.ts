// Turns a decoded list query (api/list-query.ts) into SQL: WHERE terms, ORDER BY and LIMIT/OFFSET.
import type { Condition, ListQuery } from '../../api/list-query.ts';
import { formatUtc, timestampToUtcMillis, type ParsedTimestamp } from '../../api/timestamps.ts';
import type { SQLInputValue } from 'node:sqlite';
import { localWallTime } from '../time-zones.ts';

export interface Column {
  sql: string;
  /** How filter values compare with the stored value. */
  type: 'text' | 'integer' | 'boolean' | 'utc' | 'local' | 'phone' | 'json-array';
}

export interface ListTable {
  columns: Record<string, Column>;
  /** ORDER BY for each sort field (with the tiebreak that makes the order total and index-friendly). */
  orderBy: Record<string, (dir: 'ASC' | 'DESC') => string>;
  defaultOrder: string;
}

export interface Where {
  terms: string[];
  params: SQLInputValue[];
}

export function where(table: ListTable, conditions: Condition[], timeZone: string): Where {
  const terms: string[] = [];
  const params: SQLInputValue[] = [];
  for (const c of conditions) {
    const col = table.columns[c.field];
    if (!col) throw new Error(`no column for filter field ${c.field}`);
    switch (c.op) {
      case 'eq':
        terms.push(`${col.sql} = ?`);
        params.push(col.type === 'phone' ? normalizePhoneFilter(String(c.value)) : typeof c.value === 'boolean' ? Number(c.value) : c.value);
        break;
      case 'in': {
        // Ids are strings in the API; an integer id column matches only the decimal ones.
        const values = col.type === 'integer' ? c.value.filter((v) => /^\d{1,15}$/.test(v)).map(Number) : c.value;
        terms.push(values.length ? `${col.sql} IN (${values.map(() => '?').join(',')})` : '0');
        params.push(...values);
        break;
      }
      case 'overlaps':
        terms.push(`EXISTS (SELECT 1 FROM json_each(${col.sql}) WHERE value IN (${c.value.map(() => '?').join(',')}))`);
        params.push(...c.value);
        break;
      case 'callflow':
        terms.push(`(human_callflow_id = ? OR machine_callflow_id = ? OR EXISTS (SELECT 1 FROM json_each(${col.sql}) WHERE value = ?))`);
        params.push(c.value, c.value, c.value);
        break;
      case 'contains': {
        const digits = c.value.replace(/\D/g, '');
        terms.push(`${col.sql} LIKE ? ESCAPE '\\'`);
        params.push(`%${col.type === 'phone' ? digits : escapeLike(c.value)}%`);
        break;
      }
      case 'prefix': {
        const prefix = col.type === 'phone' ? normalizePhoneFilter(c.value) : c.value;
        terms.push(`${col.sql} >= ? AND ${col.sql} < ?`);
        params.push(prefix, prefix + '\uffff');
        break;
      }
      default: {
        const op = { gte: '>=', gt: '>', lte: '<=', lt: '<' }[c.op];
        terms.push(`${col.sql} ${op} ?`);
        params.push(typeof c.value === 'number' ? c.value : comparable(c.value, col.type, timeZone));
      }
    }
  }
  return { terms, params };
}

/** Stored campaign times are UTC `…Z`; report times are the account's wall clock. */
function comparable(t: ParsedTimestamp, type: Column['type'], timeZone: string): string {
  if (type === 'local') return t.offsetMinutes === null ? t.wall : localWallTime(timestampToUtcMillis(t), timeZone);
  return formatUtc(timestampToUtcMillis(t));
}

/** Phone numbers are stored in E.164; a filter value may come without the plus or with spacing. */
export function normalizePhoneFilter(value: string): string {
  const digits = value.replace(/[\s().-]/g, '');
  return /^\d/.test(digits) ? `+${digits}` : digits;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (ch) => `\\${ch}`);
}

export function orderBy(table: ListTable, sort: ListQuery['sort']): string {
  if (!sort) return table.defaultOrder;
  const f = table.orderBy[sort.field];
  if (!f) throw new Error(`no order for sort field ${sort.field}`);
  return f(sort.direction);
}

export function limitOffset(range: [number, number]): string {
  return `LIMIT ${range[1] - range[0] + 1} OFFSET ${range[0]}`;
}
