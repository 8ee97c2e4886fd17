// Seeded phone-number inputs for every calling code in libphonenumber-js/min's metadata: valid, nearly valid and junk.
//
// Valid-looking numbers are drawn from the metadata's own patterns (the national number pattern, each number
// type's pattern, leading digits, national prefixes) by a small sampler of the regular-expression subset the
// metadata uses: digits, [classes], \d, (?:…) and (…) groups, |, ?, {n} and {n,m}.
import metadataJson from 'libphonenumber-js/metadata.min.json';
import { mulberry32 as seeded } from '../../crm-stand-ins/contacts.ts';

type PlanJson = readonly unknown[];
const metadata = metadataJson as unknown as {
  country_calling_codes: Record<string, readonly string[]>;
  countries: Record<string, PlanJson>;
  nonGeographic?: Record<string, PlanJson>;
};

// ------------------------------------------------------------------------------------- pattern sampler

type Node =
  | { kind: 'alt'; options: Node[][] }
  | { kind: 'set'; digits: string }
  | { kind: 'end' }
  | { kind: 'repeat'; node: Node; min: number; max: number };

/** Parses the metadata's regular-expression subset into a tree the sampler walks. */
function parsePattern(source: string): Node {
  let i = 0;
  const alternation = (): Node => {
    const options: Node[][] = [[]];
    while (i < source.length && source[i] !== ')') {
      if (source[i] === '|') { i++; options.push([]); continue; }
      options[options.length - 1]!.push(quantified(atom()));
    }
    return { kind: 'alt', options };
  };
  const atom = (): Node => {
    const c = source[i++]!;
    if (c === '(') {
      if (source.startsWith('?:', i)) i += 2;
      const inner = alternation();
      if (source[i++] !== ')') throw new Error(`unbalanced ( in ${source}`);
      return inner;
    }
    if (c === '[') {
      let digits = '';
      while (source[i] !== ']') {
        const from = source[i++]!;
        if (source[i] === '-' && source[i + 1] !== ']') {
          const to = source[i + 1]!;
          i += 2;
          for (let d = from.charCodeAt(0); d <= to.charCodeAt(0); d++) digits += String.fromCharCode(d);
        } else if (from === '\\' && source[i] === 'd') { i++; digits += '0123456789'; }
        else digits += from;
      }
      i++;
      return { kind: 'set', digits };
    }
    if (c === '\\') {
      if (source[i++] !== 'd') throw new Error(`unexpected escape in ${source}`);
      return { kind: 'set', digits: '0123456789' };
    }
    if (c === '$') return { kind: 'end' };
    if (c >= '0' && c <= '9') return { kind: 'set', digits: c };
    throw new Error(`unexpected ${c} at ${i - 1} in ${source}`);
  };
  const quantified = (node: Node): Node => {
    const c = source[i];
    if (c === '?') { i++; return { kind: 'repeat', node, min: 0, max: 1 }; }
    if (c === '{') {
      const close = source.indexOf('}', i);
      const [min, max] = source.slice(i + 1, close).split(',').map(Number) as [number, number?];
      i = close + 1;
      return { kind: 'repeat', node, min, max: max ?? min };
    }
    return node;
  };
  const tree = alternation();
  if (i !== source.length) throw new Error(`unparsed tail at ${i} in ${source}`);
  return tree;
}

const parsed = new Map<string, Node>();

/** A random string the pattern matches (`$` ends nothing: callers that care look at the pattern). */
export function sample(pattern: string, random: () => number): string {
  let tree = parsed.get(pattern);
  if (!tree) parsed.set(pattern, tree = parsePattern(pattern));
  let out = '';
  const walk = (node: Node): void => {
    switch (node.kind) {
      case 'alt': for (const n of node.options[Math.floor(random() * node.options.length)]!) walk(n); break;
      case 'set': out += node.digits[Math.floor(random() * node.digits.length)]; break;
      case 'end': break;
      case 'repeat': {
        const times = node.min + Math.floor(random() * (node.max - node.min + 1));
        for (let k = 0; k < times; k++) walk(node.node);
      }
    }
  };
  walk(tree);
  return out;
}

// ------------------------------------------------------------------------------------- numbers per calling code

interface CodeSource {
  code: string;
  plans: PlanJson[];
}

