// POST .../numbers/upload (§4.8): streams a multipart CSV through csv-parse into the campaign in batches.
import type { FastifyRequest } from 'fastify';
import { parse, type CsvError } from 'csv-parse';
import type { UploadResult } from '../api/records.ts';
import type { Deps } from './app.ts';
import { ApiError, invalid } from './errors.ts';
import { booleanParam, integerParam, onlyParams, params } from './http.ts';
import { admit, type Candidate, type Rejection } from './numbers-intake.ts';
import type { PhoneCheck } from './phone-numbers.ts';
import { assertAcceptsNumbers, MAX_VARIABLES } from './routes/numbers.ts';
import type { CampaignRow } from './store/campaigns.ts';

/** Rows validated and inserted per transaction; between batches other requests get their turn. */
const BATCH = 5_000;
/** Batches validated ahead of the one being inserted. */
const IN_FLIGHT = 2;
/** Rejected rows listed in the response; all of them are counted. */
export const UPLOAD_REJECTIONS_SHOWN = 1_000;

const PARAMS = ['firstRowIsHeader', 'varCount'] as const;

export async function uploadCsv(deps: Deps, request: FastifyRequest, row: CampaignRow): Promise<UploadResult> {
  if (!request.isMultipart()) {
    throw new ApiError('unsupported-media-type', 'upload the CSV as multipart/form-data with one file part named "file"');
  }
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > deps.limits.uploadBytes) {
    throw new ApiError('payload-too-large', `the upload is ${declared} bytes; at most ${deps.limits.uploadBytes} are accepted`);
  }
  const p = params(request);
  onlyParams(p, PARAMS);
  const settings: Record<string, string | undefined> = { ...p };
  assertAcceptsNumbers(row);

  for await (const part of request.parts()) {
    if (part.type === 'field') {
      // curl -F firstRowIsHeader=true: form fields before the file count like query parameters.
      if (!(PARAMS as readonly string[]).includes(part.fieldname)) {
        throw invalid([{ in: 'body', name: part.fieldname, detail: `unknown form field ${JSON.stringify(part.fieldname)}; fields: file, ${PARAMS.join(', ')}` }]);
      }
      settings[part.fieldname] ??= String(part.value);
      continue;
    }
    if (part.fieldname !== 'file') {
      throw invalid([{ in: 'body', name: part.fieldname, detail: `the file part must be named "file"; got ${JSON.stringify(part.fieldname)}` }]);
    }
    const header = booleanParam('firstRowIsHeader', settings.firstRowIsHeader);
    const varCount = integerParam('varCount', settings.varCount, 0, MAX_VARIABLES);
    return await ingest(deps, row, part.file, header, varCount);
  }
  throw invalid([{ in: 'body', name: 'file', detail: 'the multipart body has no file part named "file"' }]);
}

