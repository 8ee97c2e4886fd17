// File sink: each call attempt is appended as one JSON line; after a crash the file itself says what was written.
import { createReadStream } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { activityJson } from './webhook.ts';
import type { Activity, Sink, WriteResult } from './sink.ts';

export class FileSink implements Sink {
  readonly kind = 'file';
  readonly maxBatch = 500;
  readonly needsContact = false;
  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  async write(activities: Activity[]): Promise<WriteResult[]> {
    // One append of whole lines: a crash leaves at worst a torn last line, which find() skips.
    await appendFile(this.path, activities.map((a) => `${JSON.stringify(activityJson(a))}\n`).join(''));
    return activities.map((a) => ({ key: a.key, ok: true, id: a.key }));
  }

  async find(a: Activity): Promise<string | null> {
    const needle = `"key":${JSON.stringify(a.key)}`;
    try {
      const lines = createInterface({ input: createReadStream(this.path), crlfDelay: Infinity });
      for await (const line of lines) if (line.includes(needle) && line.endsWith('}')) return a.key;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return null;
  }
}
