// The README and docs/ against the code: every configuration block loads through the daemon's configuration schema,
// every command block marked runnable runs (and prints what its output block says), every relative link finds its
// file and heading, every repository path they name exists, nothing points outside the repository, and the API page
// states what the contract in api/ and the server do. The rules are described in docs/contributing.md ("Documentation").
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { maxHeaderSize } from 'node:http';
import { loadConfig, parseConfig } from '../daemon/config.ts';
import { CAMPAIGN_STATES, NUMBER_DETAIL_STATUSES, ROLE_OPERATIONS, ROLES, SETTABLE_STATES } from '../api/enums.ts';
import { MAX_VAR_NAME, MAX_VAR_VALUE, MAX_VARIABLES } from '../api/limits.ts';
import { ID_FILTERS, LIST_SPECS, MAX_PAGE_SIZE } from '../api/list-query.ts';
import { API_OPERATIONS } from '../api/operations.ts';
import { PROBLEMS, problemType, type ProblemKind } from '../api/problems.ts';
import { canMove, isNoOp } from '../server/campaign-states.ts';
import { UPLOAD_REJECTIONS_SHOWN } from '../server/csv-upload.ts';
import { DEFAULT_LIMITS } from '../server/deps.ts';
import { DEFAULT_SETTINGS } from '../server/dialer/model.ts';
import { DEFAULT_SENDER } from '../server/events.ts';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.ts';
import { MAX_JSON_DEPTH } from '../server/request-decoding.ts';

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

/**
 * A value for every ${NAME} the text names (any non-empty string will do: the schema sees what it substitutes; a name
 * ending in _URL gets an https URL, as a secret URL such as a Slack webhook's is given whole).
 */
function placeholders(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/\$\{(\w+)\}/g)].map((m) => [m[1]!, m[1]!.endsWith('_URL') ? `https://placeholder.example/${m[1]}` : `placeholder-for-${m[1]}`]));
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

/** Links of a Markdown file, outside code blocks and code spans: relative ones and URLs alike. */
function targetsOf(file: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  scan(readFileSync(join(ROOT, file), 'utf8')).forEach(({ line, fenced }, i) => {
    if (fenced) return;
    const prose = line.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line: i + 1 });
  });
  // A link whose text spans two lines: `[text\nmore](target)` is found by the same pattern on its last line.
  return links;
}

const isUrl = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** Relative links of a Markdown file, outside code blocks and code spans. */
function linksOf(file: string): { target: string; line: number }[] {
  return targetsOf(file).filter((l) => !isUrl(l.target));
}

/** Why `#anchor` does not lead into `file` (absolute), or null when it does. */
function anchorProblem(file: string, anchor: string): string | null {
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return 'an anchor into a file that is not Markdown';
  if (anchorsOf(file).has(anchor)) return null;
  return `no heading with that anchor (there are: ${[...anchorsOf(file)].join(', ')})`;
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
      const problem = anchorProblem(resolved, anchor);
      if (problem) broken.push(`${at}: ${problem}`);
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

// ---- paths, section names, and nothing outside the repository ----

/** The READMEs the packages ship in their tarballs: read without the repository, so they link it by its URL. */
const PACKAGE_READMES = ['server/README.md', 'daemon/README.md', 'n8n/README.md'];
const ALL_DOCS = [...FILES, ...PACKAGE_READMES];

/** The repository's address as package.json declares it (`https://github.com/owner/name`). */
const REPO_URL = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { repository: { url: string } })
  .repository.url.replace(/^git\+/, '').replace(/\.git$/, '');

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** .gitignore's patterns: paths a command generates (`release/`, `n8n/dist/`, `.tools/`), which a checkout may not hold yet. */
const IGNORED = readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
  .map((pattern) => {
    const body = pattern.replace(/^\//, '').replace(/\/$/, '');
    return { body, anchored: pattern.startsWith('/') || body.includes('/'), re: new RegExp(`^${body.split('*').map(escapeRe).join('[^/]*')}$`) };
  });

function generated(path: string): boolean {
  const parts = path.split('/').filter(Boolean);
  return parts.some((part, i) => IGNORED.some(({ anchored, re }) => re.test(anchored ? parts.slice(0, i + 1).join('/') : part)));
}

/** Top-level names a path may start with: what the checkout holds, and what its commands generate there. */
const TOP = new Set([...readdirSync(ROOT), ...IGNORED.filter((p) => !p.body.includes('/') && !p.body.includes('*')).map((p) => p.body)]);

/** Names of the repository's own files (not dependencies, not generated), for file names given without a folder. */
function treeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.name === '.git' || generated(relative(ROOT, path))) return [];
    return e.isDirectory() ? treeFiles(path) : [e.name];
  });
}
const FILE_NAMES = new Set(treeFiles(ROOT));