/** Every calling code libphonenumber-js knows, with the numbering plans under it. */
export const CALLING_CODES: readonly CodeSource[] = (() => {
  const codes = new Set([...Object.keys(metadata.country_calling_codes), ...Object.keys(metadata.nonGeographic ?? {})]);
  const out: CodeSource[] = [];
  for (const code of codes) {
    const list = metadata.country_calling_codes[code] ?? [];
    const plans = list.filter((c) => c.length === 2).map((c) => metadata.countries[c]!);
    const nonGeographic = metadata.nonGeographic?.[code];
    if (nonGeographic) plans.push(nonGeographic);
    if (plans.length) out.push({ code, plans });
  }
  return out;
})();

const pick = <T>(xs: readonly T[], random: () => number): T => xs[Math.floor(random() * xs.length)]!;
const digits = (n: number, random: () => number) => {
  let s = '';
  for (let k = 0; k < n; k++) s += String.fromCharCode(48 + Math.floor(random() * 10));
  return s;
};

/** A national number a plan's patterns describe: a number type's pattern when it has types, else its national pattern. */
function patternNumber(plan: PlanJson, random: () => number): string {
  const types = ((plan[11] || undefined) as (readonly [string, number[]?] | 0)[] | undefined)?.filter((t): t is readonly [string, number[]?] => !!t && !!t[0]);
  const pattern = types?.length && random() < 0.8 ? pick(types, random)[0] : plan[2] as string;
  return sample(pattern, random);
}

const possibleLengths = (plan: PlanJson) => (plan[3] as number[] | undefined) ?? [6, 7, 8, 9, 10];

/** The national number part (after the calling code) of one generated input, by kind. */
function nationalPart(source: CodeSource, random: () => number): string {
  const plan = pick(source.plans, random);
  const r = random();
  if (r < 0.45) return patternNumber(plan, random);
  if (r < 0.55) {
    // With the national prefix (or what national-prefix-for-parsing accepts) in front: stripped, transformed, or kept.
    const prefix = (plan[7] || plan[5]) as string | undefined;
    const rest = patternNumber(plan, random);
    if (!prefix) return rest;
    return prefix.includes('$') && random() < 0.5 ? sample(prefix, random) : sample(prefix.replace(/\$/g, ''), random) + rest;
  }
  if (r < 0.65) {
    // The leading digits of a country sharing the code, then random digits to one of its possible lengths.
    const leading = plan[10] as string | undefined;
    const head = leading ? sample(leading, random) : '';
    return head + digits(Math.max(0, pick(possibleLengths(plan), random) - head.length), random);
  }
  if (r < 0.75) return digits(pick(possibleLengths(plan), random), random);
  if (r < 0.9) {
    // One edit away from a pattern number: a digit changed, dropped or added.
    const n = patternNumber(plan, random);
    const at = Math.floor(random() * (n.length + 1));
    const e = random();
    if (e < 0.4) return n.slice(0, at) + digits(1, random) + n.slice(at + 1);
    if (e < 0.7) return n.slice(0, at) + n.slice(at + 1);
    return n.slice(0, at) + digits(1, random) + n.slice(at);
  }
  return digits(Math.floor(random() * 20), random);
}

const SEPARATORS = [' ', ' ', '-', '.', '/', '(', ')', '  '];

/** How a CSV or JSON body might carry `+digits`: as is, with 00, without a plus, with separators, or spoiled. */
function dress(plusDigits: string, random: () => number): string {
  const r = random();
  let s = r < 0.55 ? plusDigits : r < 0.7 ? '00' + plusDigits.slice(1) : r < 0.9 ? plusDigits.slice(1) : plusDigits;
  if (random() < 0.2) {
    let out = '';
    for (const ch of s) {
      out += ch;
      if (random() < 0.25) out += pick(SEPARATORS, random);
    }
    s = random() < 0.3 ? `(${s.slice(0, 3)}) ${out.slice(3)}` : out;
  }
  const spoil = random();
  if (spoil < 0.01) s = s.slice(0, Math.floor(random() * s.length)) + pick(['x', '#', 'a', ',', ';', '+', 'ext. 12', '٣', '１'], random) + s.slice(Math.floor(random() * s.length));
  else if (spoil < 0.012) s = s + ' '.repeat(70);
  return s;
}

/** `count` seeded inputs, spread evenly over every calling code, plus some with no calling code at all. */
export function phoneSamples(count: number, seed: number): string[] {
  const random = seeded(seed);
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    if (random() < 0.03) {
      // An unknown or malformed calling code: 0 first, or digits that are no code.
      out.push(dress('+' + digits(1 + Math.floor(random() * 16), random), random));
      continue;
    }
    const source = CALLING_CODES[k % CALLING_CODES.length]!;
    out.push(dress('+' + source.code + nationalPart(source, random), random));
  }
  return out;
}
