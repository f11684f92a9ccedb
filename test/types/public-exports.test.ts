/**
 * The types named in public signatures are exported from the package's entry, so an embedder
 * can name what it passes and gets back (the options of ToolInvoker, ToolManager and
 * compileScript, a manager's responses, the driver choice) without reaching into its files.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import * as isochain from "../../src/index.ts";
import type {
  ChainRunResult,
  CallsNotAwaitedWarning,
  ChainRunWarning,
  CompileResult,
  DriverChoice,
  ExecuteSelectedToolsOptions,
  ForcedToolChoice,
  InvokeOptions,
  OpenSessionOptions,
  RenderDeclarationsOptions,
  ToolCallResponse,
  ToolChainToolOptions,
  ToolInvoker,
  ToolInvokerOptions,
  ToolManager,
  ToolManagerOptions,
  UnhandledRejectionWarning,
} from "../../src/index.ts";

describe("public exports", () => {
  it("names the types of the public signatures", () => {
    expectTypeOf<ConstructorParameters<typeof ToolInvoker>[0]>().toEqualTypeOf<ToolInvokerOptions>();
    expectTypeOf<Parameters<ToolInvoker["openSession"]>[0]>().toEqualTypeOf<OpenSessionOptions | undefined>();
    expectTypeOf<Parameters<ToolInvoker["invoke"]>[1]>().toEqualTypeOf<InvokeOptions>();
    expectTypeOf<ConstructorParameters<typeof ToolManager>[0]>().toEqualTypeOf<ToolManagerOptions>();
    expectTypeOf<Parameters<ToolManager["executeSelectedTools"]>[1]>().toEqualTypeOf<ExecuteSelectedToolsOptions | undefined>();
    expectTypeOf<Awaited<ReturnType<ToolManager["executeSelectedTools"]>>>().toEqualTypeOf<ToolCallResponse[]>();
    expectTypeOf<ReturnType<ToolManager["forcedToolChoices"]>>().toEqualTypeOf<ForcedToolChoice[]>();
    expectTypeOf<ReturnType<typeof isochain.compileScript>>().toEqualTypeOf<CompileResult>();
    expectTypeOf<ToolChainToolOptions["driver"]>().toEqualTypeOf<DriverChoice | undefined>();
    expectTypeOf<Parameters<typeof isochain.renderDeclarations>[1]>().toEqualTypeOf<RenderDeclarationsOptions | undefined>();
    expectTypeOf<ChainRunResult["warnings"]>().toEqualTypeOf<readonly ChainRunWarning[] | undefined>();
    expectTypeOf<ChainRunWarning>().toEqualTypeOf<CallsNotAwaitedWarning | UnhandledRejectionWarning>();
  });

  it("names the limit errors a caller branches on, and still takes any thrown name", () => {
    expectTypeOf<isochain.ChainLimitErrorName>().toEqualTypeOf<"TimeoutError" | "CpuLimitError" | "MemoryLimitError" | "CallLimitError" | "DeadlockError" | "SandboxError" | "CancelledError">();
    expectTypeOf<"TimeoutError">().toExtend<isochain.ChainError["name"]>();
    expectTypeOf<"MyOwnError">().toExtend<isochain.ChainError["name"]>();
    expectTypeOf<NonNullable<isochain.TracedChainRunResult["traceError"]>["code"]>().toEqualTypeOf<isochain.ErrorCode>();
    expectTypeOf<NonNullable<isochain.ChainRunResult["cleanupError"]>["code"]>().toEqualTypeOf<isochain.ErrorCode>();
  });

  it("lets a ToolChainTool stand wherever a Tool is asked for, as a defineTool result does", () => {
    expectTypeOf<isochain.ToolChainTool>().toExtend<isochain.Tool>();
    const tools: isochain.Tool[] = [new isochain.ToolChainTool({ toolbox: new isochain.Toolbox() })];
    expect(tools[0]?.name).toBe("run_chain");
  });

  it("exports the limits the docs name", () => {
    expect(isochain.TOOL_NAME_PATTERN.test("crm.search")).toBe(true);
    expect(isochain.MAX_SCHEMA_DEPTH).toBe(64);
    expect(isochain.MAX_SCRIPT_NESTING).toBe(256);
  });
});
