// Which version of the Redis state a prefix holds, checked by every process before it touches anything else: a newer
// one than this code knows is refused (its processes would misread it, and it ours), an older one is migrated, one
// process at a time under a lease, the others waiting for it. The state version is a layout number, not the package
// version: most releases leave the state as it is, and processes of any of them can then share it (a rolling upgrade).
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { VERSION } from '../version.ts';
import type { RedisClient } from './connection.ts';
import type { DaemonKeys } from './keys.ts';
import { LAYOUT, upgradeLayout, type SyncToMove } from './layout.ts';
import { Lease } from './lease.ts';
import { withScripts } from './scripts.ts';

/**
 * The version of the Redis state this code reads and writes. Raise it with a step in MIGRATIONS and a CHANGELOG entry
 * saying what an upgrade needs: processes of an older state version must all stop before a newer one starts.
 * 1: keys without hash tags (before 0.1.0's layout move); 2: hash-tagged keys (0.1.0 and later).
 */
export const STATE_VERSION = 2;

/** What a migration step is given. */
export interface MigrationContext { redis: RedisClient; keys: DaemonKeys; syncs: SyncToMove[]; log: Logger }

/** MIGRATIONS[n] moves the state from version n to n + 1; each step is idempotent (a holder may die mid-way). */
const MIGRATIONS: Record<number, (ctx: MigrationContext) => Promise<void>> = {
  1: ({ redis, keys, syncs, log }) => upgradeLayout(redis, keys, syncs, log),
};

/** A state written by a newer version than this process's: it must not start on it. */
export class NewerStateError extends Error {
  readonly found: number;
  readonly writtenBy: string | null;
  constructor(prefix: string, found: number, writtenBy: string | null, version = VERSION) {
    super(`the Redis state under prefix "${prefix}" is state version ${found}` +
      `${writtenBy ? `, written by campaign-sync ${writtenBy}` : ''}; this is campaign-sync ${version}, which reads state version ${STATE_VERSION}. ` +
      `Start campaign-sync ${writtenBy ?? 'of that version'} or later on it (or give this one another redis.prefix); an older version cannot read a newer state`);
    this.name = 'NewerStateError';
    this.found = found;
    this.writtenBy = writtenBy;
  }
}

export interface StateVersion {
  version: number;
  /** The package version of the process that last opened the state (null before versions were recorded). */
  writtenBy: string | null;
}

/**
 * The state's version: as recorded, else (a Redis written before versions were recorded, by 0.1.0) the layout key's
 * 2, else 1: keys without hash tags, or nothing yet (moving nothing costs a scan).
 */
export async function readStateVersion(redis: RedisClient, keys: DaemonKeys): Promise<StateVersion> {
  const [version, writtenBy] = await redis.hmget(keys.stateVersion, 'version', 'writtenBy');
  if (version) return { version: Number(version), writtenBy: writtenBy ?? null };
  return { version: (await redis.get(keys.layout)) === LAYOUT ? 2 : 1, writtenBy: null };
}

export interface OpenStateOptions {
  /** The package version recorded as the last to open the state (default: this one's). */
  packageVersion?: string;
  /** How long the migrating process's lease lasts unless renewed (it renews it while it works). */
  leaseMs?: number;
}

/**
 * Checks the state's version before a process starts on it: refuses a newer one (NewerStateError), migrates an older
 * one (one process; the others wait, then find it done), and records the package version that opened it. Returns the
 * version the state had.
 */
export async function openState(redis: RedisClient, keys: DaemonKeys, syncs: SyncToMove[], log: Logger, options: OpenStateOptions = {}): Promise<StateVersion> {
  const packageVersion = options.packageVersion ?? VERSION;
  const found = await readStateVersion(redis, keys);
  const refuseNewer = (s: StateVersion) => {
    if (s.version > STATE_VERSION) throw new NewerStateError(keys.prefix, s.version, s.writtenBy, packageVersion);
  };
  refuseNewer(found);
  let current = found;
  if (current.version < STATE_VERSION) {
    const lease = new Lease(redis, keys.stateLock, options.leaseMs ?? 30_000);
    let waited = false;
    for (;;) {
      const holder = await lease.take();
      if (holder) {
        // Another process migrates: wait until it is done (or its lease lapses, and this one takes over).
        if (!waited) log.info({ holder: holder.holder }, 'another process is migrating the Redis state: waiting for it');
        waited = true;
        await delay(Math.min(Math.max(holder.lapsesInMs, 50), 500));
        current = await readStateVersion(redis, keys);
        refuseNewer(current);
        if (current.version >= STATE_VERSION) break;
        continue;
      }
      const renewed = lease.keepRenewed();
      try {
        // The one before may have finished between this process's read and its lease.
        current = await readStateVersion(redis, keys);
        refuseNewer(current);
        for (let v = current.version; v < STATE_VERSION; v++) {
          if (renewed.lost.aborted) throw new Error('the Redis state migration lost its lease to another process (it stalled past the lease); start again');
          await MIGRATIONS[v]!({ redis, keys, syncs, log });
          await redis.hset(keys.stateVersion, 'version', v + 1);
          // (Step 1 says what it moved itself, and on a fresh Redis moves nothing.)
          if (v > 1) log.info({ from: v, to: v + 1 }, 'migrated the Redis state');
        }
      } finally {
        renewed.stop();
        await lease.release();
      }
      break;
    }
  }
  // Atomically: a process of a newer state version may have migrated since the check above.
  const [newer, newerBy] = await withScripts(redis).cdsStateOpen(keys.stateVersion, STATE_VERSION, packageVersion, new Date().toISOString());
  if (newer) throw new NewerStateError(keys.prefix, Number(newer), newerBy || null, packageVersion);
  if (found.version === STATE_VERSION && found.writtenBy && found.writtenBy !== packageVersion) {
    log.info({ stateVersion: STATE_VERSION, writtenBy: found.writtenBy, version: packageVersion }, 'the Redis state was last opened by another version of campaign-sync; its layout is the same');
  }
  return found;
}
