// The API's own description: GET /v1/openapi.json (generated from api/) and GET /docs, a reference page swagger-ui renders from it.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { openApiDocument, OPENAPI_PATH } from '../api/openapi.ts';
import type { DocumentLimits } from '../api/operations.ts';
import { UPLOAD_REJECTIONS_SHOWN } from './csv-upload.ts';
import { ApiError } from './errors.ts';
import type { RateLimitPolicy } from './rate-limit.ts';
import { MAX_VARIABLES } from './numbers-intake.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Needs no API key and takes no rate-limit token: the document and its page are public and static. */
    public?: boolean;
  }
}

export const DOCS_PATH = '/docs';

/**
 * Only what the page needs: its own files and swagger-ui's. Scripts come only from this server, never inline; swagger-ui
 * sets styles through the DOM (allowed) and its CSS carries its icons as data: URIs.
 */
export const DOCS_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'", "font-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const PAGE = join(import.meta.dirname, 'api-docs');

/** Every file under /docs/ by name: a URL never becomes a path on disk. */
const FILES: Record<string, { dir: string; type: string }> = {
  'init.js': { dir: PAGE, type: 'text/javascript; charset=utf-8' },
  'swagger-ui-bundle.js': { dir: SWAGGER_UI, type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { dir: SWAGGER_UI, type: 'text/css; charset=utf-8' },
  'index.css': { dir: SWAGGER_UI, type: 'text/css; charset=utf-8' },
  'favicon-32x32.png': { dir: SWAGGER_UI, type: 'image/png' },
  'favicon-16x16.png': { dir: SWAGGER_UI, type: 'image/png' },
};

export interface DocsOptions {
  limits: Omit<DocumentLimits, 'variables' | 'uploadRejectionsShown'>;
  rateLimit: RateLimitPolicy;
}

export function docsRoutes(app: FastifyInstance, options: DocsOptions): void {
  const limits: DocumentLimits = { ...options.limits, variables: MAX_VARIABLES, uploadRejectionsShown: UPLOAD_REJECTIONS_SHOWN };
  // `--rate-limit off` is an unbounded bucket: not a figure worth printing.
  const rateLimit = options.rateLimit.rate < Number.MAX_SAFE_INTEGER ? options.rateLimit : undefined;
  const document = JSON.stringify(openApiDocument({ limits, rateLimit }));
  const cache = new Map<string, Buffer>();
  const file = async (dir: string, name: string): Promise<Buffer> => {
    const path = join(dir, name);
    let body = cache.get(path);
    if (!body) cache.set(path, (body = await readFile(path)));
    return body;
  };
  const page = (reply: FastifyReply, type: string, body: Buffer | string) => reply
    .header('content-security-policy', DOCS_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .type(type)
    .send(body);

  app.get(OPENAPI_PATH, { config: { public: true } }, async (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('application/json; charset=utf-8').send(document));

  app.get(DOCS_PATH, { config: { public: true } }, async (_request, reply) =>
    page(reply, 'text/html; charset=utf-8', await file(PAGE, 'index.html')));

  app.get(`${DOCS_PATH}/`, { config: { public: true } }, async (_request, reply) => reply.redirect(DOCS_PATH, 308));

  app.get(`${DOCS_PATH}/:file`, { config: { public: true } }, async (request, reply) => {
    const name = (request.params as { file: string }).file;
    const entry = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
    if (!entry) throw new ApiError('not-found', `no file ${JSON.stringify(name)} under ${DOCS_PATH}/`);
    return page(reply, entry.type, await file(entry.dir, name));
  });
}
