// CSV file source: the file is streamed (flat memory at any size); a header row names the fields, bad rows are
// reported by line, and every run reads the whole file (contacts no longer in it have left).
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import type { SourceConfig, SyncConfig } from '../config.ts';
import type { SourceContact } from './source.ts';
import { SourceError } from '../errors.ts';
import type { PullOptions, PullPage, Source, WebhookVerdict } from './source.ts';

type CsvConfig = Extract<SourceConfig, { type: 'csv' }>;

const PAGE = 1000;

export class CsvSource implements Source {
  readonly kind = 'csv';
  readonly pulls = true;
  private readonly config: CsvConfig;
  private readonly idField: string;
  private readonly required: string[];

  constructor(sync: SyncConfig) {
    this.config = sync.source as CsvConfig;
    this.idField = sync.mapping.id;
    this.required = [sync.mapping.id, ...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...sync.mapping.doNotCall.map((d) => d.field)];
  }

  async *pull(options: PullOptions): AsyncGenerator<PullPage> {
    const parser = createReadStream(this.config.path).pipe(parse({
      delimiter: this.config.delimiter, bom: true, columns: true, skip_empty_lines: true, trim: true,
      relax_column_count: true, info: true, skip_records_with_error: false,
    }));
    let contacts: SourceContact[] = [];
    let errors: { line: number; reason: string }[] = [];
    let checkedHeader = false;
    try {
      for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number; invalid_field_length: number } }>) {
        if (options.signal?.aborted) throw new SourceError('csv: stopped');
        if (!checkedHeader) {
          const missing = this.required.filter((f) => !(f in record));
          if (missing.length) throw new SourceError(`csv ${this.config.path}: the header has no column ${missing.map((m) => `"${m}"`).join(', ')} (the mapping names it)`, null, true);
          checkedHeader = true;
        }
        const id = record[this.idField] ?? '';
        if (!id) errors.push({ line: info.lines, reason: `empty "${this.idField}"` });
        else if (/[\n,]/.test(id)) errors.push({ line: info.lines, reason: `"${this.idField}" may not contain a comma or a newline` });
        else contacts.push({ id, fields: record, line: info.lines });
        if (contacts.length >= PAGE) {
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
