// Which methods each registered path answers, so a known path asked with another method is a 405 that says what it allows.
import { listing } from '../api/problems.ts';
import { ApiError } from './errors.ts';

interface Route {
  pattern: RegExp;
  method: string;
  /** Ends in a path parameter (`/campaigns/:campaignId`): the path names one record. */
  oneRecord: boolean;
}

export class AllowedMethods {
  private readonly routes: Route[] = [];

  /** Called for every route fastify registers (its onRoute hook). */
  add(methods: string | string[], url: string): void {
    if (url.includes('*')) return;
    const segments = url.split('/').map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.+?^$|()[\]{}\\]/g, '\\$&')));
    const pattern = new RegExp(`^${segments.join('/')}$`);
    for (const method of [methods].flat()) {
      // HEAD follows GET and OPTIONS answers every path: neither says what a path does.
      if (method !== 'HEAD' && method !== 'OPTIONS') this.routes.push({ pattern, method, oneRecord: /\/:[^/]+$/.test(url) });
    }
  }

  /**
   * The problem for a request no route matched: 405 with `Allow` when the path exists for other methods, else 404.
   * react-admin's getOne (GET of one record) is told how the API reads one record instead.
   */
  problem(method: string, url: string): ApiError {
    const path = url.split('?')[0]!;
    let decoded = path;
    try { decoded = decodeURIComponent(path); } catch { /* a malformed escape: match the path as sent */ }
    const matching = this.routes.filter((r) => r.pattern.test(decoded));
    if (!matching.length) return new ApiError('not-found', `There is no operation at ${method} ${path}`);
    const allowed = [...new Set(matching.map((r) => r.method))];
    const slash = path.lastIndexOf('/');
    const hint = method === 'GET' && matching.every((r) => r.oneRecord)
      ? `; to read one record, GET ${path.slice(0, slash)}?filter={"id":${JSON.stringify(decoded.slice(decoded.lastIndexOf('/') + 1))}}`
      : '';
    return new ApiError('method-not-allowed', `There is no ${method} operation at ${path}; it allows ${listing(allowed, 'and')}${hint}`,
      { headers: { allow: allowed.join(', ') } });
  }
}
