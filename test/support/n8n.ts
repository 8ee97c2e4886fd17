// Runs n8n community node types inside n8n-core's real engine (WorkflowExecute, PollContext, LoadOptionsContext, RoutingNode) for tests.
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Container } from '@n8n/di';
import {
  BinaryDataService, CredentialTestContext, ExecuteContext, ExecutionLifecycleHooks, ExternalSecretsProxy,
  getAdditionalKeys, InstanceSettings, LoadOptionsContext, PackageDirectoryLoader, PollContext, PollTriggerExecutor,
  RoutingNode, SupplyDataContext, WorkflowExecute,
} from 'n8n-core';
import type {
  EngineRequest, EngineResponse, ExecutionError, ICredentialDataDecryptedObject, IExecuteFunctions, ICredentials, ICredentialsExpressionResolveValues, ICredentialTestFunction,
  ICredentialTestRequest, ICredentialType, ICredentialTypes, IDataObject, IExecuteData, IHttpRequestOptions, INode,
  INodeCredentialsDetails, INodeExecutionData, INodeListSearchResult, INodeParameters, INodeProperties, INodePropertyOptions,
  INodeType, INodeTypeDescription, INodeTypes, IRequestOptionsSimplified, IRun, IVersionedNodeType, IWorkflowBase,
  IWorkflowExecuteAdditionalData, Workflow, WorkflowExecuteMode,
} from 'n8n-workflow';

// n8n-workflow's ESM build does not load under Node, and n8n-core and the compiled nodes require the CommonJS one: the
// host uses that same instance, so the engine's `instanceof NodeApiError` checks hold for errors the nodes throw.
const require = createRequire(import.meta.url);
const wf: typeof import('n8n-workflow') = require('n8n-workflow');

/** Credential data per credential type name, e.g. `{ campaignDialingApi: { baseUrl, apiToken } }`. */
export type CredentialsByType = Record<string, ICredentialDataDecryptedObject>;

/** A loaded community package: n8n's own loader plus the node and credential types built from it. */
export interface N8nPackage {
  /** n8n-core's PackageDirectoryLoader after loadAll(): `types`, `known`, `nodeTypes`, `credentialTypes`, icon URLs. */
  loader: PackageDirectoryLoader;
  /** The package.json name, which prefixes every node type (`<package>.<node>`). */
  packageName: string;
  /** What n8n's NodeTypes service answers for this package (plus the host's own start node). */
  nodeTypes: INodeTypes;
  /** What n8n's CredentialTypes service answers for this package. */
  credentialTypes: ICredentialTypes;
}

// One n8n instance per test process, silent, with its settings in a folder of its own (never ~/.n8n). Test workers are
// killed rather than exited, so the folder is shared and reused instead of made and removed per process.
const USER_FOLDER = join(tmpdir(), `n8n-test-host-${process.getuid?.() ?? 'user'}`);
let ready = false;
function setUpInstance(): void {
  if (ready) return;
  ready = true;
  const encryptionKey = 'n8n-test-host: no secrets are kept';
  const settingsFile = join(USER_FOLDER, '.n8n', 'config');
  if (!existsSync(settingsFile)) {
    // Written whole and renamed, so parallel workers never read half a file.
    mkdirSync(dirname(settingsFile), { recursive: true });
    writeFileSync(`${settingsFile}.${process.pid}`, JSON.stringify({ encryptionKey }), { mode: 0o600 });
    renameSync(`${settingsFile}.${process.pid}`, settingsFile);
  }
  const overrides = { N8N_USER_FOLDER: USER_FOLDER, N8N_ENCRYPTION_KEY: encryptionKey, N8N_LOG_LEVEL: 'silent' };
  const saved = Object.fromEntries(Object.keys(overrides).map((key) => [key, process.env[key]]));
  Object.assign(process.env, overrides);
  try {
    // Each config reads the environment when first built, so everything that reads a path or a level is built now.
    Container.get(InstanceSettings);
    Container.get(BinaryDataService);
    Container.get(PollTriggerExecutor); // with ErrorReporter, Tracing and TriggersAndPollers
  } finally {
    for (const [key, value] of Object.entries(saved)) if (value === undefined) delete process.env[key]; else process.env[key] = value;
  }
}

// The start node of runNode's workflow; its output is pinned, as when a user pins a trigger's output in the editor.
const START_TYPE = 'n8n-test-host.start';
const startType: INodeType = {
  description: { displayName: 'Start', name: START_TYPE, group: ['trigger'], version: 1, description: 'Feeds the pinned items',
    defaults: { name: 'Start' }, inputs: [], outputs: ['main'], properties: [] },
  async trigger() { return {}; },
};
// The nodes after the node under test (runNode's `branches`): each passes on the items it receives, as a NoOp does.
const PASS_TYPE = 'n8n-test-host.passThrough';
const passType: INodeType = {
  description: { displayName: 'Pass Through', name: PASS_TYPE, group: ['transform'], version: 1, description: 'Passes its items on',
    defaults: { name: 'Pass Through' }, inputs: ['main'], outputs: ['main'], properties: [] },
  async execute(this: IExecuteFunctions) { return [this.getInputData()]; },
};
// n8n's credential tester builds its temporary node from the NoOp node when the credential carries the test itself.
const noOpDescription: INodeTypeDescription = {
  ...startType.description, displayName: 'No Operation, do nothing', name: 'n8n-nodes-base.noOp', group: ['transform'], inputs: ['main'],
};

