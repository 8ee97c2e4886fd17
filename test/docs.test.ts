// The README and docs/ against the code: every configuration block loads through the daemon's configuration schema,
// every command block marked runnable runs (and prints what its output block says), every relative link finds its
// file and heading. The markers are described in docs/contributing.md ("Documentation").
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig, parseConfig } from '../daemon/config.ts';

const ROOT = resolve(import.meta.dirname, '..');
const FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];

interface Block { file: string; line: number; lang: string; text: string; marker: string | null }

/** Each line of a Markdown file, and whether it is inside a fenced block (fence lines included). */
function scan(text: string): { line: string; fenced: boolean; opens: string | null; closes: boolean }[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const f = /^\s*(`{3,}|~{3,})(.*)$/.exec(line);
    if (f && f[1]![0] === '`' && f[2]!.includes('`')) return { line, fenced: fence !== null, opens: null, closes: false }; // a code span, not a fence
    if (fence === null && f) { fence = f[1]!; return { line, fenced: true, opens: f[2]!.trim(), closes: false }; }
    if (fence !== null && f && f[1]!.startsWith(fence) && f[1]![0] === fence[0] && !f[2]!.trim()) { fence = null; return { line, fenced: true, opens: null, closes: true }; }
    return { line, fenced: fence !== null, opens: null, closes: false };
  });
}

/** Fenced blocks of a Markdown file, each with the `<!-- … -->` comment on the line before its fence, if any. */
function blocksOf(file: string): Block[] {
  const lines = scan(readFileSync(join(ROOT, file), 'utf8'));
  const blocks: Block[] = [];
  lines.forEach((l, i) => {
    if (l.opens === null) return;
    const end = lines.findIndex((m, j) => j > i && m.closes);
    if (end < 0) throw new Error(`${file}:${i + 1}: a fence that is never closed`);
    const comment = i > 0 ? /^<!--\s*(.*?)\s*-->$/.exec(lines[i - 1]!.line.trim()) : null;
    blocks.push({ file, line: i + 1, lang: /^[\w-]*/.exec(l.opens)![0], text: lines.slice(i + 1, end).map((m) => m.line).join('\n'), marker: comment ? comment[1]! : null });
  });
  return blocks;
}

const BLOCKS = FILES.flatMap(blocksOf);
const where = (b: Block) => `${b.file}:${b.line}`;

/** Markers a fence may carry; anything else in a comment right before a fence is a typo. */
const MARKERS = [/^config$/, /^config part$/, /^config part: sync$/, /^not config: .+/, /^runnable$/, /^not runnable: .+/, /^output$/];

// ---- configuration ----

/** What a part is laid over: a dialer and one HubSpot sync (docs/contributing.md says so). */
const BASE = {
  dialer: { baseUrl: 'http://127.0.0.1:4000', accountId: 'acc-docs', apiToken: 'cdk_docs' },
  syncs: [{ id: 'docs', campaignId: 'campaign-docs', source: { type: 'hubspot', accessToken: 'token' }, mapping: { phone: 'phone' } }],
};

/** A value for every ${NAME} the text names (any non-empty string will do: the schema sees what it substitutes). */
function placeholders(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/\$\{(\w+)\}/g)].map((m) => [m[1]!, `placeholder-for-${m[1]}`]));
}

type Raw = Record<string, any>;
const overSync = (entry: Raw): Raw => {
  const sync: Raw = { ...structuredClone(BASE.syncs[0]), ...entry };
  if ('routes' in entry && !('campaignId' in entry)) delete sync.campaignId;
  return sync;
};

/** Dedents a block whose lines all share leading spaces (a sync's keys shown as they sit in a file). */
function dedent(text: string): string {
  const indents = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#')).map((l) => /^ */.exec(l)![0].length);
  const n = Math.min(...indents);
  return text.split('\n').map((l) => l.slice(Math.min(n, /^ */.exec(l)![0].length))).join('\n');
}

/** Loads a configuration block as its marker says, through the daemon's own loader; throws the daemon's message. */
function loadBlock(marker: string, text: string) {
  const env = placeholders(text);
  if (marker === 'config') {
    const dir = mkdtempSync(join(tmpdir(), 'cds-docs-'));
    try {
      const file = join(dir, 'sync.yaml');
      writeFileSync(file, text);
      return loadConfig(file, env);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const part = parseYaml(marker === 'config part: sync' ? dedent(text) : text, { prettyErrors: true }) as Raw;
  if (!part || typeof part !== 'object' || Array.isArray(part)) throw new Error('the block is not a mapping of keys');
  let raw: Raw;
  if (marker === 'config part: sync') {
    raw = { ...structuredClone(BASE), syncs: [overSync(part)] };
  } else {
    raw = { ...structuredClone(BASE), ...part };
    if (Array.isArray(part.syncs)) raw.syncs = part.syncs.map((s: Raw) => overSync(s));
  }
  return parseConfig(raw, 'the block', env);
}

describe('configuration blocks in the README and docs/', () => {
  const yaml = BLOCKS.filter((b) => b.lang === 'yaml' || b.lang === 'yml');
  const configs = yaml.filter((b) => b.marker?.startsWith('config'));

  it('are found (the marker parsing is not silently finding nothing)', () => {
    expect(configs.length).toBeGreaterThanOrEqual(10);
    expect(configs.some((b) => b.file === 'README.md' && b.marker === 'config')).toBe(true);
  });

  it('every YAML block is marked: a configuration, a part of one, or not configuration with a reason', () => {
    const unmarked = yaml.filter((b) => !b.marker || !/^(config|config part|config part: sync|not config: .+)$/.test(b.marker));
    expect(unmarked.map(where)).toEqual([]);
  });

  it.each(configs.map((b) => [where(b), b] as const))('%s loads through the configuration schema', (_, b) => {
    expect(() => loadBlock(b.marker!, b.text)).not.toThrow();
  });

  it('a block that stops parsing fails (the check is not vacuous)', () => {
    const whole = configs.find((b) => b.marker === 'config')!;
    expect(() => loadBlock('config', whole.text.replace(/^syncs:/m, 'sincs:'))).toThrow(/sincs/);
    expect(() => loadBlock('config part', 'syncs:\n  - id: x\n    onLeave: delet\n')).toThrow(/onLeave/);
    expect(() => loadBlock('config part: sync', '    routes:\n      - { campaignId: a, zones: [Mars/Base] }\n')).toThrow(/Mars\/Base/);
    // ${…} unquoted in a flow mapping: its braces end the mapping, and the YAML does not parse.
    expect(() => loadBlock('config part', 'syncs:\n  - source: { type: hubspot, accessToken: ${HUBSPOT_TOKEN} }\n')).toThrow();
  });
});

// ---- commands ----

/** ./dev finds Node 24 (this one) first, and refuses to install rather than run npm ci under a test. */
const ENV = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, DEV_NO_INSTALL: '1', NO_COLOR: '1' };
const trimLines = (s: string) => s.split('\n').map((l) => l.trimEnd()).join('\n').trim();

describe('command blocks in the README and docs/', () => {
  const sh = BLOCKS.filter((b) => ['sh', 'bash', 'shell', 'console'].includes(b.lang));
  const runnable = sh.filter((b) => b.marker === 'runnable');

  it('every shell block is marked runnable, or not runnable with a reason', () => {
    const unmarked = sh.filter((b) => !b.marker || !/^(runnable|not runnable: .+)$/.test(b.marker));
    expect(unmarked.map(where)).toEqual([]);
    expect(runnable.length).toBeGreaterThanOrEqual(5);
  });

  it.each(runnable.map((b) => [where(b), b] as const))('%s runs', (_, b) => {
    const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', b.text], { cwd: ROOT, env: ENV, encoding: 'utf8', timeout: 60_000 });
    expect(run.error).toBeUndefined();
    expect(run.status, `${where(b)} exited ${run.status}:\n${run.stderr}`).toBe(0);
    // The output block right after it (if marked) is what it prints.
    const next = BLOCKS[BLOCKS.indexOf(b) + 1];
    if (next?.marker === 'output' && next.file === b.file) expect(trimLines(run.stdout)).toBe(trimLines(next.text));
  }, 70_000);

  it('an output block follows a runnable block', () => {
    const orphans = BLOCKS.filter((b, i) => b.marker === 'output' && BLOCKS[i - 1]?.marker !== 'runnable');
    expect(orphans.map(where)).toEqual([]);
  });

  it('no comment right before a fence is a misspelt marker', () => {
    const unknown = BLOCKS.filter((b) => b.marker !== null && !MARKERS.some((m) => m.test(b.marker!)));
    expect(unknown.map((b) => `${where(b)}: <!-- ${b.marker} -->`)).toEqual([]);
  });

  it("the README's two commands hold ./dev test, which is what .ci/run runs", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = /^## The two commands\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
    expect(section).toBeDefined();
    const block = blocksOf('README.md').find((b) => b.lang === 'sh' && section!.includes(b.text))!;
    expect(block.text.split('\n').map((l) => l.split('#')[0]!.trim())).toEqual(['./dev start', './dev test']);
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^exec \.\/dev test$/m);
  });
});

// ---- links ----

/** A heading's anchor as GitHub makes it (github-slugger): its text as rendered, lower case, punctuation dropped. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // HTML tags
    .replace(/`([^`]*)`/g, '$1') // code spans: their content
    .replace(/(\*\*|\*)(?=\S)([^*]*?\S)\1/g, '$2'); // emphasis (intraword _ stays, as GitHub keeps it)
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const seen = new Map<string, number>();
  for (const { line, fenced } of scan(readFileSync(file, 'utf8'))) {
    if (fenced) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** Relative links of a Markdown file, outside code blocks and code spans. */
function linksOf(file: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  scan(readFileSync(join(ROOT, file), 'utf8')).forEach(({ line, fenced }, i) => {
    if (fenced) return;
    const prose = line.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line: i + 1 });
  });
  // A link whose text spans two lines: `[text\nmore](target)` is found by the same pattern on its last line.
  return links.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

describe('relative links in the README and docs/', () => {
  const all = FILES.flatMap((file) => linksOf(file).map((l) => ({ file, ...l })));

  it('are found', () => {
    expect(all.length).toBeGreaterThan(50);
  });

  it('point at files of the repository, and anchors at headings of those files', () => {
    const broken: string[] = [];
    for (const { file, line, target } of all) {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path ? resolve(ROOT, dirname(file), decodeURI(path)) : join(ROOT, file);
      const at = `${file}:${line} → ${target}`;
      if (relative(ROOT, resolved).startsWith('..')) { broken.push(`${at}: outside the repository`); continue; }
      if (!existsSync(resolved)) { broken.push(`${at}: no such file`); continue; }
      if (anchor === undefined) continue;
      if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) { broken.push(`${at}: an anchor into a file that is not Markdown`); continue; }
      if (!anchorsOf(resolved).has(anchor)) broken.push(`${at}: no heading with that anchor (there are: ${[...anchorsOf(resolved)].join(', ')})`);
    }
    expect(broken).toEqual([]);
  });

  it('slugs as GitHub does', () => {
    expect(slug('Calling windows (compliance)')).toBe('calling-windows-compliance');
    expect(slug('Tracing: the demo')).toBe('tracing-the-demo');
    expect(slug('react-admin (`ra-data-simple-rest`)')).toBe('react-admin-ra-data-simple-rest');
    expect(slug('List parameters (§4.1)')).toBe('list-parameters-41');
    expect(slug('The demo: `./dev start`')).toBe('the-demo-dev-start');
    expect(slug('On by default; tuning the rules or turning them off')).toBe('on-by-default-tuning-the-rules-or-turning-them-off');
  });
});
