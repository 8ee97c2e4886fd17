// A real Redis Cluster of the test's own: six redis-server processes (three masters, three replicas) on free loopback
// ports, joined by `redis-cli --cluster create`, each persisting with AOF (fsync every second, as managed services).
// A benchmark may ask for masters alone and no persistence (what it measures is memory and speed, not failover).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, waitFor } from './daemon.ts';

export interface RedisClusterUnderTest {
  ports: number[];
  urls: string[];
  /** The port of the master serving a key's slot. */
  masterOf(key: string): Promise<number>;
  /** The port of a master's replica. */
  replicaOf(masterPort: number): Promise<number>;
  /** Stops a node's process (SIGSTOP): it neither reads its replication link nor answers, until resumed (SIGCONT). */
  pause(port: number): void;
  resume(port: number): void;
  /**
   * Fills the replication link of a paused replica's master (values under `tag`'s slot, about 48 MB), so that what
   * the master acknowledges next stays in its own output buffer: a master killed then loses it for good.
   */
  clogReplication(masterPort: number, tag: string): Promise<void>;
  /** Kills a node with SIGKILL (its replica takes over after the node timeout). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again: it rejoins from its own files, as a replica of whoever took its slots. */
  restart(port: number): Promise<void>;
  /** Empties every live master (FLUSHALL; their replicas follow): the cluster's data is lost, its nodes run on. */
  flush(): Promise<void>;
  /** Waits until every live node says the cluster is ok and a replica has taken over each dead master's slots. */
  healthy(): Promise<void>;
  stop(): Promise<void>;
}

const run = promisify(execFile);

async function node(port: number): Promise<Redis> {
  const r = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  await r.connect();
  return r;
}

async function ask<T>(port: number, f: (r: Redis) => Promise<T>): Promise<T | null> {
  let r: Redis | null = null;
  try {
    r = await node(port);
    return await f(r);
  } catch {
    return null;
  } finally {
    r?.disconnect();
  }
}

export interface RedisClusterOptions {
  /** Masters (3 by default, the least a cluster is made of). */
  masters?: number;
  /** Replicas of each master (1 by default). */
  replicas?: number;
  /** AOF, fsync every second (the default), or none: the nodes keep their data in memory only. */
  persistence?: 'aof' | 'none';
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterUnderTest> {
  const { masters = 3, replicas = 1, persistence = 'aof' } = options;
  const dir = mkdtempSync(join(tmpdir(), 'cds-cluster-'));
  const ports: number[] = [];
  while (ports.length < masters * (1 + replicas)) {
    const p = await freePort();
    // The cluster bus listens on port + 10000: both must be free.
    if (p < 55_000 && !ports.includes(p) && !ports.includes(p + 10_000)) ports.push(p);
  }
  const procs = new Map<number, ChildProcess>();
  const start = (port: number) => {
    procs.set(port, spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--cluster-enabled', 'yes',
      '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1500',
      // A replica takes over however long its link was down (a test kills masters right after the cluster forms).
      '--cluster-replica-validity-factor', '0',
      ...(persistence === 'aof' ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--appendfilename', `aof-${port}.aof`, '--appenddirname', `aof-${port}`] : ['--appendonly', 'no']),
      '--save', '', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' }));
  };
  for (const port of ports) start(port);
  for (const port of ports) await waitFor(() => ask(port, async (r) => (await r.ping()) === 'PONG'), `redis-server on ${port}`);
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
  const dead = new Set<number>();
  const cluster: RedisClusterUnderTest = {
    ports,
    urls: ports.map((p) => `redis://127.0.0.1:${p}`),
    async masterOf(key) {
      for (const port of ports.filter((p) => !dead.has(p))) {
        const slot = await ask(port, (r) => r.cluster('KEYSLOT', key) as Promise<number>);
        if (slot === null) continue;
        const slots = await ask(port, (r) => r.cluster('SLOTS') as unknown as Promise<[number, number, [string, number]][]>);
        const range = slots?.find(([lo, hi]) => slot >= lo && slot <= hi);
        if (range) return range[2][1];
      }
      throw new Error(`no live node knows the master of ${key}`);
    },
    async replicaOf(masterPort) {
      const info = await ask(masterPort, (r) => r.info('replication'));
      const port = Number(/slave0:[^\n]*port=(\d+)/.exec(info ?? '')?.[1]);
      if (!port) throw new Error(`the master on ${masterPort} has no replica: ${info}`);
      return port;
    },
    pause(port) { procs.get(port)!.kill('SIGSTOP'); },
    resume(port) { procs.get(port)!.kill('SIGCONT'); },
    async clogReplication(masterPort, tag) {
      const r = await node(masterPort);
      const chunk = 'x'.repeat(1024 * 1024);
      try {
        for (let i = 0; i < 48; i++) await r.set(`${tag}:clog:${i}`, chunk);
      } finally {
        r.disconnect();
      }
    },
    async kill(port) {
      dead.add(port);
      const p = procs.get(port)!;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await exited;
    },
    async restart(port) {
      start(port);
      dead.delete(port);
      await waitFor(() => ask(port, async (r) => /master_link_status:up/.test(await r.info('replication'))), `the node on ${port} to rejoin as a replica`, 60_000);
    },
    async flush() {
      for (const port of ports.filter((p) => !dead.has(p))) {
        const role = await ask(port, (r) => r.role() as Promise<unknown[]>);
        if (role?.[0] === 'master' && await ask(port, (r) => r.flushall()) !== 'OK') throw new Error(`FLUSHALL on the master on ${port} failed`);
      }
    },
    async healthy() {
      await waitFor(async () => {
        for (const port of ports.filter((p) => !dead.has(p))) {
          const info = await ask(port, (r) => r.cluster('INFO') as Promise<string>);
          if (!info || !/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
          // Every slot served by a live master (a dead one's replica has taken over).
          const slots = await ask(port, (r) => r.cluster('SLOTS') as unknown as Promise<[number, number, [string, number]][]>);
          if (!slots || slots.some(([, , master]) => dead.has(master[1]))) return false;
        }
        return true;
      }, 'the cluster to be healthy', 60_000);
    },
    async stop() {
      for (const [port, p] of procs) if (!dead.has(port)) { const exited = new Promise((r) => p.once('exit', r)); p.kill('SIGKILL'); await exited; }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.healthy();
  // Replicas have their master's data (a replica killed mid-sync could not take over).
  for (const port of ports) {
    await waitFor(() => ask(port, async (r) => {
      const info = await r.info('replication');
      return /role:master/.test(info) || /master_link_status:up/.test(info);
    }), `the replica on ${port} to be in sync`);
  }
  return cluster;
}
