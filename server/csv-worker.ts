// Worker thread body: parses uploaded CSV files and checks their phone numbers, so the event loop only inserts rows.
//
// Each upload is a session: the main thread sends the file's chunks as they arrive; this thread answers with
// batches of rows ready to insert (the number's check, the variables as JSON text) and the rows it rejected.
import { parentPort } from 'node:worker_threads';
import { parse, type CsvError, type Parser } from 'csv-parse';
import { counted } from '../api/problems.ts';
import { checkPhoneNumber } from './phone-numbers.ts';
import { CSV_BATCH_ROWS, type CsvBatch, type CsvFromMain, type CsvSettings, type CsvToMain } from './csv-protocol.ts';
import { MAX_VARIABLES } from './numbers-intake.ts';

interface Session {
  parser: Parser;
  settings: CsvSettings;
  batch: CsvBatch;
  /** Data rows read (the header not counted). */
  rows: number;
  started: boolean;
}

const sessions = new Map<number, Session>();
const post = (m: CsvToMain) => parentPort!.postMessage(m);

function emptyBatch(): CsvBatch {
  return { rows: 0, lines: [], raws: [], checks: [], values: [], rejected: [] };
}

function open(id: number, settings: CsvSettings): void {
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, skip_records_with_error: true, info: true });
  const s: Session = { parser, settings: { ...settings }, batch: emptyBatch(), rows: 0, started: false };
  sessions.set(id, s);
  parser.on('skip', (err: CsvError & { lines?: number; raw?: string }) => {
    s.batch.rejected.push({
      position: err.lines ?? 0, value: (err.raw ?? '').slice(0, 200), reason: `the row is not valid CSV: ${err.message}`, code: 'wrong_column_count',
    });
  });
  parser.on('data', ({ record, info }: { record: string[]; info: { lines: number } }) => read(id, s, record, info.lines));
  parser.on('error', (err) => { sessions.delete(id); post({ id, kind: 'error', message: err.message }); });
  parser.on('end', () => {
    flush(id, s);
    sessions.delete(id);
    post({ id, kind: 'done', settings: s.settings, rows: s.rows });
  });
}

function read(id: number, s: Session, record: string[], line: number): void {
  if (!s.started) {
    s.started = true;
    // The first row decides the header (when not said: a first cell without any digit is a header)
    // and the variable count (when not said: the columns after the number).
    const header = s.settings.header ?? !/\d/.test(record[0] ?? '');
    const varCount = s.settings.varCount ?? Math.min(MAX_VARIABLES, Math.max(0, trimmedWidth(record) - 1));
    const varNames = header
      ? Array.from({ length: varCount }, (_, i) => record[i + 1]?.trim() || `var${i + 1}`)
      : Array.from({ length: varCount }, (_, i) => `var${i + 1}`);
    s.settings = { header, varCount, varNames };
    s.batch.settings = s.settings;
    if (header) return;
  }
  s.rows++;
  s.batch.rows++;
  const varCount = s.settings.varCount!;
  const width = trimmedWidth(record);
  if (width < 1 || width > 1 + varCount) {
    s.batch.rejected.push({
      position: line, value: record.join(',').slice(0, 200), code: 'wrong_column_count',
      reason: `the row has ${counted(width, 'column')}; expected ${varCount ? `the number and ${counted(varCount, 'variable column')}` : 'only the number'}`,
    });
  } else {
    const values = record.slice(1, 1 + varCount);
    while (values.length < varCount) values.push('');
    const raw = record[0]!.trim();
    s.batch.lines.push(line);
    s.batch.raws.push(raw);
    s.batch.checks.push(checkPhoneNumber(raw));
    s.batch.values.push(JSON.stringify(values));
  }
  if (s.batch.rows >= CSV_BATCH_ROWS) flush(id, s);
}

function flush(id: number, s: Session): void {
  if (s.batch.rows === 0 && s.batch.rejected.length === 0 && !s.batch.settings) return;
  post({ id, kind: 'batch', batch: s.batch });
  s.batch = emptyBatch();
}

/** Column count without trailing empty columns (a trailing comma is not a variable). */
function trimmedWidth(record: string[]): number {
  let n = record.length;
  while (n > 0 && record[n - 1]!.trim() === '') n--;
  return n;
}

parentPort!.on('message', (m: CsvFromMain) => {
  switch (m.kind) {
    case 'open':
      open(m.id, m.settings);
      break;
    case 'chunk': {
      const s = sessions.get(m.id);
      if (!s) return;
      s.parser.write(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength), () => post({ id: m.id, kind: 'ack' }));
      break;
    }
    case 'end':
      sessions.get(m.id)?.parser.end();
      break;
    case 'abort': {
      const s = sessions.get(m.id);
      sessions.delete(m.id);
      s?.parser.destroy();
      break;
    }
  }
});
