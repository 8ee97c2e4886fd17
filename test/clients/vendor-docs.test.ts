// The vendor's documented curl calls, replayed as the documentation writes them with the real curl binary.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Campaign, CampaignNumber } from '../../api/records.ts';
import { addNumbers, createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);

let s: TestServer;
let acc: string;
let token: string;
let dir: string;
let campaign: Campaign;

interface Answer { status: number; headers: Map<string, string>; body: string; json: any }

/** Runs curl with the documented arguments; -sS -i only make it quiet and print the status line and headers. */
async function curl(...args: string[]): Promise<Answer> {
  const { stdout } = await run('curl', ['-sS', '-i', ...args], { cwd: dir });
  const end = stdout.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = stdout.slice(0, end).split('\r\n');
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const));
  const body = stdout.slice(end + 4);
  return { status: Number(statusLine!.split(' ')[1]), headers, body, json: body ? JSON.parse(body) : undefined };
}

const url = (path: string) => `${s.url}/v1/accounts/${acc}/campaigns${path}`;
const bearer = () => `Authorization: Bearer ${token}`;

function expectJson(a: Answer, status: number): void {
  expect(a.status, a.body).toBe(status);
  expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
}

beforeAll(async () => {
  await run('curl', ['--version']).catch(() => { throw new Error('these tests run the curl binary: install curl (apt-get install -y curl)'); });
  dir = mkdtempSync(join(tmpdir(), 'vendor-docs-'));
  s = await startServer();
  acc = (await createAccount(s, 'Docs', 'America/New_York')).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
  for (const [name, state] of [['Winter', 'Finished'], ['Autumn', 'Active'], ['Summer', 'Draft'], ['Clearance', 'Active']] as const) {
    await createCampaign(s, acc, { name, state, type: 'Dynamic' });
  }
  campaign = await createCampaign(s, acc, { name: 'Leads', state: 'Active', type: 'Dynamic' });
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the documented calls, in the order a reader of the documentation makes them', () => {
  it('list campaigns, the parameters url-encoded in the body of a GET', async () => {
    const a = await curl('-X', 'GET', url(''), '-H', bearer(),
      '--data-urlencode', 'range=[0,9]', '--data-urlencode', 'sort=["name","ASC"]', '--data-urlencode', 'filter={"state":"Active"}');
    expectJson(a, 200);
    expect(a.json.map((c: Campaign) => [c.name, c.state])).toEqual([['Autumn', 'Active'], ['Clearance', 'Active'], ['Leads', 'Active']]);
    expect(a.headers.get('x-total-count')).toBe('3');
    expect(a.headers.get('content-range')).toBe('campaigns 0-2/3');
  });

  it('add one number: a single JSON object as the body', async () => {
    const a = await curl('-X', 'POST', url(`/${campaign.id}/numbers`), '-H', bearer(), '-H', 'Content-Type: application/json',
      '-d', '{"number": "+18005551234", "varValues": ["John", "199"]}');
    expectJson(a, 201);
    expect(a.json).toEqual({
      created: [{ id: expect.any(String), number: '+18005551234', status: 'NotContacted', attempts: 0, varNames: ['var1', 'var2'], varValues: ['John', '199'] }],
      rejected: [],
    });
  });

  it('add numbers with varValues, naming the variables with ?varNames', async () => {
    const varNames = encodeURIComponent(JSON.stringify(['name', 'amount']));
    const a = await curl('-X', 'POST', url(`/${campaign.id}/numbers?varNames=${varNames}`), '-H', bearer(), '-H', 'Content-Type: application/json',
      '-d', '[{"number": "+18005551235", "varValues": ["Jane", "250"]}, {"number": "+1 800 555 1235", "varValues": ["Jane", "250"]}]');
    expectJson(a, 201);
    expect(a.json.created).toEqual([expect.objectContaining({ number: '+18005551235', varNames: ['name', 'amount'], varValues: ['Jane', '250'] })]);
    expect(a.json.rejected).toEqual([
      { index: 1, number: '+1 800 555 1235', code: 'duplicate', reason: '+18005551235 duplicates entry 0 of this request', duplicateOf: 0 },
    ]);
  });

  it('upload a CSV file as multipart form data', async () => {
    writeFileSync(join(dir, 'numbers.csv'), 'phone,name,amount\n+18005551236,Ann,10\n18005551237,Bob,20\nnot a number,Eve,30\n');
    const a = await curl('-X', 'POST', url(`/${campaign.id}/numbers/upload?firstRowIsHeader=true&varCount=2`), '-H', bearer(), '-F', 'file=@numbers.csv');
    expectJson(a, 201);
    expect(a.json).toEqual({
      rows: 3, createdCount: 2, rejectedCount: 1, varNames: ['name', 'amount'], firstRowIsHeader: true, varCount: 2,
      rejected: [{ line: 4, value: 'not a number', code: 'invalid_number', reason: expect.stringContaining('not a phone number') }],
    });
  });

  it('list numbers', async () => {
    const a = await curl('-X', 'GET', url(`/${campaign.id}/numbers`), '-H', bearer(),
      '--data-urlencode', 'range=[0,9]', '--data-urlencode', 'sort=["number","ASC"]', '--data-urlencode', 'filter={"status":["NotContacted"]}');
    expectJson(a, 200);
    expect(a.json.map((n: CampaignNumber) => n.number)).toEqual(['+18005551234', '+18005551235', '+18005551236', '+18005551237']);
    expect(a.json[2]).toMatchObject({ varNames: ['name', 'amount'], varValues: ['Ann', '10'] });
    expect(a.headers.get('x-total-count')).toBe('4');
    expect(a.headers.get('content-range')).toBe('numbers 0-3/4');
  });

  it('delete numbers by their ids: DELETE with a JSON array body', async () => {
    const c = await createCampaign(s, acc, { name: 'To clean', state: 'Active', type: 'Dynamic' });
    const { created } = await addNumbers(s, acc, c.id, ['+18005551240', '+18005551241', '+18005551242']) as { created: CampaignNumber[] };
    const ids = created.slice(0, 2).map((n) => n.id);
    const a = await curl('-X', 'DELETE', url(`/${c.id}/numbers`), '-H', bearer(), '-H', 'Content-Type: application/json', '-d', JSON.stringify(ids));
    expect(a.status).toBe(204);
    expect(a.body).toBe('');
    expect(a.headers.has('content-type')).toBe(false);
    const left = await curl('-X', 'GET', url(`/${c.id}/numbers`), '-H', bearer());
    expectJson(left, 200);
    expect(left.json.map((n: CampaignNumber) => n.id)).toEqual([created[2]!.id]);
    // A phone number is not an id: nothing is deleted, and the answer says so.
    const wrong = await curl('-X', 'DELETE', url(`/${c.id}/numbers`), '-H', bearer(), '-H', 'Content-Type: application/json', '-d', '["+18005551242"]');
    expect(wrong.status).toBe(404);
    expect(wrong.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(wrong.json.detail).toBe('Campaign "To clean" has no live number with id "+18005551242"; nothing was deleted (ids come from the numbers list, not phone numbers)');
  });
});
