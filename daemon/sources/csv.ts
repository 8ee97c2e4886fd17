// CSV file source: the file is streamed (memory grows with its ids and numbers, never with its rows); a header row
// names the fields, bad rows are reported by line, and every run reads the whole file (contacts no longer in it have left).
//
// No row is lost silently: a row is taken, or refused with a record error naming its line, and the first row wins.
// A row with another number of fields than the header, or an id an earlier row has, is refused (a second row
// cannot override the first). A phone number an earlier row holds (compared in E.164, as the mapping normalizes it)
// is kept out of the later row, the row's other numbers still count; a row left with none is refused. A row marked
// Do Not Call keeps its numbers, repeated or not: the mark keeps them out of the campaign whoever else holds them.
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import type { Mapping, SourceConfig, SyncConfig } from '../config.ts';
import { toE164 } from '../phone.ts';
import { readDoNotCall } from '../sync/do-not-call.ts';
import { redactPhone } from '../sync/contacts.ts';
import type { SourceContact } from './source.ts';
import { SourceError } from '../errors.ts';
import type { PullOptions, PullPage, Source, WebhookVerdict } from './source.ts';

type CsvConfig = Extract<SourceConfig, { type: 'csv' }>;
type RowError = NonNullable<PullPage['errors']>[number];

const PAGE = 1000;

/**
 * What one read has taken so far: each contact id with its line, each phone number with its contact. A number is
 * kept as its E.164 digits in a double (15 digits at most: exact), smaller than its string.
 */
class TakenRows {
  private readonly ids = new Map<string, number>();
  private readonly phones = new Map<number, string>();

  private readonly mapping: Mapping;

  constructor(mapping: Mapping) {
    this.mapping = mapping;
  }

  /**
   * Takes a row, or refuses it, with the errors of what it repeats. A row taken claims its id and numbers; a number
   * repeated from an earlier row is blanked in `record`, so that the sync never sees it as this row's.
   */
  take(id: string, record: Record<string, string>, line: number): { refused: boolean; errors: RowError[] } {
    const dnc = readDoNotCall(record, this.mapping.doNotCall);
    const first = this.ids.get(id);
    if (first !== undefined) {
      const mark = dnc.marked ? ' (its Do Not Call mark too: mark the row on that line)' : '';
      return { refused: true, errors: [{ line, contactId: id, field: this.mapping.id, reason: `contact id ${id} is already on line ${first}: this row is refused${mark}` }] };
    }
    const mine: number[] = [];
    const repeated: { field: string; phone: string; holder: string }[] = [];
    for (const field of this.mapping.phone) {
      const phone = toE164(record[field] ?? '', this.mapping.defaultCountry);
      // An invalid number is the sync's to report (mapContact): it holds no place here.
      if (!phone.ok) continue;
      const key = Number(phone.e164.slice(1));
      if (mine.includes(key) || repeated.some((r) => r.phone === phone.e164)) continue;
      const holder = this.phones.get(key);
      if (holder === undefined || dnc.marked) mine.push(key);
      else repeated.push({ field, phone: phone.e164, holder });
    }
    // Every valid number it has is another row's: nothing of it is taken.
    const refused = repeated.length > 0 && mine.length === 0;
    const errors: RowError[] = repeated.map(({ field, phone, holder }) => {
      if (!refused) record[field] = '';
      return {
        line, contactId: id, field, value: redactPhone(phone),
        reason: `phone number ${redactPhone(phone)} is already on line ${this.ids.get(holder)} (contact ${holder}): ` +
          (refused ? 'this row has no other number and is refused' : 'it is left out of this row, whose other numbers are taken'),
      };
    });
    if (refused) return { refused, errors };
    this.ids.set(id, line);
    for (const p of mine) if (!this.phones.has(p)) this.phones.set(p, id);
    return { refused: false, errors };
  }
}

export class CsvSource implements Source {
  readonly kind = 'csv';
  readonly pulls = true;
  private readonly config: CsvConfig;
  private readonly mapping: Mapping;
  private readonly idField: string;
  private readonly required: string[];

  constructor(sync: SyncConfig) {
    this.config = sync.source as CsvConfig;
    this.mapping = sync.mapping;
    this.idField = sync.mapping.id;
    this.required = [sync.mapping.id, ...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...sync.mapping.doNotCall.map((d) => d.field)];
  }

  async *pull(options: PullOptions): AsyncGenerator<PullPage> {
    const file = createReadStream(this.config.path);
    const parser = file.pipe(parse({
      delimiter: this.config.delimiter, bom: true, skip_empty_lines: true, trim: true,
      relax_column_count: true, info: true, skip_records_with_error: false,
    }));
    // pipe() does not pass the file's errors on: a missing or unreadable file would be an uncaught error (the process
    // ends) instead of the run's failure.
    file.on('error', (err) => parser.destroy(err));
    const taken = new TakenRows(this.mapping);
    let contacts: SourceContact[] = [];
    let errors: RowError[] = [];
    let header: string[] | null = null;
    // Where the previous record ended: a record's first line follows it and the empty lines skipped since.
    let endedAt = 0, emptyLines = 0;
    try {
      for await (const { record: fields, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number; empty_lines: number } }>) {
        if (options.signal?.aborted) throw new SourceError('csv: stopped');
        const line = endedAt + (info.empty_lines - emptyLines) + 1;
        endedAt = info.lines;
        emptyLines = info.empty_lines;
        if (!header) {
          header = fields;
          const missing = this.required.filter((f) => !header!.includes(f));
          if (missing.length) throw new SourceError(`csv ${this.config.path}: the header has no column ${missing.map((m) => `"${m}"`).join(', ')} (the mapping names it)`, null, true);
          continue;
        }
        if (fields.length !== header.length) {
          // Its fields cannot be matched to the columns: which one is the phone number is a guess.
          errors.push({ line, reason: `the row has ${fields.length} field${fields.length === 1 ? '' : 's'} and the header ${header.length}: this row is refused (a value holding the delimiter needs quotes)` });
        } else {
          const record: Record<string, string> = {};
          header.forEach((name, i) => { record[name] = fields[i]!; });
          const id = record[this.idField] ?? '';
          if (!id) errors.push({ line, reason: `empty "${this.idField}"` });
          else if (/[\n,]/.test(id)) errors.push({ line, reason: `"${this.idField}" may not contain a comma or a newline` });
          else {
            const row = taken.take(id, record, line);
            errors.push(...row.errors);
            if (!row.refused) contacts.push({ id, fields: record, line });
          }
        }
        if (contacts.length + errors.length >= PAGE) {
          yield { contacts, errors };
          contacts = [];
          errors = [];
        }
      }
    } catch (err) {
      if (err instanceof SourceError) throw err;
      // A missing or unreadable file, or broken quoting: nothing a retry in seconds would change.
      throw new SourceError(`csv ${this.config.path}: ${(err as Error).message}`, null, true);
    }
    if (contacts.length || errors.length) yield { contacts, errors };
  }

  verifyWebhook(): WebhookVerdict {
    return { ok: false, status: 401, reason: 'a CSV sync takes no webhooks' };
  }
}
