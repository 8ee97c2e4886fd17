// The command line of a stand-in run as its own process: string options or a usage error, checked integers and shares, a clean stop on SIGINT/SIGTERM.
import { parseArgs } from 'node:util';

export type StandInArgs = Record<string, string | undefined>;

/** Parses --name value options (all strings) plus --help; exits 2 with the usage on a bad option, returns null after printing --help. */
export function parseStandInArgs(usage: string, options: Record<string, { default?: string }>): StandInArgs | null {
  let values;
  try {
    values = parseArgs({
      options: {
        ...Object.fromEntries(Object.entries(options).map(([name, o]) => [name, { type: 'string' as const, ...o }])),
        help: { type: 'boolean', default: false },
      },
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  const { help, ...rest } = values;
  if (help) {
    console.log(usage);
    return null;
  }
  return rest as StandInArgs;
}

/** An integer option of at least min; exits 2 with the usage otherwise. */
export function intOption(args: StandInArgs, name: string, min: number, usage: string): number {
  const raw = args[name];
  const n = Number(raw);
  if (raw === undefined || raw === '' || !Number.isInteger(n) || n < min) {
    console.error(`--${name} must be an integer >= ${min}; got ${raw}\n${usage}`);
    process.exit(2);
  }
  return n;
}

/** An optional share between 0 and 1 (undefined when absent); exits 2 with the usage otherwise. */
export function shareOption(args: StandInArgs, name: string, usage: string): number | undefined {
  const raw = args[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw === '' || !(n >= 0 && n <= 1)) {
    console.error(`--${name} must be a share between 0 and 1; got ${raw}\n${usage}`);
    process.exit(2);
  }
  return n;
}

/** Optional NANP area codes separated by commas (`--area-codes 212,808,907`); exits 2 with the usage otherwise. */
export function areaCodesOption(args: StandInArgs, name: string, usage: string): number[] | undefined {
  const raw = args[name];
  if (raw === undefined) return undefined;
  const codes = raw.split(',').map(Number);
  if (codes.some((a) => !Number.isInteger(a) || a < 200 || a > 999)) {
    console.error(`--${name} takes NANP area codes separated by commas (212,808,907); got ${raw}\n${usage}`);
    process.exit(2);
  }
  return codes;
}

/** Closes the stand-in and exits 0 on SIGINT or SIGTERM. */
export function stopOnSignals(close: () => Promise<void>): void {
  const stop = () => { void close().then(() => process.exit(0)); };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