/** Loads a community package directory as n8n does: package.json's `n8n` block through n8n-core's PackageDirectoryLoader. */
export async function loadPackage(dir: string): Promise<N8nPackage> {
  setUpInstance();
  const loader = new PackageDirectoryLoader(dir);
  await loader.loadAll();
  const { packageName } = loader;
  const short = (type: string) => (type.startsWith(`${packageName}.`) ? type.slice(packageName.length + 1) : type);
  const toolVariants = new Map<string, INodeType>();
  const nodeTypes: INodeTypes = {
    getByName: (type) => (type === START_TYPE ? startType : type === PASS_TYPE ? passType
      : toolVariants.get(short(type)) ?? loader.getNode(short(type)).type),
    getByNameAndVersion: (type, version) => wf.NodeHelpers.getVersionedNodeType(nodeTypes.getByName(type), version),
    getKnownTypes: () => Object.fromEntries(Object.entries(loader.known.nodes).map(([name, known]) => [`${packageName}.${name}`, known])),
  };
  const credentialTypes: ICredentialTypes = {
    recognizes: (type) => type in loader.known.credentials,
    getByName: (type) => loader.getCredential(type).type,
    getSupportedNodes: (type) => (loader.known.credentials[type]?.supportedNodes ?? []).map((node) => `${packageName}.${node}`),
    getParentTypes(type) {
      const parents = loader.known.credentials[type]?.extends ?? [];
      return parents.flatMap((parent) => [parent, ...credentialTypes.getParentTypes(parent)]);
    },
  };
  // As n8n's createAiTools: each usableAsTool node also as `<name>Tool`, its output an AI tool connection, run by its execute().
  for (const name of Object.keys(loader.known.nodes)) {
    const base = loader.getNode(name).type as INodeType;
    if (!base.description.usableAsTool) continue;
    const description: INodeTypeDescription = { ...base.description, name: `${base.description.name}Tool`,
      displayName: `${base.description.displayName} Tool`, inputs: [], outputs: [wf.NodeConnectionTypes.AiTool] };
    toolVariants.set(`${name}Tool`, Object.assign(Object.create(Object.getPrototypeOf(base) as object) as INodeType, base, { description }));
  }
  return { loader, packageName, nodeTypes, credentialTypes };
}

// n8n CLI's CredentialsHelper, minus the database: credentials live in memory, keyed by type.
class HostCredentialsHelper extends wf.ICredentialsHelper {
  readonly pkg: N8nPackage;
  readonly store: CredentialsByType;
  constructor(pkg: N8nPackage, credentials: CredentialsByType = {}) {
    super();
    this.pkg = pkg;
    this.store = structuredClone(credentials);
  }

  // As the CLI: a function is called; IAuthenticateGeneric's `={{$credentials...}}` keys and values are resolved as
  // expressions against the credential data and set on request[headers|qs|body|auth].
  override async authenticate(credentials: ICredentialDataDecryptedObject, typeName: string,
    request: IHttpRequestOptions | IRequestOptionsSimplified, workflow?: Workflow, node?: INode): Promise<IHttpRequestOptions> {
    const { authenticate } = this.pkg.credentialTypes.getByName(typeName);
    if (typeof authenticate === 'function') return await authenticate(credentials, request as IHttpRequestOptions);
    if (authenticate?.type === 'generic') {
      if (!workflow || !node) throw new wf.UnexpectedError('Workflow and node are required for declarative credential authentication');
      request.headers ??= {};
      const resolve = (value: string) => (wf.isExpression(value)
        ? String(workflow.expression.getSimpleParameterValue(node, value, 'internal', { $credentials: credentials }, undefined, '') || '')
        : value);
      const target = request as unknown as Record<string, Record<string, string>>;
      for (const [outerKey, entries] of Object.entries(authenticate.properties)) {
        for (const [key, value] of Object.entries(entries as Record<string, string>)) {
          (target[outerKey] ??= {})[resolve(key)] = resolve(value);
        }
      }
    }
    return request as IHttpRequestOptions;
  }

  override async getDecrypted(additionalData: IWorkflowExecuteAdditionalData, _node: INodeCredentialsDetails, type: string,
    mode: WorkflowExecuteMode, executeData?: IExecuteData, raw?: boolean, resolveValues?: ICredentialsExpressionResolveValues) {
    const stored = this.store[type];
    if (!stored) throw new wf.UserError(`The test gave no credentials of type "${type}"`);
    if (raw) return structuredClone(stored);
    return this.applyDefaults(type, stored, mode, additionalData, resolveValues, executeData);
  }

