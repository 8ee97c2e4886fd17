// The benchmarks' clients run on threads of their own, so the server's event loop (on the main thread) does only the
// server's work: a client module serves one job per thread (serveOnThread) and the benchmark awaits it (onThread).
import { once } from 'node:events';
import { parentPort, Worker } from 'node:worker_threads';

/** Runs the client module at `module` on a new thread with this job and returns what it answered. */
export async function onThread<Job, Result>(module: URL, job: Job): Promise<Result> {
  const worker = new Worker(module);
  try {
    worker.postMessage(job);
    const [result] = await Promise.race([
      once(worker, 'message') as Promise<[Result]>,
      once(worker, 'error').then(([err]) => { throw err as Error; }),
    ]);
    return result;
  } finally {
    await worker.terminate();
  }
}

/** In a client module: when it runs as such a thread, answers each job with work(job). */
export function serveOnThread<Job, Result>(work: (job: Job) => Promise<Result>): void {
  parentPort?.on('message', (job: Job) => {
    void work(job).then((result) => parentPort!.postMessage(result));
  });
}
