// Requests a stand-in refused because they drift from the CRM's API: counted in the stand-in's stats and the last 100
// kept, so a client's test can assert there were none and, when there were, show what drifted.

export interface Refusal {
  method: string;
  /** The path, without the query. */
  path: string;
  status: number;
  message: string;
}

const KEPT = 100;

export class RefusalLog {
  private readonly stats: { refused: number };
  private readonly kept: Refusal[] = [];

  constructor(stats: { refused: number }) {
    this.stats = stats;
  }

  record(request: { method: string; url: string }, status: number, message: string): void {
    this.stats.refused++;
    this.kept.push({ method: request.method, path: request.url.split('?')[0]!, status, message });
    if (this.kept.length > KEPT) this.kept.shift();
  }

  list(): Refusal[] {
    return [...this.kept];
  }
}