  // As CredentialsHelper.applyDefaultsAndOverwrites: property defaults first, then expressions in the data resolved.
  applyDefaults(type: string, stored: ICredentialDataDecryptedObject, mode: WorkflowExecuteMode,
    additionalData: IWorkflowExecuteAdditionalData, resolveValues?: ICredentialsExpressionResolveValues, executeData?: IExecuteData) {
    const withDefaults = wf.NodeHelpers.getNodeParameters(this.getCredentialsProperties(type), structuredClone(stored) as INodeParameters,
      true, false, null, null) as ICredentialDataDecryptedObject;
    const keys = getAdditionalKeys(additionalData, mode, null, { isCredential: true });
    if (resolveValues) {
      const { workflow, runExecutionData, runIndex, itemIndex, node, connectionInputData } = resolveValues;
      return workflow.expression.getParameterValue(withDefaults as INodeParameters, runExecutionData, runIndex, itemIndex, node.name,
        connectionInputData, mode, keys, executeData, false, withDefaults) as ICredentialDataDecryptedObject;
    }
    const mockNode: INode = { id: 'mock', name: '', type: START_TYPE, typeVersion: 1, position: [0, 0], parameters: {} };
    const workflow = new wf.Workflow({ nodes: [mockNode], connections: {}, active: false, nodeTypes: this.pkg.nodeTypes });
    return workflow.expression.getComplexParameterValue(mockNode, withDefaults as INodeParameters, mode, keys, undefined, undefined,
      withDefaults) as ICredentialDataDecryptedObject;
  }

  override getCredentialsProperties(type: string): INodeProperties[] {
    const credentialType = this.pkg.credentialTypes.getByName(type);
    const merged: INodeProperties[] = [];
    for (const parent of credentialType.extends ?? []) wf.NodeHelpers.mergeNodeProperties(merged, this.getCredentialsProperties(parent));
    wf.NodeHelpers.mergeNodeProperties(merged, credentialType.properties);
    return merged;
  }

  override getParentTypes(name: string) { return this.pkg.credentialTypes.getParentTypes(name); }
  override isCredentialUsableByNode(credentialType: string, nodeType: string) {
    const type = this.pkg.credentialTypes.recognizes(credentialType) ? this.pkg.credentialTypes.getByName(credentialType) : undefined;
    return !type?.restrictToSupportedNodes || this.pkg.credentialTypes.getSupportedNodes(credentialType).includes(nodeType);
  }
  override async preAuthentication() { return undefined; }
  override async runPreAuthentication() { return undefined; }
  override async getCredentials(): Promise<ICredentials> { throw new wf.UserError('The test host keeps no encrypted credentials'); }
  // Only OAuth and preAuthentication write credentials back, and the host supports neither.
  override async updateCredentials() {}
  override async updateCredentialsOauthTokenData() {}
}

// The services of IWorkflowExecuteAdditionalData a community node can reach; the others say they are not there.
function additionalDataFor(credentialsHelper: HostCredentialsHelper, hooks?: ExecutionLifecycleHooks): IWorkflowExecuteAdditionalData {
  const missing = (what: string) => () => { throw new wf.UserError(`${what} is not available in the test host`); };
  const base = 'http://localhost:5678';
  return {
    credentialsHelper, hooks, executionId: hooks?.executionId, externalSecretsProxy: new ExternalSecretsProxy(), variables: {},
    currentNodeExecutionIndex: 0, executeWorkflow: missing('Executing a sub-workflow'), startRunnerTask: missing('The task runner'),
    getRunExecutionData: async () => undefined, getRuntimeCredential: async () => undefined, logAiEvent: () => {},
    restApiUrl: `${base}/rest`, instanceBaseUrl: `${base}/`, formBaseUrl: `${base}/form`, formWaitingBaseUrl: `${base}/form-waiting`,
    formTestBaseUrl: `${base}/form-test`, webhookBaseUrl: `${base}/webhook`, webhookWaitingBaseUrl: `${base}/webhook-waiting`,
    webhookTestBaseUrl: `${base}/webhook-test`, mcpBaseUrl: `${base}/mcp`, mcpTestBaseUrl: `${base}/mcp-test`,
  };
}

/** Which node of the package to run, with what parameters, credentials and version. */
export interface NodeSpec {
  pkg: N8nPackage;
  /** `campaignDialing` or `<package>.campaignDialing`. */
  type: string;
  /** The node's parameters as saved in a workflow; the engine fills in the defaults. */
  parameters?: Record<string, unknown>;
  credentials?: CredentialsByType;
  /** Defaults to the node's latest version. */
  typeVersion?: number;
}

