// Checks real answers against the OpenAPI document: ajv (JSON Schema 2020-12, strict) over the document's own schemas.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { Json, OpenApiDocument } from '../../api/openapi.ts';

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module itself.
const addFormats = ((formats as unknown as { default?: typeof formats }).default ?? formats) as unknown as (ajv: Ajv2020) => void;

const COMPONENTS = 'urn:openapi:components';

/** `#/components/schemas/X` (a pointer into the document) → the same schema registered with ajv under COMPONENTS. */
function rebase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rebase);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k,
    k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
      ? `${COMPONENTS}#/$defs/${v.slice('#/components/schemas/'.length)}` : rebase(v)]));
}

export interface SchemaValidator {
  compile(schema: Json): ValidateFunction;
}

/** An ajv whose `$ref`s resolve into the document's components. Strict: a keyword ajv does not know is an error. */
export function jsonSchemaValidator(doc: OpenApiDocument): SchemaValidator {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: COMPONENTS, $defs: rebase((doc.components as Json).schemas) as Json });
  const compiled = new Map<Json, ValidateFunction>();
  return {
    compile(schema) {
      let fn = compiled.get(schema);
      if (!fn) compiled.set(schema, (fn = ajv.compile(rebase(schema) as Json)));
      return fn;
    },
  };
}

export type OperationObject = Json & {
  operationId: string;
  parameters?: Json[];
  requestBody?: Json;
  responses: Record<string, Json & { content?: Record<string, Json>; headers?: Record<string, Json> }>;
};

/** The document's operations with their method and path template. */
export function documentedOperations(doc: OpenApiDocument): { method: string; path: string; op: OperationObject }[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as OperationObject })));
}

/** A path with its parameters as `{}`: fastify's `:campaignId` and OpenAPI's `{campaign_id}` compare equal. */
export function pathShape(path: string): string {
  return path.replace(/:[A-Za-z_]\w*|\{[^}]+\}/g, '{}');
}

/**
 * Every method and path fastify's router holds, read from printRoutes' tree (fastify has no list of routes): each line
 * is the rest of a path below its parent line, indented four characters per level, with its methods in parentheses.
 */
export function registeredRoutes(tree: string): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ├└─]*)(\S.*?)(?: \(([A-Z, ]+)\))?$/.exec(line.trimEnd());
    if (!m || !m[2]) continue;
    // `├── ` marks a top-level route; each `│   ` (or four spaces) before it, one level further down.
    const depth = Math.max(0, m[1]!.length / 4 - 1);
    const path = (depth > 0 ? stack[depth - 1]! : '') + m[2];
    stack[depth] = path;
    stack.length = depth + 1;
    for (const method of (m[3] ?? '').split(',').map((x) => x.trim()).filter(Boolean)) out.push({ method, path });
  }
  return out;
}
