// A scripted chat model for AI agent tests: a local HTTP server speaking OpenAI's chat completions API (tool calls)
// that calls the first tool it is offered with given arguments, then answers with the text the tool gave back; every
// request it got is kept, so a test reads what the model was shown.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A message of a chat completions request, as far as the tests read it. */
export interface ChatMessage { role: string; content?: unknown; tool_call_id?: string; tool_calls?: unknown[] }

/** One request to the stand-in: its path and body. */
export interface ModelRequest { path: string; body: { model?: string; messages?: ChatMessage[]; tools?: Array<{ function: { name: string } }> } }

export interface ModelStandIn {
  /** The base URL for an OpenAI credential, e.g. `http://127.0.0.1:1234/v1`. */
  url: string;
  requests: ModelRequest[];
  /** The content of every tool message the model was sent, in order. */
  toolResults(): string[];
  close(): Promise<void>;
}

const textOf = (content: unknown): string => (typeof content === 'string' ? content
  : Array.isArray(content) ? content.map((part) => (typeof part === 'string' ? part : String((part as { text?: unknown }).text ?? ''))).join('')
  : JSON.stringify(content ?? ''));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts the stand-in. Asked with no tool result among the messages, it calls the first tool offered with `toolArgs`;
 * once a tool result is there, it answers `Tool said: <the result>` and stops.
 */
export async function startModelStandIn(toolArgs: Record<string, unknown>): Promise<ModelStandIn> {
  const requests: ModelRequest[] = [];
  let calls = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const path = (req.url ?? '').split('?')[0]!;
      let body: ModelRequest['body'] = {};
      try { body = JSON.parse(raw) as ModelRequest['body']; } catch { /* answered below */ }
      requests.push({ path, body });
      if (req.method !== 'POST' || !path.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `The stand-in serves only POST /chat/completions, not ${req.method} ${path}` } }));
        return;
      }
      const toolMessages = (body.messages ?? []).filter((m) => m.role === 'tool');
      const tool = body.tools?.[0]?.function.name;
      const created = Math.floor(Date.now() / 1000);
      const toolCalls = toolMessages.length || !tool ? undefined
        : [{ id: `call_${++calls}`, type: 'function', function: { name: tool, arguments: JSON.stringify(toolArgs) } }];
      const message = toolCalls ? { role: 'assistant', content: null, tool_calls: toolCalls }
        : { role: 'assistant', content: `Tool said: ${toolMessages.map((m) => textOf(m.content)).join('\n') || '(no tool was offered)'}` };
      const finish = toolCalls ? 'tool_calls' : 'stop';
      const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `chatcmpl-${requests.length}`, object: 'chat.completion', created, model: body.model ?? 'gpt-stand-in',
        choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage }));
    })().catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    toolResults: () => requests.flatMap((r) => (r.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => textOf(m.content)))
      .filter((text, n, all) => all.indexOf(text) === n),
    close: async () => { server.closeAllConnections(); await new Promise<void>((resolve) => server.close(() => resolve())); },
  };
}