// The node as it is saved in a workflow: full type name, a version, and a reference per credential the test gave.
function nodeFor(spec: NodeSpec, name?: string): INode {
  const type = spec.type.includes('.') ? spec.type : `${spec.pkg.packageName}.${spec.type}`;
  const versioned: INodeType | IVersionedNodeType = spec.pkg.nodeTypes.getByName(type);
  const typeVersion = spec.typeVersion ?? ('nodeVersions' in versioned ? versioned.currentVersion
    : [versioned.description.version].flat().reduce((a, b) => Math.max(a, b)));
  const { description } = spec.pkg.nodeTypes.getByNameAndVersion(type, typeVersion);
  const credentials = Object.fromEntries(Object.keys(spec.credentials ?? {}).map((credentialType) =>
    [credentialType, { id: `${credentialType}-id`, name: `${credentialType} (test)` }]));
  return {
    id: `${description.name}-id`, name: name ?? description.defaults.name ?? description.displayName, type, typeVersion,
    position: [200, 0], parameters: structuredClone(spec.parameters ?? {}) as INodeParameters, credentials,
  };
}

function workflowData(workflow: Workflow): IWorkflowBase {
  const now = new Date();
  return {
    id: workflow.id, name: workflow.name ?? 'Test', active: workflow.active, isArchived: false, activeVersionId: null, createdAt: now,
    updatedAt: now, nodes: Object.values(workflow.nodes), connections: workflow.connectionsBySourceNode, settings: workflow.settings,
  };
}

/** What runNode saw: output 0 of the node under test (pairedItem kept), its error if it failed, and the whole run. */
export interface NodeRun {
  items: INodeExecutionData[];
  /** The node's error as n8n stores it: a plain copy of the NodeApiError / NodeOperationError thrown (name, message,
   *  description, httpCode, context.itemIndex, ...); instanceof does not hold. */
  error?: ExecutionError;
  /** Every output of the node under test (a node with `continueErrorOutput` has two). */
  outputs: Array<INodeExecutionData[] | null>;
  /** With RunSpec.branches: the items each branch node received and passed on (none when it did not run). */
  branches?: { success: INodeExecutionData[]; error: INodeExecutionData[] };
  run: IRun;
}

/** What runNode runs: the node, its input items (binary `data` in base64; default one empty item) and its error setting. */
export interface RunSpec extends NodeSpec {
  items?: INodeExecutionData[];
  /** The editor's "On Error: Continue" (`onError: 'continueRegularOutput'`; `continueOnFail` is the setting's old name). */
  continueOnFail?: boolean;
  /** Any "On Error" setting; 'continueErrorOutput' gives the node a second, error output. */
  onError?: INode['onError'];
  /** The node's name in the workflow (default: its description's defaults.name). */
  nodeName?: string;
  /** Connects a pass-through node to each main output, as a workflow's branches: 'Success' to output 0 and, with
   *  `onError: 'continueErrorOutput'`, 'Error' to output 1 (the error output). NodeRun.branches tells what each got. */
  branches?: boolean;
}

/** Runs the node under test with WorkflowExecute in manual mode, fed `items` by a start node whose output is pinned.
 *  Throws n8n's WorkflowHasIssuesError, as the editor refuses to run, when a shown required parameter is empty. */
export async function runNode(spec: RunSpec): Promise<NodeRun> {
  setUpInstance();
  const start: INode = { id: 'start-id', name: 'Start', type: START_TYPE, typeVersion: 1, position: [0, 0], parameters: {} };
  const onError = spec.onError ?? (spec.continueOnFail ? 'continueRegularOutput' : undefined);
  const node: INode = { ...nodeFor(spec, spec.nodeName), ...(onError ? { onError } : {}) };
  const branchNames = spec.branches ? (onError === 'continueErrorOutput' ? ['Success', 'Error'] : ['Success']) : [];
  const branchNodes: INode[] = branchNames.map((name, n) => ({ id: `branch-${n}`, name, type: PASS_TYPE, typeVersion: 1, position: [400, n * 200], parameters: {} }));
  const workflow = new wf.Workflow({
    id: 'test-workflow', name: 'Test workflow', nodes: [start, node, ...branchNodes], active: false, nodeTypes: spec.pkg.nodeTypes,
    connections: {
      [start.name]: { main: [[{ node: node.name, type: 'main', index: 0 }]] },
      ...(branchNodes.length ? { [node.name]: { main: branchNodes.map((b) => [{ node: b.name, type: 'main' as const, index: 0 }]) } } : {}),
    },
    settings: { executionOrder: 'v1' },
  });
  const hooks = new ExecutionLifecycleHooks('manual', 'test-execution', workflowData(workflow));
  const additionalData = additionalDataFor(new HostCredentialsHelper(spec.pkg, spec.credentials), hooks);
  const runData = wf.createRunExecutionData({
    executionData: { nodeExecutionStack: [{ node: workflow.nodes[start.name]!, data: { main: [[{ json: {} }]] }, source: null }] },
    resultData: { pinData: { [start.name]: structuredClone(spec.items ?? [{ json: {} }]) } },
  });
  const run = await new WorkflowExecute(additionalData, 'manual', runData).processRunExecutionData(workflow);
  const task = run.data.resultData.runData[node.name]?.[0];
  const outputs = task?.data?.main ?? [];
  const received = (name: string) => run.data.resultData.runData[name]?.[0]?.data?.main?.[0] ?? [];
  const branches = spec.branches ? { success: received('Success'), error: received('Error') } : undefined;
  return { items: outputs[0] ?? [], outputs, ...(branches ? { branches } : {}), error: task?.error ?? run.data.resultData.error, run };
}

