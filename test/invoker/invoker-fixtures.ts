// Shared test doubles for the invoker and manager suites.
import { MemoryBlobStore } from "../../src/artifacts/memory-blob-store.ts";
import type { ToolRegistry } from "../../src/invoker/tool-registry.ts";
import { ToolInvoker, type ToolInvokerOptions } from "../../src/invoker/tool-invoker.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import type {
  AnyTool,
  ApprovalDecision,
  ApprovalHandler,
  ApprovalRequest,
  ApprovalRequestOptions,
  ArtifactRef,
  BlobMeta,
  ChainPolicy,
  ObjectJsonSchema,
  Tool,
  ToolContext,
  ToolRisk,
} from "../../src/kernel/index.ts";

/** A registry double: a Map with the `get`/`names` the invoker needs (and `all` for the manager). */
export class MapRegistry implements ToolRegistry {
  readonly #tools = new Map<string, AnyTool>();
  constructor(tools: Iterable<AnyTool> = []) {
    for (const tool of tools) this.#tools.set(tool.name, tool);
  }
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }
  has(name: string): boolean {
    return this.#tools.has(name);
  }
  names(): string[] {
    return [...this.#tools.keys()];
  }
  all(): AnyTool[] {
    return [...this.#tools.values()];
  }
}

export const OPEN_SCHEMA: ObjectJsonSchema = { type: "object" };

/** A local tool whose execute records every call. */
export function localTool(
  name: string,
  execute: (args: Record<string, unknown>, ctx: ToolContext) => unknown,
  extra: { risk?: ToolRisk; inputSchema?: ObjectJsonSchema; takesControl?: boolean } = {},
): Tool<Record<string, unknown>, unknown> & { calls: { args: Record<string, unknown>; ctx: ToolContext }[] } {
  const calls: { args: Record<string, unknown>; ctx: ToolContext }[] = [];
  return {
    name,
    description: `test tool ${name}`,
    inputSchema: extra.inputSchema ?? OPEN_SCHEMA,
    ...(extra.risk ? { risk: extra.risk } : {}),
    ...(extra.takesControl ? { takesControl: true } : {}),
    calls,
    execute(args, ctx) {
      calls.push({ args, ctx });
      return execute(args, ctx) as never;
    },
  };
}

/** An echo tool: returns its arguments. */
export function echoTool(name = "echo", extra: Parameters<typeof localTool>[2] = {}) {
  return localTool(name, (args) => ({ ...args }), extra);
}

/** An approval handler that records requests and answers with `answer` (a decision, or a function). */
export function approver(
  answer: ApprovalDecision | ((req: ApprovalRequest, options: ApprovalRequestOptions) => Promise<ApprovalDecision>),
): ApprovalHandler & { requests: ApprovalRequest[]; signals: AbortSignal[] } {
  const requests: ApprovalRequest[] = [];
  const signals: AbortSignal[] = [];
  return {
    requests,
    signals,
    async request(req, options) {
      requests.push(req);
      signals.push(options.signal);
      return typeof answer === "function" ? answer(req, options) : answer;
    },
  };
}

/** A MemoryBlobStore that counts calls to resolve/pin/unpin. */
export class SpyBlobStore extends MemoryBlobStore {
  readonly resolved: ArtifactRef[] = [];
  readonly pinned: ArtifactRef[] = [];
  readonly unpinned: ArtifactRef[] = [];
  override async resolve(ref: ArtifactRef): Promise<Uint8Array> {
    this.resolved.push(ref);
    return super.resolve(ref);
  }
  override async pin(ref: ArtifactRef): Promise<void> {
    this.pinned.push(ref);
    return super.pin(ref);
  }
  override async unpin(ref: ArtifactRef): Promise<void> {
    this.unpinned.push(ref);
    return super.unpin(ref);
  }
  override async put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef> {
    return super.put(bytes, meta);
  }
}

/** Small, fast policy for tests. */
export const FAST_POLICY: Partial<ChainPolicy> = { callTimeoutMs: 200, approvalTimeoutMs: 50 };

/**
 * An invoker over a real `Toolbox` of `tools`, with the fast policy unless overridden.
 * `registry: "map"` uses the {@link MapRegistry} double instead, for tools a Toolbox refuses.
 */
export function makeInvoker(
  tools: AnyTool[],
  options: Partial<Omit<ToolInvokerOptions, "toolbox">> & { registry?: "toolbox" | "map" } = {},
): ToolInvoker {
  const { registry = "toolbox", ...rest } = options;
  return new ToolInvoker({
    ...rest,
    toolbox: registry === "map" ? new MapRegistry(tools) : new Toolbox(tools),
    policy: { ...FAST_POLICY, ...rest.policy },
  });
}

/** A promise you resolve from outside. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  const { promise, resolve } = Promise.withResolvers<T>();
  return { promise, resolve };
}
