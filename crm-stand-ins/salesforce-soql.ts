// SOQL for the Salesforce stand-in: parses with @jetstreamapp/soql-parser-js and compiles the subset the daemon sends into a filter, an order and a projection.
import { parseQuery } from '@jetstreamapp/soql-parser-js';
import type { Condition, FieldType as ParsedField, OrderByClause, Query, WhereClause } from '@jetstreamapp/soql-parser-js';
import { isDate, jsonValue, parseDateTime, recordUrl, toId18 } from './salesforce-records.ts';
import type { FieldDef, FieldType, FieldValue, SfRecord, SObjectDef } from './salesforce-records.ts';

/** A query Salesforce would refuse: errorCode is Salesforce's (MALFORMED_QUERY, INVALID_FIELD, INVALID_TYPE, …). */
export class SoqlError extends Error {
  readonly errorCode: string;
  constructor(errorCode: string, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}

export interface CompiledQuery {
  def: SObjectDef;
  /** The matching records in order, LIMIT and OFFSET applied; deleted ones only when includeDeleted (queryAll). */
  run(records: Iterable<SfRecord>, includeDeleted: boolean): SfRecord[];
  /** A record as the query resource returns it: attributes, then the selected fields in SELECT order. */
  project(record: SfRecord, apiVersion: string): Record<string, unknown>;
}

/** Finds a record by its 18-character id, deleted or not. */
export type RecordLookup = (id18: string) => SfRecord | undefined;

/** Salesforce's documented cap on OFFSET. */
const MAX_OFFSET = 2000;

/** A field reached from the queried object: directly, or through one relationship (Contact.Phone on CampaignMember). */
interface FieldPath {
  rel: FieldDef | null;
  /** Lower-cased name of the field on the target object. */
  key: string;
  /** Canonical name of the field (on the first target type of a polymorphic relationship). */
  name: string;
  type: FieldType;
  /** The field's definition on a record of the given type (the queried one, or a relationship's target). */
  fieldOn: Map<string, FieldDef>;
  get(r: SfRecord): FieldValue;
}

type Predicate = (r: SfRecord) => boolean;
type Token = '(' | ')' | 'AND' | 'OR' | 'NOT' | Condition;

const malformed = (message: string): SoqlError => new SoqlError('MALFORMED_QUERY', message);

function noColumn(name: string, entity: string): SoqlError {
  return new SoqlError('INVALID_FIELD', `No such column '${name}' on entity '${entity}'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.`);
}

export function compileSoql(soql: string, schema: Map<string, SObjectDef>, lookup: RecordLookup): CompiledQuery {
  let q: Query;
  try {
    q = parseQuery(soql);
  } catch (err) {
    throw malformed(`${soql}\nERROR at Row:1\n${(err as Error).message.replace(/\s+/g, ' ').trim()}`);
  }
  rejectUnsupported(q);
  const def = schema.get((q.sObject ?? '').toLowerCase());
  if (!def) {
    throw new SoqlError('INVALID_TYPE', `sObject type '${q.sObject}' is not supported. If you are attempting to use a custom object, be sure to append the '__c' after the entity name. Please reference your WSDL or the describe call for the appropriate names.`);
  }

  const resolve = (dotted: string): FieldPath => resolvePath(dotted, def, schema, lookup);
  const columns = (q.fields ?? []).map((f) => selectColumn(f, resolve));
  const seen = new Set<string>();
  for (const c of columns) {
    const key = `${c.rel?.relationship!.name ?? ''}.${c.key}`;
    if (seen.has(key)) throw malformed(`duplicate field selected: ${c.rel ? `${c.rel.relationship!.name}.` : ''}${c.name}`);
    seen.add(key);
  }
  const where = q.where ? compileWhere(q.where, resolve) : () => true;
  const order = compileOrder(q.orderBy, resolve);
  const limit = q.limit ?? null;
  const offset = q.offset ?? 0;
  if (offset > MAX_OFFSET) throw new SoqlError('NUMBER_OUTSIDE_VALID_RANGE', `Maximum SOQL offset allowed is ${MAX_OFFSET}`);

  return {
    def,
    run(records, includeDeleted) {
      const found: SfRecord[] = [];
      for (const r of records) if ((includeDeleted || r.values.IsDeleted !== true) && where(r)) found.push(r);
      if (order) found.sort(order);
      return found.slice(offset, limit === null ? undefined : offset + limit);
    },
    project(record, apiVersion) {
      const out: Record<string, unknown> = { attributes: { type: record.type, url: recordUrl(apiVersion, record) } };
      for (const c of columns) {
        if (!c.rel) {
          out[c.name] = jsonValue(c.fieldOn.get(record.type)!, record);
          continue;
        }
        const relName = c.rel.relationship!.name;
        const target = relatedRecord(c.rel, record, lookup);
        if (!target) {
          out[relName] = null;
          continue;
        }
        const nested = (out[relName] ??= { attributes: { type: target.type, url: recordUrl(apiVersion, target) } }) as Record<string, unknown>;
        const f = c.fieldOn.get(target.type)!;
        nested[f.name] = jsonValue(f, target);
      }
      return out;
    },
  };
}

function rejectUnsupported(q: Query): void {
  const unsupported: Array<[unknown, string]> = [
    [q.groupBy, 'GROUP BY'], [q.having, 'HAVING'], [q.withDataCategory, 'WITH DATA CATEGORY'],
    [q.withSecurityEnforced, 'WITH SECURITY_ENFORCED'], [q.withAccessLevel, 'WITH USER_MODE / SYSTEM_MODE'],
    [q.for, 'FOR VIEW / UPDATE / REFERENCE'], [q.update, 'UPDATE TRACKING / VIEWSTAT'], [q.usingScope, 'USING SCOPE'],
    [q.sObjectAlias, 'an object alias'],
  ];
  for (const [present, what] of unsupported) {
    if (present) throw malformed(`${what} is not supported by this stand-in; it serves SELECT fields FROM object [WHERE] [ORDER BY] [LIMIT] [OFFSET]`);
  }
}

function relatedRecord(rel: FieldDef, record: SfRecord, lookup: RecordLookup): SfRecord | undefined {
  const id = record.values[rel.name];
  return typeof id === 'string' ? lookup(id) : undefined;
}

function resolvePath(dotted: string, def: SObjectDef, schema: Map<string, SObjectDef>, lookup: RecordLookup): FieldPath {
  const parts = dotted.split('.');
  if (parts.length === 1) {
    const f = def.fields.get(parts[0]!.toLowerCase());
    if (!f) throw noColumn(parts[0]!, def.name);
    return {
      rel: null, key: f.name.toLowerCase(), name: f.name, type: f.type, fieldOn: new Map([[def.name, f]]),
      get: (r) => (f.computed ? f.computed(r) : (r.values[f.name] ?? null)),
    };
  }
  const rel = parts.length === 2 ? def.relationships.get(parts[0]!.toLowerCase()) : undefined;
  if (!rel) {
    throw new SoqlError('INVALID_FIELD', `Didn't understand relationship '${parts.slice(0, -1).join('.')}' in field path. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names.`);
  }
  const key = parts[1]!.toLowerCase();
  // On a polymorphic relationship (Task.Who) the field must exist on every type it may point at.
  const targets = rel.relationship!.to.map((t) => schema.get(t.toLowerCase())!);
  for (const t of targets) if (!t.fields.has(key)) throw noColumn(parts[1]!, rel.relationship!.to.length > 1 ? 'Name' : t.name);
  const fieldOn = new Map(targets.map((t) => [t.name, t.fields.get(key)!]));
  const first = fieldOn.get(targets[0]!.name)!;
  return {
    rel, key, name: first.name, type: first.type, fieldOn,
    get(r) {
      const target = relatedRecord(rel, r, lookup);
      if (!target) return null;
      const f = fieldOn.get(target.type)!;
      return f.computed ? f.computed(target) : (target.values[f.name] ?? null);
    },
  };
}

function selectColumn(f: ParsedField, resolve: (dotted: string) => FieldPath): FieldPath {
  if (f.type === 'Field' && !('alias' in f && f.alias)) return resolve(f.field);
  if (f.type === 'FieldRelationship' && !('alias' in f)) return resolve([...f.relationships, f.field].join('.'));
  const what = f.type === 'FieldSubquery' ? 'a relationship subquery' : f.type === 'FieldTypeof' ? 'TYPEOF' : f.type === 'FieldFunctionExpression' ? `the function ${f.functionName}()` : 'a field alias';
  throw malformed(`${what} in SELECT is not supported by this stand-in; select plain fields or one relationship deep (Contact.Phone)`);
}

// ---- WHERE ----

/** The parser gives WHERE as a chain with parenthesis counts; this flattens it back into tokens. */
function tokens(where: WhereClause): Token[] {
  const out: Token[] = [];
  let node: WhereClause | undefined = where;
  while (node) {
    const left = node.left as (Condition & { openParen?: number; closeParen?: number }) | null;
    const isCondition = left !== null && ('field' in left || 'fn' in left);
    for (let i = 0; i < (left?.openParen ?? 0); i++) out.push('(');
    if ('operator' in node && node.operator === 'NOT') {
      out.push('NOT');
      if (isCondition) throw malformed('NOT must come before a condition');
      node = node.right;
      continue;
    }
    if (!isCondition) throw malformed('a condition is missing in WHERE');
    out.push(left);
    for (let i = 0; i < (left.closeParen ?? 0); i++) out.push(')');
    if ('operator' in node && node.operator) {
      out.push(node.operator);
      node = node.right;
    } else {
      node = undefined;
    }
  }
  return out;
}

function compileWhere(where: WhereClause, resolve: (dotted: string) => FieldPath): Predicate {
  const list = tokens(where);
  let i = 0;
  // SOQL has no precedence between AND and OR: a mix at one level needs parentheses.
  const expr = (): Predicate => {
    const parts = [unary()];
    let op: 'AND' | 'OR' | null = null;
    while (list[i] === 'AND' || list[i] === 'OR') {
      const next = list[i] as 'AND' | 'OR';
      if (op && next !== op) throw malformed(`unexpected token: '${next}'; use parentheses when mixing AND and OR`);
      op = next;
      i++;
      parts.push(unary());
    }
    if (parts.length === 1) return parts[0]!;
    return op === 'AND' ? (r) => parts.every((p) => p(r)) : (r) => parts.some((p) => p(r));
  };
  const unary = (): Predicate => {
    const t = list[i++];
    if (t === 'NOT') {
      const inner = unary();
      return (r) => !inner(r);
    }
    if (t === '(') {
      const inner = expr();
      if (list[i++] !== ')') throw malformed('unbalanced parentheses in WHERE');
      return inner;
    }
    if (t === undefined || typeof t === 'string') throw malformed(`unexpected token: '${t ?? 'end of query'}' in WHERE`);
    return compileCondition(t, resolve);
  };
  const p = expr();
  if (i !== list.length) throw malformed(`unexpected token: '${String(list[i])}' in WHERE`);
  return p;
}

const TYPE_WORD: Record<FieldType, string> = {
  id: 'id', reference: 'id', string: 'string', picklist: 'string', boolean: 'boolean', datetime: 'dateTime', date: 'date', int: 'double',
};

function unquote(raw: string, keepLikeEscapes: boolean): string {
  const body = raw.slice(1, -1);
  return body.replace(/\\(.)/g, (_, c: string) => {
    if (keepLikeEscapes && (c === '%' || c === '_')) return `\\${c}`;
    return ({ n: '\n', r: '\r', t: '\t', b: '\b', f: '\f' } as Record<string, string>)[c] ?? c;
  });
}

/** A literal as the stored value it compares with: ms for datetimes, lower case for strings, 18-character ids. */
function literal(path: FieldPath, raw: string, kind: string, forLike = false): FieldValue {
  if (kind === 'NULL') return null;
  const wrongType = (): SoqlError =>
    new SoqlError('INVALID_FIELD', `value of filter criterion for field '${path.name}' must be of type ${TYPE_WORD[path.type]} and ${path.type === 'string' || path.type === 'picklist' || path.type === 'id' || path.type === 'reference' ? 'should be enclosed in quotes' : 'should not be enclosed in quotes'}`);
  switch (path.type) {
    case 'id':
    case 'reference': {
      if (kind !== 'STRING') throw wrongType();
      const id = toId18(unquote(raw, false));
      if (!id) throw new SoqlError('INVALID_QUERY_FILTER_OPERATOR', `invalid ID field: ${unquote(raw, false)}`);
      return id;
    }
    case 'string':
    case 'picklist':
      if (kind !== 'STRING') throw wrongType();
      return unquote(raw, forLike).toLowerCase();
    case 'boolean':
      if (kind !== 'BOOLEAN') throw wrongType();
      return raw.toUpperCase() === 'TRUE';
    case 'datetime': {
      if (kind !== 'DATETIME') throw wrongType();
      const ms = parseDateTime(raw);
      if (Number.isNaN(ms)) throw malformed(`invalid dateTime literal: ${raw}`);
      return ms;
    }
    case 'date':
      if (kind !== 'DATE') throw wrongType();
      if (!isDate(raw)) throw malformed(`invalid date literal: ${raw}`);
      return raw;
    case 'int':
      if (kind !== 'INTEGER' && kind !== 'DECIMAL') throw wrongType();
      return Number(raw);
  }
}

/** The stored value in the form literals take (lower case for strings). */
function comparable(path: FieldPath, r: SfRecord): FieldValue {
  const v = path.get(r);
  return typeof v === 'string' && (path.type === 'string' || path.type === 'picklist') ? v.toLowerCase() : v;
}

function likeRegex(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Runs of % collapse to one so that a pattern like %%%%a cannot make the match backtrack without end.
    else if (c === '%') re += re.endsWith('[\\s\\S]*') ? '' : '[\\s\\S]*';
    else if (c === '_') re += '[\\s\\S]';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

function compileCondition(c: Condition, resolve: (dotted: string) => FieldPath): Predicate {
  if ('fn' in c) throw malformed('functions in WHERE are not supported by this stand-in');
  if ('valueQuery' in c) throw malformed('semi-join subqueries (IN (SELECT …)) are not supported by this stand-in');
  if (!('field' in c) || !('operator' in c)) throw malformed('a condition is missing in WHERE');
  const path = resolve(c.field);
  const kinds = ([] as string[]).concat(c.literalType ?? []);
  for (const k of kinds) {
    if (!['STRING', 'INTEGER', 'DECIMAL', 'BOOLEAN', 'NULL', 'DATETIME', 'DATE'].includes(k)) {
      throw malformed(`${k === 'DATE_LITERAL' || k === 'DATE_N_LITERAL' ? `the date literal ${String(c.value)}` : `a ${k} value`} is not supported by this stand-in; write the date or dateTime itself`);
    }
  }
  const op = c.operator;
  if (op === 'INCLUDES' || op === 'EXCLUDES') throw malformed(`${op} applies to multi-select picklists, which this stand-in does not have`);
  const kindAt = (i: number): string => kinds[Math.min(i, kinds.length - 1)] ?? 'STRING';

  if (op === 'IN' || op === 'NOT IN') {
    const raws = ([] as string[]).concat(c.value as string | string[]);
    const set = new Set(raws.map((raw, i) => literal(path, raw, kindAt(i))));
    return op === 'IN' ? (r) => set.has(comparable(path, r)) : (r) => !set.has(comparable(path, r));
  }
  if (Array.isArray(c.value)) throw malformed(`${op} takes one value, not a list`);
  const raw = c.value as string;

  if (op === 'LIKE') {
    if (path.type !== 'string' && path.type !== 'picklist') {
      throw new SoqlError('INVALID_QUERY_FILTER_OPERATOR', `invalid operator on ${TYPE_WORD[path.type]} field: LIKE on '${path.name}'`);
    }
    const pattern = literal(path, raw, kindAt(0), true);
    if (pattern === null) throw new SoqlError('INVALID_QUERY_FILTER_OPERATOR', 'LIKE needs a quoted pattern, not null');
    const re = likeRegex(pattern as string);
    return (r) => {
      const v = comparable(path, r);
      return typeof v === 'string' && re.test(v);
    };
  }
  const value = literal(path, raw, kindAt(0));
  if (op === '=') return (r) => comparable(path, r) === value;
  if (op === '!=') return (r) => comparable(path, r) !== value;
  if (op === '<' || op === '>' || op === '<=' || op === '>=') {
    if (value === null || path.type === 'boolean') {
      throw new SoqlError('INVALID_QUERY_FILTER_OPERATOR', `invalid operator on ${value === null ? 'null' : 'boolean'} value: '${path.name}' ${op}`);
    }
    return (r) => {
      const v = comparable(path, r);
      if (v === null) return false;
      const cmp = v < value ? -1 : v > value ? 1 : 0;
      return op === '<' ? cmp < 0 : op === '>' ? cmp > 0 : op === '<=' ? cmp <= 0 : cmp >= 0;
    };
  }
  throw malformed(`the operator ${op} is not supported by this stand-in`);
}

// ---- ORDER BY ----

function compileOrder(orderBy: OrderByClause | OrderByClause[] | undefined, resolve: (dotted: string) => FieldPath): ((a: SfRecord, b: SfRecord) => number) | null {
  if (!orderBy) return null;
  const keys = ([] as OrderByClause[]).concat(orderBy).map((o) => {
    if (!('field' in o)) throw malformed('functions in ORDER BY are not supported by this stand-in');
    const path = resolve(o.field);
    const desc = o.order === 'DESC';
    // Salesforce puts nulls first in ascending order and last in descending order unless told.
    const nullsFirst = o.nulls ? o.nulls === 'FIRST' : !desc;
    return { path, desc, nullsFirst };
  });
  return (a, b) => {
    for (const k of keys) {
      const x = comparable(k.path, a);
      const y = comparable(k.path, b);
      if (x === y) continue;
      if (x === null) return k.nullsFirst ? -1 : 1;
      if (y === null) return k.nullsFirst ? 1 : -1;
      const cmp = x < y ? -1 : 1;
      return k.desc ? -cmp : cmp;
    }
    // Ties keep a fixed order so that paging never shows a record twice.
    const ia = a.values.Id as string;
    const ib = b.values.Id as string;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  };
}