/** The node's subtitle as the editor shows it under the node: its `subtitle` expression over the node's parameters,
 *  defaults filled in (n8n's NodeHelpers.getNodeParameters), as useNodeHelpers().getNodeSubtitle resolves it. */
export function nodeSubtitle(spec: NodeSpec): string | undefined {
  setUpInstance();
  const node = nodeFor(spec);
  const { description } = spec.pkg.nodeTypes.getByNameAndVersion(node.type, node.typeVersion);
  if (!description.subtitle) return undefined;
  node.parameters = wf.NodeHelpers.getNodeParameters(description.properties, node.parameters, true, false, node, description) ?? {};
  const workflow = new wf.Workflow({ nodes: [node], connections: {}, active: false, nodeTypes: spec.pkg.nodeTypes });
  return String(workflow.expression.getSimpleParameterValue(node, description.subtitle, 'internal', {}, undefined, '[filled at execution time]'));
}

// Date and Date.now (and so luxon's DateTime.now and $now) read `now` while fn runs; timers are left alone.
async function atTime<T>(now: Date | undefined, fn: () => Promise<T>): Promise<T> {
  if (!now) return await fn();
  const [RealDate, fixed] = [Date, now.getTime()];
  globalThis.Date = class extends RealDate {
    constructor(...args: []) { super(...(args.length ? args : [fixed]) as []); }
    static override now() { return fixed; }
  } as DateConstructor;
  try { return await fn(); } finally { globalThis.Date = RealDate; }
}

/** What a poll returned (null: nothing to emit), the static data the next poll sees, and a poll error. */
export interface PollResult {
  items: INodeExecutionData[] | null;
  /** The workflow's static data after the poll (`node:<node name>` holds getWorkflowStaticData('node')), as the next poll of
   *  the active workflow sees it; a manual run changes nothing. */
  staticData: IDataObject;
  /** Whether n8n also wrote it to the database: only when the poll emitted items and the data changed. What a poll changes
   *  while returning null lives in memory only, and is lost when n8n restarts or the workflow is re-activated. */
  saved: boolean;
  /** The ExecutionError of a manual run; on a scheduled poll, what poll() threw (n8n records it as a failed execution). */
  error?: Error;
}

/** Runs a polling trigger's poll(): 'manual' as the editor's "Fetch test event", 'trigger' as one scheduled poll of an active workflow. */
export async function pollTrigger(spec: NodeSpec & { staticData?: IDataObject; mode: 'manual' | 'trigger'; now?: Date; /** n8n's poll budget (default 5 min). */ pollBudgetMs?: number })
  : Promise<PollResult> {
  setUpInstance();
  const node = nodeFor(spec);
  const given = structuredClone(spec.staticData ?? {});
  const workflow = new wf.Workflow({
    id: 'test-workflow', name: 'Test workflow', nodes: [node], connections: {}, active: spec.mode === 'trigger',
    nodeTypes: spec.pkg.nodeTypes, staticData: structuredClone(given), settings: { executionOrder: 'v1' },
  });
  const helper = new HostCredentialsHelper(spec.pkg, spec.credentials);
  if (spec.mode === 'manual') {
    const hooks = new ExecutionLifecycleHooks('manual', 'test-execution', workflowData(workflow));
    const runData = wf.createRunExecutionData({
      executionData: { nodeExecutionStack: [{ node: workflow.nodes[node.name]!, data: { main: [[{ json: {} }]] }, source: null }] },
    });
    const run = await atTime(spec.now, async () =>
      await new WorkflowExecute(additionalDataFor(helper, hooks), 'manual', runData).processRunExecutionData(workflow));
    const task = run.data.resultData.runData[node.name]?.[0];
    // n8n never saves static data changed by a manual execution: the next poll sees what it was given.
    return { items: task?.data?.main?.[0] ?? null, staticData: given, saved: false, error: task?.error ?? run.data.resultData.error };
  }
  let emitted: INodeExecutionData[][] | null = null;
  let error: Error | undefined;
  const context = new PollContext(workflow, workflow.nodes[node.name]!, additionalDataFor(helper), 'trigger', 'activate',
    (data) => { emitted = data; }, (failure) => { error = failure; },
    undefined, undefined, undefined, spec.pollBudgetMs === undefined ? undefined : () => spec.pollBudgetMs!);
  const poll = Container.get(PollTriggerExecutor).create(workflow, workflow.nodes[node.name]!, context, () => true);
  await atTime(spec.now, async () => await poll());
  // n8n's default (in-memory) poll scheduler reuses this Workflow for the next poll; its __emit saves the static data.
  const [items, staticData] = [(emitted as INodeExecutionData[][] | null)?.[0] ?? null, JSON.parse(JSON.stringify(workflow.staticData))];
  return { items, staticData, saved: emitted !== null && workflow.staticData.__dataChanged === true, error };
}

