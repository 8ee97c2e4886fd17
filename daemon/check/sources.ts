// `check` on the sources that are not CRMs: a CSV file's header holds every column the mapping names (a missing one is
// named with the columns that are close); a generic webhook's fields arrive with each delivery and cannot be checked.
import { open } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { SyncConfig } from '../config.ts';
import { judgeFields, mappedFields, type CrmField } from './fields.ts';
import { fail, ok, skip, type CheckResult } from './result.ts';

/** The first bytes of the file hold its header row (64 KiB: thousands of columns). */
const HEAD_BYTES = 65_536;

export async function checkCsvSource(sync: SyncConfig): Promise<CheckResult[]> {
  const source = sync.source as Extract<SyncConfig['source'], { type: 'csv' }>;
  let head: string;
  try {
    const file = await open(source.path, 'r');
    try {
      const { buffer, bytesRead } = await file.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
      head = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  } catch (err) {
    return [fail(sync.id, 'source.file', `source.path ${source.path} cannot be read: ${(err as Error).message}`, 'set source.path to the CSV file (readable by the daemon\'s user)')];
  }
  const firstLine = head.replace(/^\uFEFF/, '').split(/\r?\n/)[0] ?? '';
  let columns: string[];
  try {
    columns = ((parse(firstLine, { delimiter: source.delimiter, relax_column_count: true, trim: true }) as string[][])[0] ?? []);
  } catch (err) {
    return [fail(sync.id, 'source.file', `the header row of ${source.path} is not CSV with delimiter "${source.delimiter}": ${(err as Error).message}`, 'set source.delimiter to the file\'s delimiter')];
  }
  const catalog: CrmField[] = columns.map((name) => ({ name, type: 'column' }));
  const fields = [{ field: sync.mapping.id, use: 'variable' as const, setting: 'mapping.id' }, ...mappedFields(sync)];
  const results = judgeFields(sync, fields, catalog, { noun: 'CSV column', where: `the header row of ${source.path}`, problem: () => null });
  return [ok(sync.id, 'source.file', `${source.path}: ${columns.length} columns in its header row`), ...results];
}

export function checkWebhookSource(sync: SyncConfig): CheckResult[] {
  return [skip(sync.id, 'crm.fields', 'a generic webhook source: its fields arrive with each delivery, so the mapping cannot be checked before one comes (send every mapped field, Do Not Call included, with each contact)')];
}
