// Where a configuration file stops being YAML, and why, in words an operator can act on. The parser's own message
// names where it noticed, which for a list or mapping left open (`[`, `{`) is lines later; and it ends on a colon
// before a quote of the file (which may hold a pasted secret, so it is never shown).
import { CST, Parser, YAMLParseError } from 'yaml';

/** The parser's messages, as a reason a person reads (matched on their beginning). */
const REASONS: Array<[RegExp, string]> = [
  [/^Implicit keys need to be on a single line/, 'this line is not "key: value" (is the colon after the key missing?)'],
  [/^Nested mappings are not allowed in compact mappings/, 'this value holds ": ", which reads as a second key on the line: put the value in quotes'],
  [/^Tabs are not allowed as indentation/, 'a tab in the indentation: YAML indents with spaces only'],
  [/^All mapping items must start at the same column/, 'this key is not indented as the keys before it in its block'],
  [/^All sequence items must start at the same column/, 'this list item is not indented as the items before it'],
  [/^Sequence item without - indicator/, 'this line is indented as no block above it is: indent it as the keys it belongs with'],
  [/^Map keys must be unique/, 'this key is given twice in the same block'],
  [/^Unexpected flow-(map|seq)-(start|end)/, 'a "{", "}", "[" or "]" where a value ends: a value that holds one (or a ${…} inside { … }) must be quoted'],
];

/**
 * The first token before `offset` that opens and never closes: a flow collection (`[…]`, `{…}`) or a quoted string.
 * The parser notices either only where the next line no longer fits (or at the file's end).
 */
function unclosed(text: string, offset: number): { offset: number; what: string } | null {
  let found: { offset: number; what: string } | null = null;
  const consider = (token: CST.Token | undefined) => {
    if (!token || token.offset > offset || (found && found.offset <= token.offset)) return;
    if (token.type === 'flow-collection') {
      const [opener, closer] = token.start.source === '[' ? ['[', ']'] : ['{', '}'];
      if (!token.end.some((t) => t.source === closer)) found = { offset: token.offset, what: `this "${opener}" is never closed: end it with "${closer}" (lines it goes on over are indented more than its key)` };
      for (const item of token.items) { consider(item.key ?? undefined); consider(item.value); }
    } else if (token.type === 'double-quoted-scalar' || token.type === 'single-quoted-scalar') {
      const quote = token.source[0]!;
      if (token.source.length < 2 || !token.source.endsWith(quote)) found = { offset: token.offset, what: `the quote (${quote}) that opens here is never closed` };
    }
  };
  for (const token of new Parser().parse(text)) {
    if (token.type !== 'document') continue;
    consider(token.value);
    CST.visit(token, (item) => { consider(item.key ?? undefined); consider(item.value); });
  }
  return found;
}

/** "line L, column C: reason" for an error of the yaml package's parse of `text`; other errors' first line. */
export function yamlErrorText(text: string, err: unknown): string {
  if (!(err instanceof YAMLParseError)) return (err as Error).message.split('\n')[0]!;
  const at = (offset: number) => {
    const before = text.slice(0, offset);
    return `line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
  };
  const open = unclosed(text, err.pos[0]);
  if (open) return `${at(open.offset)}: ${open.what}`;
  const said = err.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '').trim();
  const reason = REASONS.find(([re]) => re.test(said))?.[1] ?? said.replace(/:$/, '');
  return `${at(err.pos[0])}: ${reason}`;
}