/** What an AI agent gets back from a tool call: the items, or the error text as n8n words it for the model. */
export interface ToolRun {
  items: INodeExecutionData[] | null;
  /** What n8n-core's makeHandleToolInvocation throws (the message, then "Details:" and the description), when the node threw. */
  error?: string;
}

/**
 * Runs a node's tool variant (`type` is the node's, e.g. `campaignDialing`) as n8n-core's makeHandleToolInvocation
 * does when an agent calls it: a SupplyDataContext on the AI tool connection, `args` as its one input item, and a
 * failure as the text the model reads (the message, then "Details:" and the description).
 */
export async function runAsTool(spec: NodeSpec & { args?: IDataObject }): Promise<ToolRun> {
  setUpInstance();
  const node = nodeFor({ ...spec, type: `${spec.type.includes('.') ? spec.type : `${spec.pkg.packageName}.${spec.type}`}Tool` });
  const workflow = new wf.Workflow({ id: 'test-workflow', name: 'Test workflow', nodes: [node], connections: {}, active: false,
    nodeTypes: spec.pkg.nodeTypes, settings: { executionOrder: 'v1' } });
  const additionalData = additionalDataFor(new HostCredentialsHelper(spec.pkg, spec.credentials));
  const context = new SupplyDataContext(workflow, workflow.nodes[node.name]!, additionalData, 'manual',
    wf.createRunExecutionData({ executionData: null }), 0, [], { [wf.NodeConnectionTypes.AiTool]: [[{ json: spec.args ?? {} }]] },
    wf.NodeConnectionTypes.AiTool, { node, data: {}, source: null }, []);
  const nodeType = workflow.nodeTypes.getByNameAndVersion(node.type, node.typeVersion);
  try {
    const result = await nodeType.execute!.call(context as unknown as IExecuteFunctions);
    return { items: Array.isArray(result) ? result[0] ?? null : null };
  } catch (caught) {
    const error = new wf.NodeOperationError(node, caught as Error);
    const details = error.description && !error.message.includes(error.description) ? `\n\nDetails: ${error.description}` : '';
    return { items: null, error: `${error.message}${details}` };
  }
}

/** A node and the name of one of its listSearch / loadOptions methods. */
export type MethodSpec = NodeSpec & { method: string; /** The parameter the method fills, e.g. `parameters.campaign`. */ path?: string };

// As n8n's DynamicNodeParametersService: a one-node workflow named Temp-Node and a LoadOptionsContext over it.
function methodContext(spec: MethodSpec, kind: 'listSearch' | 'loadOptions') {
  setUpInstance();
  const node = { ...nodeFor(spec), id: 'uuid-1234', name: 'Temp-Node', position: [0, 0] as [number, number] };
  const workflow = new wf.Workflow({ nodes: [node], connections: {}, active: false, nodeTypes: spec.pkg.nodeTypes });
  const method = workflow.nodeTypes.getByNameAndVersion(node.type, node.typeVersion).methods?.[kind]?.[spec.method];
  if (typeof method !== 'function') throw new wf.UnexpectedError(`Node type ${node.type} has no ${kind} method "${spec.method}"`);
  const additionalData = additionalDataFor(new HostCredentialsHelper(spec.pkg, spec.credentials));
  additionalData.currentNodeParameters = workflow.nodes[node.name]!.parameters;
  return { method, context: new LoadOptionsContext(workflow, workflow.nodes[node.name]!, additionalData, spec.path ?? '') };
}

/** Calls `methods.listSearch[method](filter, paginationToken)` as the editor's resource locator does. */
export async function listSearch(spec: MethodSpec & { filter?: string; paginationToken?: string }): Promise<INodeListSearchResult> {
  const { method, context } = methodContext(spec, 'listSearch');
  return await (method as (this: LoadOptionsContext, filter?: string, token?: string) => Promise<INodeListSearchResult>)
    .call(context, spec.filter, spec.paginationToken);
}

/** Calls `methods.loadOptions[method]()` as the editor does for an options parameter. */
export async function loadOptions(spec: MethodSpec): Promise<INodePropertyOptions[]> {
  const { method, context } = methodContext(spec, 'loadOptions');
  return await (method as (this: LoadOptionsContext) => Promise<INodePropertyOptions[]>).call(context);
}

/** The answer of the editor's "Test" button for a credential. */
export interface CredentialTestResult { status: 'OK' | 'Error'; message: string }

