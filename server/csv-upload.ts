// POST .../numbers/upload (§4.8): streams a multipart CSV through the CSV thread into the campaign in batches.
import type { FastifyRequest } from 'fastify';
import type { Multipart } from '@fastify/multipart';
import type { UploadResult } from '../api/records.ts';
import type { Deps } from './deps.ts';
import { counted, listing } from '../api/problems.ts';
import { ApiError, invalid } from './errors.ts';
import { booleanParam, integerParam, onlyParams, params } from './http.ts';
import { admit, assertAcceptsNumbers, MAX_VARIABLES, type Candidate, type Rejection } from './numbers-intake.ts';
import type { CsvBatch, CsvSettings } from './csv-protocol.ts';
import type { CampaignRow } from './store/campaigns.ts';

/** Rejected rows listed in the response; all of them are counted. */
export const UPLOAD_REJECTIONS_SHOWN = 1_000;

const PARAMS = ['firstRowIsHeader', 'varCount'] as const;

/** `anyState`: the console's upload, which fills a campaign of any type and state (as its JSON add does). */
export async function uploadCsv(deps: Deps, request: FastifyRequest, row: CampaignRow, anyState = false): Promise<UploadResult> {
  if (!request.isMultipart()) {
    throw new ApiError('unsupported-media-type', 'Upload the CSV file as multipart/form-data with one file part named "file"');
  }
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > deps.limits.uploadBytes) {
    throw new ApiError('payload-too-large', `The upload is ${declared} bytes; at most ${deps.limits.uploadBytes} bytes are accepted`);
  }
  const p = params(request);
  onlyParams(p, PARAMS);
  const settings: Record<string, string | undefined> = { ...p };
  if (!anyState) assertAcceptsNumbers(row);

  for await (const part of multipartParts(request)) {
    if (part.type === 'field') {
      // curl -F firstRowIsHeader=true: form fields before the file count like query parameters.
      if (!(PARAMS as readonly string[]).includes(part.fieldname)) {
        throw invalid([{
          in: 'body', name: part.fieldname,
          detail: `Unknown form field ${JSON.stringify(part.fieldname)}; the fields are ${listing(['file', ...PARAMS], 'and')}`,
        }]);
      }
      settings[part.fieldname] ??= String(part.value);
      continue;
    }
    if (part.fieldname !== 'file') {
      throw invalid([{ in: 'body', name: part.fieldname, detail: `The file part must be named "file"; got ${JSON.stringify(part.fieldname)}` }]);
    }
    const header = booleanParam('firstRowIsHeader', settings.firstRowIsHeader);
    const varCount = integerParam('varCount', settings.varCount, 0, MAX_VARIABLES);
    return await ingest(deps, row, part.file, header, varCount, anyState);
  }
  throw invalid([{ in: 'body', name: 'file', detail: 'The multipart body has no file part named "file"' }]);
}

