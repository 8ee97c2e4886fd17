// The server benchmark's CSV-upload client on a thread of its own: it streams the file (a file-backed Blob, never
// loaded whole) as multipart/form-data. Streaming 30 MB through fetch() on the server's own event loop had put the
// client's work, and its garbage, in the server's event-loop stalls.
import { openAsBlob } from 'node:fs';
import { onThread, serveOnThread } from './client-thread.ts';

export interface UploadRun {
  url: string;
  headers: Record<string, string>;
  csvPath: string;
}

export interface UploadRunResult {
  status: number;
  text: string;
  seconds: number;
}

/** Uploads the file from a worker thread of its own and returns the answer and how long it took. */
export function runUpload(run: UploadRun): Promise<UploadRunResult> {
  return onThread(new URL(import.meta.url), run);
}

async function work(run: UploadRun): Promise<UploadRunResult> {
  const form = new FormData();
  form.set('file', await openAsBlob(run.csvPath, { type: 'text/csv' }), 'numbers.csv');
  const started = performance.now();
  const res = await fetch(run.url, { method: 'POST', body: form, headers: run.headers });
  const text = await res.text();
  return { status: res.status, text, seconds: (performance.now() - started) / 1000 };
}

serveOnThread(work);