/** Tests credential data as n8n's CredentialsTester: the credential's `test` request through RoutingNode, then its rules. */
export async function testCredential(spec: { pkg: N8nPackage; credentialType: string; data: ICredentialDataDecryptedObject })
  : Promise<CredentialTestResult> {
  setUpInstance();
  const { pkg, credentialType } = spec;
  const type: ICredentialType = pkg.credentialTypes.getByName(credentialType);
  let testRequest: ICredentialTestRequest | undefined = type.test;
  let testFunction: ICredentialTestFunction | undefined;
  let testNodeType: INodeType | undefined;
  for (const name of testRequest ? [] : pkg.credentialTypes.getSupportedNodes(credentialType)) {
    const nodeType = pkg.nodeTypes.getByNameAndVersion(name);
    const testedBy = nodeType.description.credentials?.find((credential) => credential.name === credentialType)?.testedBy;
    if (typeof testedBy === 'string') testFunction ??= nodeType.methods?.credentialTest?.[testedBy];
    else if (testedBy && !testRequest) [testRequest, testNodeType] = [testedBy, nodeType];
  }
  if (!testRequest && !testFunction) return { status: 'Error', message: 'No testing function found for this credential.' };

  const helper = new HostCredentialsHelper(pkg);
  const additionalData = additionalDataFor(helper);
  const credentials = { id: 'credential-under-test', name: 'Credential under test', type: credentialType, data: spec.data };
  try {
    credentials.data = helper.applyDefaults(credentialType, spec.data, 'internal', additionalData);
  } catch (error) {
    return { status: 'Error', message: String((error as Error).message) };
  }
  if (testFunction) return await testFunction.call(new CredentialTestContext(), credentials);

  const description = testNodeType?.description ?? noOpDescription;
  const tempType: INodeType = { description: { ...description, credentials: [{ name: credentialType, required: true }],
    properties: [{ displayName: 'Temp', name: 'temp', type: 'string', routing: { request: testRequest!.request }, default: '' }] } };
  const node: INode = { id: 'temp', name: 'Temp-Node', type: description.name, typeVersion: [description.version].flat().at(-1)!,
    position: [0, 0], parameters: {}, credentials: { [credentialType]: { id: credentials.id, name: credentials.name } } };
  const workflow = new wf.Workflow({ nodes: [node], connections: {}, active: false,
    nodeTypes: { getByName: () => tempType, getByNameAndVersion: () => tempType, getKnownTypes: () => ({}) } });
  const context = new ExecuteContext(workflow, node, additionalData, 'internal', wf.createRunExecutionData({ executionData: null }), 0, [],
    { main: [[{ json: {} }]] }, { node, data: {}, source: null }, []);
  let response: INodeExecutionData[][] | null | undefined;
  try {
    response = await new RoutingNode(context, tempType, credentials).runNode();
  } catch (caught) {
    const error = caught as { message: string; cause?: { code?: string; response?: { status: number; statusText?: string } } };
    const failed = error.cause?.response;
    if (failed) {
      for (const rule of testRequest!.rules ?? []) {
        if (rule.type === 'responseCode' && rule.properties.value === failed.status) {
          return { status: 'Error', message: rule.properties.message };
        }
      }
      if (failed.status < 199 || failed.status > 299) {
        return { status: 'Error', message: failed.statusText || `Received HTTP status code: ${failed.status}` };
      }
    } else if (error.cause?.code) {
      return { status: 'Error', message: error.cause.code };
    }
    return { status: 'Error', message: error.message.toString() };
  }
  for (const rule of testRequest!.rules ?? []) {
    if (rule.type !== 'responseSuccessBody') continue;
    const body = response?.[0]?.[0]?.json;
    const value = rule.properties.key.split('.').reduce<unknown>((at, key) => (at as IDataObject | undefined)?.[key], body);
    if (value === rule.properties.value) return { status: 'Error', message: rule.properties.message };
  }
  return { status: 'OK', message: 'Connection successful!' };
}

