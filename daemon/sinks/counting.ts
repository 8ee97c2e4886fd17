// The sink of a mirror that only counts (`sink: { type: 'none' }`): the campaign's call-detail records are read, for
// the per-number caps that count call starts from them, and no activity is written anywhere.
import type { Activity, Found, Sink, WriteResult } from './sink.ts';

export class CountingSink implements Sink {
  readonly kind = 'none';
  readonly maxBatch = 500;
  readonly indexLagMs = 0;
  readonly needsContact = false;

  async write(activities: Activity[]): Promise<WriteResult[]> {
    return activities.map((a) => ({ key: a.key, ok: true, id: 'counted' }));
  }

  /** Nothing was written, so nothing is found: a record in doubt is counted again, which the caps take as one call. */
  async findWritten(): Promise<Found> {
    return { ids: new Map(), cursor: null };
  }
}
