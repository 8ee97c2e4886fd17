// The action node as an AI agent's tool, the way n8n 2.41's AI Agent 3 runs tools: the agent asks a scripted model
// (a local OpenAI-compatible stand-in), n8n-core's WorkflowExecute runs the tool the model called, and what the
// engine hands back is what the model is sent; the test reads it where the model got it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPackage, runAgent, runAsTool, type N8nPackage } from '../support/n8n.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.ts';

/** The n8n package's folder (its package.json's n8n block names the built files in n8n/dist/). */
const PACKAGE = new URL('../../n8n/', import.meta.url).pathname;

let pkg: N8nPackage;
let s: TestServer;
let acc: string;
let admin: string;
const models: ModelStandIn[] = [];

beforeAll(async () => {
  pkg = await loadPackage(PACKAGE);
  s = await startServer({ seed: 26 });
  acc = (await createAccount(s, 'Agent')).id;
  admin = await createKey(s, acc, ['CampaignAdmin']);
});
afterAll(async () => {
  for (const model of models) await model.close();
  await s?.close();
});

const credentials = () => ({ campaignDialingApi: { baseUrl: s.url, accountId: acc, apiToken: admin } });
const fromAI = (name: string) => ({ __rl: true, mode: 'id', value: `={{ $fromAI('${name}', 'The ID of the campaign', 'string') }}` });

async function model(args: Record<string, unknown>): Promise<ModelStandIn> {
  const started = await startModelStandIn(args);
  models.push(started);
  return started;
}

describe('as an AI agent\'s tool', () => {
  it('AI Agent 3: the model is sent what went wrong and what to call instead, without an item number', async () => {
    const standIn = await model({ campaignId: 'no-such-campaign' });
    const run = await runAgent({ pkg, type: 'campaignDialing', credentials: credentials(), modelUrl: standIn.url,
      prompt: 'Pause the campaign no-such-campaign.', parameters: { resource: 'campaign', operation: 'changeState', state: 'Paused', campaignId: fromAI('campaignId') } });
    expect(run.error).toBeUndefined();
    // The tool answered the failure as its result: nothing thrown for n8n to cut down to a message.
    expect(run.tool?.[0]?.error).toBeUndefined();
    const [sent] = standIn.toolResults();
    expect(standIn.toolResults()).toHaveLength(1);
    const { error } = (JSON.parse(sent!) as Array<{ error: string }>)[0]!;
    expect(error).toBe('Campaign "no-such-campaign" does not exist in this account.\nAn ID in the input does not exist: get campaign IDs with '
      + 'the Get Many operation of campaigns, and number IDs with the Get Many operation of a campaign\'s numbers, then call again with one of them.');
    expect(String(run.output?.output)).toBe(`Tool said: ${sent}`);
  });

  it('AI Agent 3: a rejected phone number is told without its item, with what to send instead', async () => {
    const c = await createCampaign(s, acc, { name: 'Agent adds', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const standIn = await model({ phoneNumber: 'call me maybe' });
    const run = await runAgent({ pkg, type: 'campaignDialing', credentials: credentials(), modelUrl: standIn.url, prompt: 'Add call me maybe.',
      parameters: { resource: 'campaignNumber', operation: 'add', campaignId: { __rl: true, mode: 'id', value: c.id },
        phoneNumber: '={{ $fromAI(\'phoneNumber\', \'The phone number\', \'string\') }}' } });
    expect(run.error).toBeUndefined();
    const { error } = (JSON.parse(standIn.toolResults()[0]!) as Array<{ error: string }>)[0]!;
    expect(error).toMatch(/^The phone number "call me maybe" was rejected: .*\nNo phone number was added\. Call again with only the rejected phone numbers, corrected/);
    expect(error).not.toMatch(/item \d|Settings/);
  });

  it('AI Agent 2 (n8n-core\'s tool wrapper, under LangChain\'s AgentExecutor): nothing is thrown, which the executor would answer with an empty observation', async () => {
    const res = await runAsTool({ pkg, type: 'campaignDialing', credentials: credentials(),
      parameters: { resource: 'campaign', operation: 'changeState', state: 'Paused', campaignId: { __rl: true, mode: 'id', value: 'no-such-campaign' } } });
    expect(res.error).toBeUndefined();
    expect(res.items?.map((item) => item.json)).toEqual([{ error: expect.stringMatching(
      /^Campaign "no-such-campaign" does not exist in this account\.\nAn ID in the input does not exist: get campaign IDs/) }]);
  });
});