// An AI agent as n8n 2.41's AI Agent 3 runs its tools: its execute() answers an EngineRequest naming the tool node and
// the arguments its model chose; WorkflowExecute runs that node (a failure becomes `[{"error": message}]` on its AI tool
// output) and calls the agent again with the results, which it hands to the model as AI Agent 3's buildSteps does. The
// model is an OpenAI-compatible chat completions endpoint (`modelUrl`).
const AGENT_TYPE = 'n8n-test-host.agent';
interface ChatCompletion { choices: Array<{ message: { content: string | null; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> } }> }
async function chat(url: string, messages: unknown[], tool: string): Promise<ChatCompletion['choices'][number]['message']> {
  const res = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify({ model: 'gpt-stand-in', messages,
      tools: [{ type: 'function', function: { name: tool, description: 'The tool', parameters: { type: 'object', properties: {} } } }] }) });
  if (!res.ok) throw new wf.UserError(`The model answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as ChatCompletion).choices[0]!.message;
}
/** What AI Agent 3 (buildSteps' buildObservation) hands the model for a tool's run: its AI tool items as JSON, or its error. */
function observationOf(data: { data?: Record<string, Array<INodeExecutionData[] | null>>; error?: { message?: string; name?: string } } | undefined): string {
  const items = data?.data?.[wf.NodeConnectionTypes.AiTool]?.[0]?.map((item) => item?.json);
  if (items?.length) return JSON.stringify(items);
  if (data?.error) return JSON.stringify({ error: data.error.message ?? 'Unknown error', ...(data.error.name ? { errorType: data.error.name } : {}) });
  return JSON.stringify('');
}
const agentType: INodeType = {
  description: { displayName: 'Agent', name: AGENT_TYPE, group: ['transform'], version: 1, description: 'Asks its model, runs the tool it calls',
    defaults: { name: 'Agent' }, inputs: ['main', wf.NodeConnectionTypes.AiTool], outputs: ['main'], properties: [
      { displayName: 'Model URL', name: 'modelUrl', type: 'string', default: '' },
      { displayName: 'Tool', name: 'tool', type: 'string', default: '' },
      { displayName: 'Prompt', name: 'prompt', type: 'string', default: '' },
    ] },
  async execute(this: IExecuteFunctions, response?: EngineResponse) {
    const [url, toolNode, prompt] = ['modelUrl', 'tool', 'prompt'].map((name) => String(this.getNodeParameter(name, 0)));
    const tool = wf.nodeNameToToolName(toolNode!);
    const messages: unknown[] = [{ role: 'user', content: prompt }];
    const [answered] = response?.actionResponses ?? [];
    if (!answered) {
      const call = (await chat(url!, messages, tool)).tool_calls?.[0];
      if (!call) throw new wf.UserError('The model called no tool');
      return { actions: [{ actionType: 'ExecutionNodeAction', nodeName: toolNode!, input: JSON.parse(call.function.arguments) as IDataObject,
        type: wf.NodeConnectionTypes.AiTool, id: call.id, metadata: { itemIndex: 0 } }], metadata: {} } as EngineRequest;
    }
    const observation = observationOf(answered.data as Parameters<typeof observationOf>[0]);
    const call = { id: answered.action.id, type: 'function', function: { name: tool, arguments: JSON.stringify(answered.action.input) } };
    const answer = await chat(url!, [...messages, { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: answered.action.id, content: observation }], tool);
    return [[{ json: { output: answer.content, observation } }]];
  },
};

/** What an agent run gave: the agent's output item, and the tool node's run as the workflow recorded it. */
export interface AgentRun { output?: IDataObject; tool?: IRun['data']['resultData']['runData'][string]; error?: ExecutionError }

/**
 * Runs the package's node as the one tool of an agent (see agentType) in n8n-core's WorkflowExecute: Start → Agent,
 * the node's tool variant (`<type>Tool`, named `nodeName`) on the agent's AI tool input, the model at `modelUrl`.
 */
export async function runAgent(spec: NodeSpec & { modelUrl: string; prompt: string; nodeName?: string }): Promise<AgentRun> {
  setUpInstance();
  const toolNode: INode = { ...nodeFor({ ...spec, type: `${spec.type.includes('.') ? spec.type : `${spec.pkg.packageName}.${spec.type}`}Tool` },
    spec.nodeName ?? 'Campaign Dialing'), position: [200, 200] };
  const start: INode = { id: 'start-id', name: 'Start', type: START_TYPE, typeVersion: 1, position: [0, 0], parameters: {} };
  const agent: INode = { id: 'agent-id', name: 'Agent', type: AGENT_TYPE, typeVersion: 1, position: [200, 0],
    parameters: { modelUrl: spec.modelUrl, tool: toolNode.name, prompt: spec.prompt } };
  const nodeTypes: INodeTypes = { ...spec.pkg.nodeTypes,
    getByName: (type) => (type === AGENT_TYPE ? agentType : spec.pkg.nodeTypes.getByName(type)),
    getByNameAndVersion: (type, version) => (type === AGENT_TYPE ? agentType : spec.pkg.nodeTypes.getByNameAndVersion(type, version)) };
  const workflow = new wf.Workflow({
    id: 'test-workflow', name: 'Agent workflow', nodes: [start, agent, toolNode], active: false, nodeTypes, settings: { executionOrder: 'v1' },
    connections: {
      [start.name]: { main: [[{ node: agent.name, type: 'main', index: 0 }]] },
      [toolNode.name]: { [wf.NodeConnectionTypes.AiTool]: [[{ node: agent.name, type: wf.NodeConnectionTypes.AiTool, index: 0 }]] },
    },
  });
  const hooks = new ExecutionLifecycleHooks('manual', 'test-execution', workflowData(workflow));
  const additionalData = additionalDataFor(new HostCredentialsHelper(spec.pkg, spec.credentials), hooks);
  const runData = wf.createRunExecutionData({
    executionData: { nodeExecutionStack: [{ node: workflow.nodes[start.name]!, data: { main: [[{ json: {} }]] }, source: null }] },
    resultData: { pinData: { [start.name]: [{ json: {} }] } },
  });
  const run = await new WorkflowExecute(additionalData, 'manual', runData).processRunExecutionData(workflow);
  const { runData: ran } = run.data.resultData;
  return { output: ran[agent.name]?.at(-1)?.data?.main?.[0]?.[0]?.json, tool: ran[toolNode.name], error: run.data.resultData.error };
}
