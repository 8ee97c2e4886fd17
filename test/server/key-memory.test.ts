// The server remembers a token's key for a moment instead of reading it for every request: a key deleted in that
// moment must still be refused from its very next request (§5.8), and nothing else may change by it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNumbers, createAccount, createCampaign, phoneNumbers, q, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let dir: string;
let accountId: string;
let campaignId: string;

// A database file, as the server runs in production: pages are then read on the reader thread.
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cdk-key-memory-'));
  s = await startServer({ db: join(dir, 'keys.db') });
  accountId = (await createAccount(s, 'Keys')).id;
  campaignId = (await createCampaign(s, accountId, { name: 'Keys', type: 'Dynamic', state: 'Active' })).id;
  await addNumbers(s, accountId, campaignId, phoneNumbers(3));
});

afterAll(async () => {
  await s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function newKey(name: string): Promise<{ id: string; token: string }> {
  return s.console('POST', `/accounts/${accountId}/apiKeys`, { name, roles: ['CampaignAdmin'] });
}

const page = (token: string) => s.request(`/v1/accounts/${accountId}/campaigns/${campaignId}/numbers${q({ range: [0, 9] })}`, { token });
const campaigns = (token: string) => s.request(`/v1/accounts/${accountId}/campaigns`, { token });

describe('a remembered key', () => {
  it('is refused with 403 on the request right after its deletion, though it was just used', async () => {
    const key = await newKey('deleted while in use');
    for (let i = 0; i < 5; i++) expect((await page(key.token)).status).toBe(200);
    const del = await s.request(`/console/accounts/${accountId}/apiKeys/${key.id}`, { method: 'DELETE', token: s.consoleToken });
    expect(del.status).toBe(204);
    const refused = await page(key.token);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/deleted/);
    expect((await campaigns(key.token)).status).toBe(403);
  });

  it('of another key keeps working after a deletion, and is the same key as before', async () => {
    const kept = await newKey('kept');
    const doomed = await newKey('doomed');
    expect((await page(kept.token)).status).toBe(200);
    expect((await page(doomed.token)).status).toBe(200);
    expect((await s.request(`/console/accounts/${accountId}/apiKeys/${doomed.id}`, { method: 'DELETE', token: s.consoleToken })).status).toBe(204);
    expect((await page(doomed.token)).status).toBe(403);
    const res = await page(kept.token);
    expect(res.status).toBe(200);
    expect(((await res.json()) as unknown[]).length).toBe(3);
    const listed = await s.console<{ id: string; deletedAt: string | null }[]>('GET', `/accounts/${accountId}/apiKeys`);
    expect(listed.find((k) => k.id === kept.id)?.deletedAt).toBeNull();
    expect(listed.find((k) => k.id === doomed.id)?.deletedAt).toMatch(/^\d{4}-/);
  });

  it('is never a token that differs from it: an unknown token of the right shape is 401 even right after a valid one', async () => {
    const key = await newKey('neighbour');
    expect((await page(key.token)).status).toBe(200);
    const last = key.token.at(-1) === 'A' ? 'B' : 'A';
    const forged = key.token.slice(0, -1) + last;
    const res = await page(forged);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/not the token of any API key/);
  });
});
