// File sink: each call attempt is appended as one JSON line; after a crash the file itself says what was written.
import { createReadStream } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { activityJson } from './webhook.ts';
import { ActivityIndex, type Activity, type Found, type Sink, type WriteResult } from './sink.ts';

export class FileSink implements Sink {
  readonly kind = 'file';
  readonly maxBatch = 500;
  readonly indexLagMs = 0;
  readonly needsContact = false;
  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  async write(activities: Activity[]): Promise<WriteResult[]> {
    // One append of whole lines: a crash leaves at worst a torn last line, which findWritten() skips.
    await appendFile(this.path, activities.map((a) => `${JSON.stringify(activityJson(a))}\n`).join(''));
    return activities.map((a) => ({ key: a.key, ok: true, id: a.key }));
  }

  /** One read of the file for all of them (a whole line has its key; a torn last line does not count). */
  async findWritten(activities: Activity[]): Promise<Found> {
    const index = new ActivityIndex(activities);
    const ids = new Map<string, string>();
    try {
      const lines = createInterface({ input: createReadStream(this.path), crlfDelay: Infinity });
      for await (const line of lines) {
        if (!line.endsWith('}')) continue;
        const key = /"key":"([^"]+)"/.exec(line)?.[1];
        // (A line found by an attempt's key is this call only if it holds this call's start.)
        const a = index.find(key, (x) => line.includes(`"startedAtLocal":${JSON.stringify(x.record.startedAtLocal)}`));
        if (a) ids.set(a.key, key!);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return { ids, cursor: null };
  }
}
