// The messages between an upload (csv-upload.ts, on the event loop) and the CSV parsing thread (csv-worker.ts).
import type { Rejection } from './numbers-intake.ts';
import type { PhoneCheck } from './phone-numbers.ts';

/**
 * Data rows per batch: one insert transaction each, so other requests get their turn between them. Random phone numbers
 * cost ~20-100 us a row to index (an index page each), and the cost is per row whatever the batch: 250 rows gave the
 * same 45-50k rows/s as 500 with the longest stall at 54-56 ms instead of 80-117 ms (./dev bench server). The
 * one-second stalls once seen at 100 and 250 rows were the log's hard-limit truncation (see Database.walRoom), not
 * the batch size.
 */
export const CSV_BATCH_ROWS = 250;

/** What the request says (undefined: decided by the first row), and once decided, the variable names. */
export interface CsvSettings {
  header?: boolean;
  varCount?: number;
  varNames?: string[];
}

/** Rows parsed and checked, in file order. `lines`, `raws`, `checks`, `values` run in parallel, one per row to insert. */
export interface CsvBatch {
  /** Data rows this batch read, the rejected ones included. */
  rows: number;
  lines: number[];
  raws: string[];
  checks: PhoneCheck[];
  /** Each row's variable values as JSON text. */
  values: string[];
  /** Rows refused before any phone number check (bad CSV, wrong column count). */
  rejected: Rejection[];
  /** On the first batch: the header and variables as decided. */
  settings?: CsvSettings;
}

export type CsvFromMain =
  | { id: number; kind: 'open'; settings: CsvSettings }
  | { id: number; kind: 'chunk'; chunk: Uint8Array }
  | { id: number; kind: 'end' }
  | { id: number; kind: 'abort' };

export type CsvToMain =
  | { id: number; kind: 'ack' }
  | { id: number; kind: 'batch'; batch: CsvBatch }
  | { id: number; kind: 'done'; settings: CsvSettings; rows: number }
  | { id: number; kind: 'error'; message: string };