/** Code spans of a Markdown file's prose, except the text of a link to a URL (a file of another project). */
function spansOf(file: string): { text: string; line: number }[] {
  const spans: { text: string; line: number }[] = [];
  scan(readFileSync(join(ROOT, file), 'utf8')).forEach(({ line, fenced }, i) => {
    if (fenced) return;
    for (const m of line.matchAll(/(`+)(.+?)\1/g)) {
      if (/^\]\(\s*<?[a-z][a-z0-9+.-]*:/i.test(line.slice(m.index + m[0].length))) continue;
      spans.push({ text: m[2]!.trim(), line: i + 1 });
    }
  });
  return spans;
}

const FILE_EXTENSION = /\.(ts|js|mjs|json|jsonl|md|lua|ya?ml|csv|txt|conf|tgz|Containerfile)$/;

/**
 * Why a code span that names a path of the repository names none, or null (also when it names no repository path at
 * all: a URL path such as `/v1`, a time zone, a media type, a command with its arguments). A path is named from the
 * repository's root (`daemon/state/keys.ts`, `n8n/nodes/`), or as a bare file name (`keys.ts`) that some folder holds;
 * `<placeholders>` stand for any name (`daemon/crm/<name>/`: the folder before them must exist).
 */
export function pathProblem(file: string, span: string): string | null {
  let s = span;
  if (/[\s:=,]/.test(s) || !/^[\w.]/.test(s)) return null;
  if (s.startsWith('../')) {
    const resolved = resolve(ROOT, dirname(file), s);
    if (relative(ROOT, resolved).startsWith('..')) return 'a path outside the repository';
    return existsSync(resolved) ? null : `no such path (it reads as ${relative(ROOT, resolved)} from ${file})`;
  }
  if (s.startsWith('./')) s = s.slice(2);
  if (!s.includes('/')) {
    if (!/^\w[\w.-]*\.(ts|lua|md)$/.test(s)) return null;
    return FILE_NAMES.has(s) ? null : 'no file of that name in the repository';
  }
  if (!TOP.has(s.split('/')[0]!) && !s.endsWith('/') && !FILE_EXTENSION.test(s)) return null;
  const cut = s.search(/[<{*…]/);
  const path = cut < 0 ? s : s.slice(0, s.lastIndexOf('/', cut) + 1);
  if (!path) return null;
  if (existsSync(join(ROOT, path)) || generated(path)) return null;
  return TOP.has(path.split('/')[0]!) ? 'no such path in the repository' : 'no such path at the top of the repository (name it from the root)';
}

/** The repository's address written out in prose (not as a link's target), which GitHub and npm link too. */
function addressesOf(file: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  scan(readFileSync(join(ROOT, file), 'utf8')).forEach(({ line, fenced }, i) => {
    if (fenced) return;
    for (const m of line.matchAll(new RegExp(`(?<!\\]\\(\\s*<?)${escapeRe(REPO_URL)}[^\\s)>\\]\`"']*`, 'g'))) {
      found.push({ target: m[0].replace(/[.,;:]+$/, ''), line: i + 1 });
    }
  });
  return found;
}