async function ingest(deps: Deps, row: CampaignRow, file: NodeJS.ReadableStream & { truncated?: boolean },
  headerSetting: boolean | undefined, varCountSetting: number | undefined, anyState: boolean): Promise<UploadResult> {
  const rejected: Rejection[] = [];
  let rejectedCount = 0;
  const reject = (r: Rejection) => {
    rejectedCount++;
    if (rejected.length < UPLOAD_REJECTIONS_SHOWN) rejected.push(r);
  };
  let settings: CsvSettings = { header: headerSetting, varCount: varCountSetting };
  let rows = 0;
  let createdCount = 0;
  const insert = (batch: CsvBatch) => {
    const now = deps.store.campaigns.byPk(row.pk);
    const added = `${counted(createdCount, 'number')} had been added`;
    if (!now) throw new ApiError('not-found', `Campaign ${JSON.stringify(row.name)} was deleted during the upload; ${added}`);
    if (!anyState && (now.type !== 'Dynamic' || now.state !== 'Active')) {
      throw new ApiError('conflict', `Campaign ${JSON.stringify(row.name)} became ${now.state} during the upload; ${added}`,
        { extensions: { createdCount, rejectedCount } });
    }
    const candidates: Candidate[] = batch.lines.map((line, i) => ({ position: line, raw: batch.raws[i]!, varValues: batch.values[i]! }));
    const r = admit(deps.store, row.pk, settings.varNames!, candidates, batch.checks, 'file');
    createdCount += r.admitted.length;
    r.rejected.forEach(reject);
  };

  // Parsing and phone number checks run on the CSV thread; this loop only inserts, a batch per transaction.
  const batches = deps.csv.parse(multipartBytes(file as AsyncIterable<Buffer>), settings);
  try {
    for (;;) {
      const next = await batches.next();
      if (next.done) {
        ({ settings, rows } = next.value);
        break;
      }
      const batch = next.value;
      if (batch.settings) settings = batch.settings;
      batch.rejected.forEach(reject);
      if (batch.lines.length) insert(batch);
      // Batches already parsed would otherwise follow each other on microtasks: let other requests in between, and
      // let the write-ahead log be copied out when the upload has outrun the checkpointer.
      await new Promise((resolve) => setImmediate(resolve));
      await deps.store.db.walRoom(batch.lines.length);
    }
  } catch (err) {
    const e = err as { statusCode?: number; code?: string };
    if (e.statusCode === 413 || e.code === 'FST_REQ_FILE_TOO_LARGE') {
      throw new ApiError('payload-too-large', tooLarge(deps.limits.uploadBytes, createdCount), { extensions: { createdCount, rejectedCount } });
    }
    throw err;
  }
  if (file.truncated) {
    throw new ApiError('payload-too-large', tooLarge(deps.limits.uploadBytes, createdCount));
  }
  if (rows === 0 && rejectedCount === 0) {
    throw invalid([{ in: 'body', name: 'file', detail: settings.header ? 'The file has a header row but no numbers' : 'The file is empty' }]);
  }
  const result: UploadResult = {
    rows, createdCount, rejectedCount,
    rejected: rejected.sort((a, b) => a.position - b.position).map((r) => ({ line: r.position, value: r.value, reason: r.reason, code: r.code })),
    varNames: settings.varNames ?? [], firstRowIsHeader: settings.header ?? false, varCount: settings.varCount ?? 0,
  };
  if (createdCount === 0) {
    const [first] = result.rejected as [UploadResult['rejected'][number]];
    throw new ApiError('unprocessable', rejectedCount === 1
      ? `The number on line ${first.line} was not added: ${first.reason}`
      : `None of the ${rejectedCount} rows was added; line ${first.line} was rejected: ${first.reason} (see rejected for the others)`,
    { extensions: { ...result } });
  }
  return result;
}

/**
 * The parser's own errors (no boundary, a body that is not multipart, one cut short) are the client's: a 400 that says so.
 * Errors with a status (the size limits of @fastify/multipart) pass on as they are.
 */
function malformedMultipart(err: unknown): unknown {
  if (err instanceof ApiError || typeof (err as { statusCode?: unknown }).statusCode === 'number') return err;
  const detail = `The body is not valid multipart/form-data: ${(err as Error).message}; send the CSV file as a part named "file"`;
  return invalid([{ in: 'body', name: '', detail }]);
}

async function* multipartParts(request: FastifyRequest): AsyncGenerator<Multipart> {
  try {
    yield* request.parts();
  } catch (err) {
    throw malformedMultipart(err);
  }
}

async function* multipartBytes(file: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield* file;
  } catch (err) {
    throw malformedMultipart(err);
  }
}

function tooLarge(limit: number, createdCount: number): string {
  return `The file is larger than ${limit} bytes; ` +
    (createdCount ? `the ${counted(createdCount, 'number')} read before the limit ${createdCount === 1 ? 'was' : 'were'} added` : 'no number was added');
}
