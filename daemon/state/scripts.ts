// The one loader of the state's Lua scripts (commands/<name>-<number of keys>.lua, as BullMQ lays out its own):
// reads them once, inlines their `--- @include "includes/x"` lines, and defines each as an ioredis command on a
// connection. The typed calls are in sync-state.ts, lease.ts, window-state.ts, state-version.ts, notify-state.ts and crm/http.ts (the
// gates); nothing else runs Lua.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Redis, Result } from 'ioredis';
import { inSpan, tracing } from '../telemetry.ts';

const DIR = join(import.meta.dirname, 'commands');

export interface ScriptSource { name: string; numberOfKeys: number; lua: string }

function inline(lua: string, seen: Set<string>): string {
  return lua.replace(/^--- @include "([\w/-]+)"\s*$/gm, (_, path: string) => {
    if (seen.has(path)) return ''; // included once, like a module
    seen.add(path);
    return inline(readFileSync(join(DIR, `${path}.lua`), 'utf8'), seen);
  });
}

/** Every script with its includes inlined (also used by the scripts' own tests). */
export const SCRIPTS: readonly ScriptSource[] = readdirSync(DIR).filter((f) => f.endsWith('.lua')).map((file) => {
  const m = /^(\w+)-(\d+)\.lua$/.exec(file);
  if (!m) throw new Error(`daemon/state/commands/${file}: a script is named <name>-<number of keys>.lua`);
  return { name: m[1]!, numberOfKeys: Number(m[2]), lua: inline(readFileSync(join(DIR, file), 'utf8'), new Set()) };
});

type Arg = string | number;
declare module 'ioredis' {
  interface RedisCommander<Context> {
    cdsApplyContacts(contacts: string, phones: string, dirty: string, doNotCall: string, ...args: Arg[]): Result<[number, number, number], Context>;
    cdsPlan(...keysAndArgs: Arg[]): Result<[string[], number, number, string[], string[], string[], string[]], Context>;
    cdsDryPlan(have: string, ...args: Arg[]): Result<string[], Context>;
    cdsRecord(...keysAndArgs: Arg[]): Result<[number, number, number, number], Context>;
    cdsReconcile(...keysAndArgs: Arg[]): Result<[number, number, number], Context>;
    cdsForget(...keysAndArgs: Arg[]): Result<number, Context>;
    cdsGateTake(gate: string, intervalMs: number, burst: number): Result<[number, number], Context>;
    cdsGateHold(gate: string, ms: number): Result<number, Context>;
    cdsLease(lease: string, token: string, ms: number): Result<[string, number], Context>;
    cdsWindowTakeOut(takenOut: string, dirty: string, ...args: Arg[]): Result<number, Context>;
    cdsWindowAdmit(evidence: string, groups: string, ...args: Arg[]): Result<number, Context>;
    cdsWindowRelease(capped: string, takenOut: string, dirty: string, now: number): Result<number, Context>;
    cdsWindowProbe(have: string, inflight: string, batches: string): Result<[number, number, number], Context>;
    cdsWindowJudge(held: string, foreign: string, meta: string, ...args: Arg[]): Result<number, Context>;
    cdsStateOpen(stateVersion: string, version: number, writtenBy: string, at: string): Result<[number, string], Context>;
    cdsClaim(inflight: string, batches: string, batchId: string, token: string, seen: string, deadAfterMs: number): Result<[string, number], Context>;
    cdsNotifyAlert(alerts: string, fingerprint: string, found: 'firing' | 'clear' | 'queued', now: number, n: number, alert: string): Result<string, Context>;
  }
}

const loaded = new WeakSet<Redis | Cluster>();

/** Defines the scripts on a connection (once; ioredis sends EVALSHA and falls back to EVAL after a Redis restart). */
export function withScripts<R extends Redis | Cluster>(redis: R): R {
  if (!loaded.has(redis)) {
    for (const s of SCRIPTS) {
      const command = `cds${s.name[0]!.toUpperCase()}${s.name.slice(1)}`;
      redis.defineCommand(command, { numberOfKeys: s.numberOfKeys, lua: s.lua });
      // Each script's call is a span while tracing (not every Redis command: those are many and say little).
      if (tracing()) {
        const target = redis as unknown as Record<string, (this: unknown, ...args: unknown[]) => Promise<unknown>>;
        const call = target[command]!;
        // Pipelines copy the connection's script functions: a call queued on one (`this` the pipeline) is no span.
        target[command] = function (this: unknown, ...args: unknown[]) {
          if (this !== redis) return call.apply(this, args);
          return inSpan(`redis ${s.name}`, () => ({ 'db.system.name': 'redis', 'db.operation.name': 'EVALSHA', 'cds.script': s.name }),
            () => call.apply(redis, args), { kind: 'client' });
        };
      }
    }
    loaded.add(redis);
  }
  return redis;
}