/** A page's title: its first heading, without a leading "The". */
const titleOf = (file: string) => (/^#\s+(.*)$/m.exec(readFileSync(join(ROOT, file), 'utf8'))?.[1] ?? '').replace(/^The\s+/i, '').toLowerCase();

/** What a section may be called by name in a file: its headings, and the bold words that open a paragraph or item. */
function sectionNames(file: string): string[] {
  const names: string[] = [];
  for (const { line, fenced } of scan(readFileSync(file, 'utf8'))) {
    if (fenced) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) names.push(h[1]!);
    for (const m of line.matchAll(/\*\*([^*]+)\*\*/g)) names.push(m[1]!);
  }
  return names.map((n) => n.replace(/`/g, '').toLowerCase());
}

/**
 * Why the sections a file names in words are not there: `see Page > Section` (a page's title and one of its headings),
 * `see "Name"`, `"Name" above` / `below` (a heading or bold lead-in of the same file), `"Name" in [Page](page.md#…)`.
 */
function sectionReferenceProblems(file: string): string[] {
  // Code spans in prose show syntax, not references; fenced blocks are read whole (a shell comment may send the reader on).
  const text = scan(readFileSync(join(ROOT, file), 'utf8')).map(({ line, fenced }) => (fenced ? line : line.replace(/(`+)[^`]*?\1/g, '``'))).join('\n');
  const problems: string[] = [];
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  const pages = FILES.filter((f) => f.startsWith('docs/'));
  for (const m of text.matchAll(/\b[Ss]ee ([A-Z][\w-]*(?: [\w-]+)*) > ([A-Z][\w-]*(?: [\w-]+)*)/g)) {
    const at = `${file}:${lineAt(m.index)}: "${m[0]}"`;
    const page = pages.find((p) => titleOf(p) === m[1]!.replace(/^The\s+/i, '').toLowerCase());
    if (!page) { problems.push(`${at}: no page is titled ${m[1]} (link the page instead)`); continue; }
    if (!anchorsOf(join(ROOT, page)).has(slug(m[2]!))) problems.push(`${at}: ${page} has no heading ${m[2]}`);
  }
  const named = (name: string, target: string, index: number) => {
    if (!sectionNames(target).some((n) => n.startsWith(name.toLowerCase()))) {
      problems.push(`${file}:${lineAt(index)}: "${name}" is no heading or bold lead-in of ${relative(ROOT, target)}`);
    }
  };
  for (const m of text.matchAll(/"([^"\n]+)" in \[[^\]]*\]\(([^)#\s]*)(?:#[^)]*)?\)/g)) {
    named(m[1]!, m[2] ? resolve(ROOT, dirname(file), m[2]) : join(ROOT, file), m.index);
  }
  for (const m of text.matchAll(/\b[Ss]ee "([^"\n]+)"(?! in \[)|"([^"\n]+)" (?:above|below)\b/g)) named((m[1] ?? m[2])!, join(ROOT, file), m.index);
  return problems;
}

describe('paths, names and addresses in the README, docs/ and the packages\' READMEs', () => {
  it('name nothing outside the repository (no ../shared: a user of the repository has only the repository)', () => {
    const outside = ALL_DOCS.flatMap((file) => readFileSync(join(ROOT, file), 'utf8').split('\n')
      .flatMap((line, i) => (/\.\.\/shared\b|\bshared\/(spec|GUIDE)/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])));
    expect(outside).toEqual([]);
  });

  it("cite no section of the API's specification (§4.1), which a user does not have: they link the API page", () => {
    const cited = ALL_DOCS.flatMap((file) => readFileSync(join(ROOT, file), 'utf8').split('\n')
      .flatMap((line, i) => (/(?<!\bissues? \d+ )§\d/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])));
    expect(cited).toEqual([]);
  });

  it('every repository path in a code span exists (from the root, or a file name some folder holds)', () => {
    const wrong = ALL_DOCS.flatMap((file) => spansOf(file).flatMap(({ text, line }) => {
      const problem = pathProblem(file, text);
      return problem ? [`${file}:${line}: \`${text}\`: ${problem}`] : [];
    }));
    expect(wrong).toEqual([]);
  });

  it('the path check finds what it should, and only that', () => {
    expect(pathProblem('README.md', 'nodes/')).toMatch(/top of the repository/);
    expect(pathProblem('README.md', 'n8n/nodes/')).toBeNull();
    expect(pathProblem('README.md', '../shared/spec/campaign-dialing-api.md')).toMatch(/outside the repository/);
    expect(pathProblem('docs/contributing.md', '../shared/GUIDE.md')).toMatch(/no such path/);
    expect(pathProblem('docs/x.md', 'daemon/crm/<name>/')).toBeNull();
    expect(pathProblem('docs/x.md', 'crm/registry.ts')).toMatch(/top of the repository/);
    expect(pathProblem('docs/x.md', 'daemon/sync/nowhere.ts')).toMatch(/no such path/);
    expect(pathProblem('docs/x.md', 'release/campaign-sync-<version>.tgz')).toBeNull(); // generated by ./dev release
    expect(pathProblem('docs/x.md', 'n8n/dist/')).toBeNull();
    expect(pathProblem('docs/x.md', 'nowhere.ts')).toMatch(/no file of that name/);
    for (const other of ['/v1/openapi.json', 'America/New_York', 'text/plain', 'http/json', '~/.n8n/nodes', './dev start', '@fastify/otel', 'accounts/{account_id}/campaigns']) {
      expect(pathProblem('docs/x.md', other), other).toBeNull();
    }
  });

  it('a section named in words is there (see Page > Section, see "Name", "Name" above)', () => {
    expect(ALL_DOCS.flatMap(sectionReferenceProblems)).toEqual([]);
  });

  it('the packages\' READMEs have no relative links (they ship alone); links into the repository by its URL find their file and heading', () => {
    const broken: string[] = [];
    for (const file of ALL_DOCS) {
      for (const { target, line } of [...targetsOf(file), ...addressesOf(file)]) {
        const at = `${file}:${line} → ${target}`;
        if (!isUrl(target)) {
          if (PACKAGE_READMES.includes(file)) broken.push(`${at}: a relative link in a README that ships without the repository`);
          continue;
        }
        if (!target.startsWith(REPO_URL)) continue;
        const m = /^(?:\/(?:blob|tree)\/[^/]+\/([^#]*))?(?:#(.*))?$/.exec(target.slice(REPO_URL.length));
        if (!m) { broken.push(`${at}: not an address of a file of the repository`); continue; }
        const path = join(ROOT, m[1] ? decodeURI(m[1]) : 'README.md');
        if (!existsSync(path)) { broken.push(`${at}: no such file`); continue; }
        const problem = m[2] === undefined ? null : anchorProblem(path, m[2]);
        if (problem) broken.push(`${at}: ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

// ---- the API page against the contract ----

const API_PAGE = 'docs/api.md';
const apiText = () => readFileSync(join(ROOT, API_PAGE), 'utf8');

/** The text under a heading, up to the next heading of the same or a higher level. */
function section(text: string, title: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^(#{1,6})\\s+${escapeRe(title)}\\s*$`).test(l));
  if (start < 0) throw new Error(`${API_PAGE} has no heading "${title}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+\s/.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** Code spans of a text; `startDate_{gte,gt,lte,lt}` counts as its four keys. */
function codeSpans(text: string): string[] {
  return [...text.matchAll(/(`+)(.+?)\1/g)].flatMap((m) => {
    const t = m[2]!.trim();
    const braces = /^(\w+)_\{([\w,]+)\}$/.exec(t);
    return braces ? braces[2]!.split(',').map((op) => `${braces[1]}_${op}`) : [t];
  });
}

/** The rows of the Markdown tables of a text, as trimmed cells (header and separator rows included). */
const tableRows = (text: string) => text.split('\n').filter((l) => l.startsWith('|')).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));

const roleName = (role: string) => role.replace(/([a-z])([A-Z])/g, '$1 $2');
const thousands = (n: number) => n.toLocaleString('en-US');
const mebibytes = (n: number) => `${n / 1024 / 1024} MiB`;
const DAY_NAMES: Record<string, string> = { Mon: 'Monday', Tue: 'Tuesday', Wed: 'Wednesday', Thu: 'Thursday', Fri: 'Friday', Sat: 'Saturday', Sun: 'Sunday' };
/** `Monday to Saturday` for a run of days, else the days listed. */
function daysInWords(days: readonly string[]): string {
  const order = Object.keys(DAY_NAMES);
  const idx = days.map((d) => order.indexOf(d)).sort((a, b) => a - b);
  const run = idx.every((d, i) => i === 0 || d === idx[i - 1]! + 1);
  if (run && idx.length >= 3) return `${DAY_NAMES[order[idx[0]!]!]} to ${DAY_NAMES[order[idx.at(-1)!]!]}`;
  return listingWords(idx.map((d) => DAY_NAMES[order[d]!]!));
}
const listingWords = (w: string[]) => (w.length < 2 ? w.join('') : `${w.slice(0, -1).join(', ')} and ${w.at(-1)}`);

describe(`the API page (${API_PAGE}) against the contract in api/ and the server`, () => {
  it('is linked from the README', () => {
    expect(linksOf('README.md').map((l) => l.target)).toContain(API_PAGE);
  });

  it('lists every operation with its method, path, roles and success status', () => {
    const rows = tableRows(section(apiText(), 'Operations'));
    const wrong: string[] = [];
    for (const op of API_OPERATIONS) {
      const request = `\`${op.method} ${op.path}\``;
      const row = rows.find((r) => r[1] === request);
      if (!row) { wrong.push(`${request}: no row`); continue; }
      const roles = op.operation === null ? ['none: public'] : ROLES.filter((r) => ROLE_OPERATIONS[r].includes(op.operation!)).map(roleName);
      if (row[2]!.split(',').map((r) => r.trim()).join() !== roles.join()) wrong.push(`${request}: roles "${row[2]}", the server's: ${roles.join(', ')}`);
      if (!row[3]!.startsWith(String(op.success.status))) wrong.push(`${request}: success "${row[3]}", the server's: ${op.success.status}`);
    }
    expect(wrong).toEqual([]);
    expect(rows.length - 2).toBe(API_OPERATIONS.length);
  });

  it('gives each operation a section with its request and the statuses of its own failures', () => {
    const wrong: string[] = [];
    for (const op of API_OPERATIONS.filter((o) => o.operation !== null)) {
      const text = section(apiText(), op.summary);
      if (!text.includes(`\`${op.method} ${op.path}\``)) wrong.push(`${op.summary}: does not name ${op.method} ${op.path}`);
      for (const p of op.problems) {
        if (!new RegExp(`\\b${PROBLEMS[p.kind].status}\\b`).test(text)) wrong.push(`${op.summary}: no ${PROBLEMS[p.kind].status} (${p.when})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("names each list's filter keys and sort fields, and no others", () => {
    const wrong: string[] = [];
    for (const op of API_OPERATIONS.filter((o) => o.list)) {
      const spec = LIST_SPECS[op.list!.resource];
      const text = section(apiText(), op.summary);
      const keys = [...new Set([...Object.keys(spec.filters), ...Object.keys(ID_FILTERS), ...Object.keys(spec.aliases)])].sort();
      const table = tableRows(text).filter((r) => r[0]?.includes('`'));
      const named = [...new Set([...table.flatMap((r) => codeSpans(r[0]!)), ...codeSpans(text).filter((k) => keys.includes(k))])].sort();
      if (named.join() !== keys.join()) wrong.push(`${op.summary}: filter keys ${named.join(', ')}; the server's: ${keys.join(', ')}`);
      const sortLine = /^Sort fields:([\s\S]*?)(?:\n\n|(?![\s\S]))/m.exec(text)?.[1];
      const sorts = sortLine ? codeSpans(sortLine) : [];
      if (sorts.join() !== spec.sortFields.join()) wrong.push(`${op.summary}: sort fields ${sorts.join(', ')}; the server's: ${spec.sortFields.join(', ')}`);
    }
    expect(wrong).toEqual([]);
  });

  it('names every campaign state and number status, and the transition table is the server\'s', () => {
    const page = apiText();
    expect(codeSpans(section(page, 'Campaign states'))).toEqual(expect.arrayContaining([...CAMPAIGN_STATES]));
    expect(codeSpans(section(page, 'Number statuses'))).toEqual(expect.arrayContaining([...NUMBER_DETAIL_STATUSES]));
    const [header, , ...rows] = tableRows(section(page, 'Campaign state transitions'));
    expect(header!.slice(1)).toEqual([...SETTABLE_STATES]);
    expect(rows.map((r) => r[0])).toEqual([...CAMPAIGN_STATES]);
    for (const [from, ...cells] of rows as [typeof CAMPAIGN_STATES[number], ...string[]][]) {
      SETTABLE_STATES.forEach((to, i) => {
        const server = isNoOp(from, to) ? 'no-op 200' : canMove(from, to) ? '✓' : '409';
        expect(cells[i], `${from} → ${to}`).toBe(server);
      });
    }
  });

  it('lists every problem type with its status', () => {
    const rows = tableRows(section(apiText(), 'Errors: problem details')).filter((r) => r[0]?.startsWith('`/problems/'));
    const page = rows.map((r) => `${r[0]} ${r[1]}`).sort();
    const server = (Object.keys(PROBLEMS) as ProblemKind[]).map((k) => `\`${problemType(k)}\` ${PROBLEMS[k].status}`).sort();
    expect(page).toEqual(server);
  });

  it("states the server's rate limit, maximums, event delivery and a new campaign's calling hours", () => {
    const page = apiText();
    expect(section(page, 'Rate limits')).toContain(`${DEFAULT_RATE_LIMIT.rate} requests per second with bursts of ${DEFAULT_RATE_LIMIT.burst}`);
    const sizes = new Map(tableRows(section(page, 'Sizes and maximums')).map((r) => [r[0]!, r[1]!]));
    const expected: [string, string[]][] = [
      ['records in a page (`range`)', [thousands(MAX_PAGE_SIZE)]],
      ['numbers in one add', [thousands(DEFAULT_LIMITS.numbersPerRequest)]],
      ['ids in one delete of campaigns or numbers', [thousands(DEFAULT_LIMITS.idsPerDelete)]],
      ['a JSON body', [mebibytes(DEFAULT_LIMITS.jsonBodyBytes)]],
      ['a CSV upload', [mebibytes(DEFAULT_LIMITS.uploadBytes), thousands(UPLOAD_REJECTIONS_SHOWN)]],
      ['variables of a number (`varNames`, `varValues`, `varCount`)', [String(MAX_VARIABLES)]],
      ["a variable's name, value", [thousands(MAX_VAR_NAME), thousands(MAX_VAR_VALUE)]],
      ['nesting of a JSON body', [String(MAX_JSON_DEPTH)]],
      ['request line and headers', [`${maxHeaderSize / 1024} KiB`]],
    ];
    for (const [what, figures] of expected) {
      expect(sizes.get(what), what).toBeDefined();
      for (const f of figures) expect(sizes.get(what), what).toContain(f);
    }
    const events = section(page, 'Events and their signing');
    const types = [...readFileSync(join(ROOT, 'server/events.ts'), 'utf8').match(/export type EventType = ([^;]+);/)![1]!.matchAll(/'([\w.]+)'/g)].map((m) => m[1]!);
    expect(types.length).toBeGreaterThan(0);
    for (const t of types) expect(codeSpans(events)).toContain(t);
    expect(events).toContain(`${DEFAULT_SENDER.maxAttempts} attempts`);
    expect(events).toContain(`${DEFAULT_SENDER.timeoutMs / 1000} s at most`);
    const { from, to, days } = DEFAULT_SETTINGS.callingHours;
    for (const [file, text] of [[API_PAGE, section(page, 'Calling hours of a new campaign')], ['docs/reference-server.md', readFileSync(join(ROOT, 'docs/reference-server.md'), 'utf8')]] as const) {
      const words = text.replace(/\*\*/g, '').replace(/\s+/g, ' ');
      expect(words, file).toContain(`${from}–${to}`);
      expect(words, file).toContain(daysInWords(days));
    }
  });
});
