// No import circles among daemon/, server/ and api/: the file that wires a room (app.ts) imports the others and none
// imports it back; types many modules share live below them (server/deps.ts, daemon/http/running-daemon.ts,
// daemon/crm/schemas.ts). Every relative import counts, type-only and dynamic ones too: a circle through a type is
// still two modules that each need the other.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const ROOMS = ['daemon', 'server', 'api'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (entry === 'node_modules') return [];
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The relative module specifiers a file imports: import and export ... from, import(), and import('...') types. */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((s) => s.startsWith('.'));
}

/** The import graph of the rooms' files (edges only between files of the graph). */
function importGraph(): Map<string, string[]> {
  const files = ROOMS.flatMap((room) => tsFiles(join(ROOT, room))).map((f) => relative(ROOT, f));
  const known = new Set(files);
  return new Map(files.map((file) => [file, [...new Set(specifiers(join(ROOT, file))
    .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)))
    .filter((target) => known.has(target)))]]));
}

/** The strongly connected components with more than one file (or a file importing itself): Tarjan's algorithm. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next); low.set(v, next); next++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) { connect(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
    if (component.length > 1 || graph.get(v)!.includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return found;
}

/** One path round a component, for the message: a -> b -> ... -> a (breadth-first from its first file back to it). */
function pathRound(component: string[], graph: Map<string, string[]>): string {
  const inside = new Set(component);
  const start = component[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start].join(' -> ');
      }
      if (!from.has(w)) { from.set(w, v); queue.push(w); }
    }
  }
  return component.join(', ');
}

describe('imports among daemon/, server/ and api/', () => {
  const graph = importGraph();

  it('walk every file', () => {
    // A walk that found nothing would pass the next test for the wrong reason.
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('daemon/app.ts')).toContain('daemon/http/server.ts');
    expect(graph.get('server/app.ts')).toContain('server/routes/numbers.ts');
  });

  it('form no circle', () => {
    const found = circles(graph).map((c) => `${c.length} files: ${pathRound(c, graph)}`);
    expect(found, `import circles (break each by moving what the files share below them):\n${found.join('\n')}`).toEqual([]);
  });

  it('are found when there is one', () => {
    // The detector itself, on a small graph: a -> b -> c -> a, and d importing itself.
    const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'e']], ['d', ['d']], ['e', []]]);
    expect(circles(g).map((c) => pathRound(c, g))).toEqual(['a -> b -> c -> a', 'd -> d']);
  });
});