async function ingest(deps: Deps, row: CampaignRow, file: NodeJS.ReadableStream & { truncated?: boolean },
  headerSetting: boolean | undefined, varCountSetting: number | undefined): Promise<UploadResult> {
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, skip_records_with_error: true, info: true });
  const rejected: Rejection[] = [];
  let rejectedCount = 0;
  const reject = (r: Rejection) => {
    rejectedCount++;
    if (rejected.length < UPLOAD_REJECTIONS_SHOWN) rejected.push(r);
  };
  parser.on('skip', (err: CsvError & { lines?: number; raw?: string }) => {
    reject({ position: err.lines ?? 0, value: (err.raw ?? '').slice(0, 200), reason: `not valid CSV: ${err.message}`, code: 'wrong_column_count' });
  });
  file.on('error', (err) => parser.destroy(err));
  file.pipe(parser);

  let header = headerSetting;
  let varCount = varCountSetting;
  let varNames: string[] | null = null;
  let rows = 0;
  let createdCount = 0;
  let batch: Candidate[] = [];
  // Batches at the validator while the previous one is inserted: the worker and this thread run at once.
  const inFlight: { batch: Candidate[]; checks: Promise<PhoneCheck[]> }[] = [];
  const insertOldest = async () => {
    const next = inFlight.shift()!;
    const checks = await next.checks;
    const now = deps.store.campaigns.byPk(row.pk);
    if (!now) throw new ApiError('not-found', `the campaign was deleted during the upload; ${createdCount} numbers had been added`);
    if (now.type !== 'Dynamic' || now.state !== 'Active') {
      throw new ApiError('conflict', `the campaign became ${now.state} during the upload; ${createdCount} numbers had been added`,
        { extensions: { createdCount, rejectedCount } });
    }
    const r = admit(deps.store, row.pk, varNames!, next.batch, checks);
    createdCount += r.admitted.length;
    r.rejected.forEach(reject);
  };
  const submit = async () => {
    if (batch.length) {
      const checks = deps.validator.check(batch.map((c) => c.raw));
      checks.catch(() => {}); // awaited by insertOldest; this only keeps an early failure from being "unhandled"
      inFlight.push({ batch, checks });
      batch = [];
    }
    while (inFlight.length >= IN_FLIGHT) await insertOldest();
  };
  const drain = async () => {
    await submit();
    while (inFlight.length) await insertOldest();
  };

  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      const line = info.lines;
      if (varNames === null) {
        // The first row decides the header (when not said: a first cell without any digit is a header)
        // and the variable count (when not said: the columns after the number).
        header ??= !/\d/.test(record[0] ?? '');
        varCount ??= Math.min(MAX_VARIABLES, Math.max(0, trimmedWidth(record) - 1));
        varNames = header
          ? Array.from({ length: varCount }, (_, i) => record[i + 1]?.trim() || `var${i + 1}`)
          : Array.from({ length: varCount }, (_, i) => `var${i + 1}`);
        if (header) continue;
      }
      rows++;
      const width = trimmedWidth(record);
      if (width < 1 || width > 1 + varCount!) {
        reject({ position: line, value: record.join(',').slice(0, 200), code: 'wrong_column_count',
          reason: `has ${width} columns; expected the number and ${varCount} variable column(s)` });
        continue;
      }
      const values = record.slice(1, 1 + varCount!);
      while (values.length < varCount!) values.push('');
      batch.push({ position: line, raw: record[0]!.trim(), varValues: values });
      if (batch.length >= BATCH) await submit();
    }
    await drain();
  } catch (err) {
    const e = err as { statusCode?: number; code?: string };
    if (e.statusCode === 413 || e.code === 'FST_REQ_FILE_TOO_LARGE') {
      await drain();
      throw new ApiError('payload-too-large',
        `the file is larger than ${deps.limits.uploadBytes} bytes; the ${createdCount} numbers read before the limit were added`,
        { extensions: { createdCount, rejectedCount } });
    }
    throw err;
  }
  if (file.truncated) {
    throw new ApiError('payload-too-large', `the file is larger than ${deps.limits.uploadBytes} bytes; the ${createdCount} numbers read before the limit were added`);
  }
  if (rows === 0 && rejectedCount === 0) {
    throw invalid([{ in: 'body', name: 'file', detail: header ? 'the file has a header row but no numbers' : 'the file is empty' }]);
  }
  const result: UploadResult = {
    rows, createdCount, rejectedCount,
    rejected: rejected.sort((a, b) => a.position - b.position).map((r) => ({ line: r.position, value: r.value, reason: r.reason, code: r.code })),
    varNames: varNames ?? [], firstRowIsHeader: header ?? false, varCount: varCount ?? 0,
  };
  if (createdCount === 0) {
    throw new ApiError('unprocessable', `none of the ${rows} rows was added: ${rejected[0]?.reason ?? 'no numbers'}`, { extensions: { ...result } });
  }
  return result;
}

/** Column count without trailing empty columns (a trailing comma is not a variable). */
function trimmedWidth(record: string[]): number {
  let n = record.length;
  while (n > 0 && record[n - 1]!.trim() === '') n--;
  return n;
}
