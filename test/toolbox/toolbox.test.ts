import { describe, expect, it } from "vitest";
import { isChainRuntimeError, type AnyTool, type HostedTool } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { defineSkill } from "../../src/skills/skill.ts";
import { chainTool, dropTableTool, oddNameTool, searchTool, sendEmailTool, shellProviderDefined, webSearchHosted } from "./sample-tools.ts";
import { thrown } from "../support/thrown.ts";

function codeOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    if (isChainRuntimeError(error)) return error.code;
    throw error;
  }
  throw new Error("did not throw");
}

const echo = (name: string, description = "Echo.") =>
  defineTool({ name, description, inputSchema: { type: "object" }, execute: () => "x" });

const everything = (): AnyTool[] => [searchTool, sendEmailTool, dropTableTool, oddNameTool, webSearchHosted, shellProviderDefined, chainTool()];

describe("Toolbox registry", () => {
  it("adds, gets, lists, counts and iterates in insertion order", () => {
    const box = new Toolbox([searchTool]).add(sendEmailTool, webSearchHosted);
    expect(box.size).toBe(3);
    expect(box.names()).toEqual(["search_docs", "send_email", "web_search"]);
    expect(box.all()).toEqual([searchTool, sendEmailTool, webSearchHosted]);
    expect([...box]).toEqual(box.all());
    expect(box.get("send_email")).toBe(sendEmailTool);
    expect(box.get("missing")).toBeUndefined();
    expect(box.has("web_search")).toBe(true);
    expect(box.has("missing")).toBe(false);
  });

  it("replaces a tool added again under the same name, keeping its place", () => {
    const first = echo("a", "first");
    const second = echo("a", "second");
    const box = new Toolbox([first, echo("b")]).add(second);
    expect(box.size).toBe(2);
    expect(box.get("a")).toBe(second);
    expect(box.names()).toEqual(["a", "b"]);
  });

  it("refuses run_chain with TOOL_NAME_TAKEN unless it is the branded chain tool", () => {
    const box = new Toolbox();
    expect(codeOf(() => box.add(echo("run_chain")))).toBe("TOOL_NAME_TAKEN");
    expect(box.has("run_chain")).toBe(false);
    const chain = chainTool();
    box.add(chain);
    expect(box.get("run_chain")).toBe(chain);
  });

  it("refuses malformed tools with TOOL_INVALID and adds none of the batch", () => {
    const box = new Toolbox();
    expect(codeOf(() => box.add(echo("ok"), { name: "bad", description: "x" } as never))).toBe("TOOL_INVALID");
    expect(box.size).toBe(0);
    expect(codeOf(() => new Toolbox([{ name: "x", description: "d", inputSchema: { type: "string" }, execute: () => 1 } as never]))).toBe(
      "TOOL_INVALID",
    );
  });

  it("checks hosted and provider-defined tools too", () => {
    const fieldOf = (tool: unknown): unknown => {
      try {
        new Toolbox([tool as AnyTool]);
      } catch (error) {
        if (isChainRuntimeError(error) && error.code === "TOOL_INVALID") return error.details.field;
        throw error;
      }
      return "accepted";
    };
    expect(fieldOf({ name: "h", description: "d", providerSpecs: { openai: "x" } })).toBe("providerSpecs.openai");
    expect(fieldOf({ name: "h", description: "d", providerSpecs: null })).toBe("providerSpecs");
    expect(fieldOf({ name: "h", description: "d" })).toBe("execute");
    expect(fieldOf({ ...shellProviderDefined, callTypes: "shell" })).toBe("callTypes");
    expect(fieldOf({ ...shellProviderDefined, handleCall: undefined })).toBe("handleCall");
    expect(fieldOf({ ...shellProviderDefined, providerSpecs: undefined })).toBe("providerSpecs");
    expect(fieldOf(null)).toBe("tool");
    expect(fieldOf(webSearchHosted)).toBe("accepted");
    expect(fieldOf(shellProviderDefined)).toBe("accepted");
  });

  it("lists local tools by exact risk, missing risk counting as safe", () => {
    const plain = { name: "plain", description: "No risk field.", inputSchema: { type: "object" as const }, execute: () => 1 };
    const box = new Toolbox(everything()).add(plain);
    expect(box.byRisk("safe").map((tool) => tool.name)).toEqual(["search_docs", "odd-name.v2", "run_chain", "plain"]);
    expect(box.byRisk("high").map((tool) => tool.name)).toEqual(["send_email"]);
    expect(box.byRisk("critical").map((tool) => tool.name)).toEqual(["drop_table"]);
  });

  it("lists the tools a chain may call: local, not hosted, provider-defined or the chain tool", () => {
    const box = new Toolbox(everything());
    expect(box.callable().map((tool) => tool.name)).toEqual(["search_docs", "send_email", "drop_table", "odd-name.v2"]);
  });
});

describe("Toolbox schemas", () => {
  it("leaves deferred tools out of schemas() and lists them in deferredSchemas()", () => {
    const box = new Toolbox([searchTool, dropTableTool]);
    expect(box.schemas().map((schema) => schema.name)).toEqual(["search_docs"]);
    expect(box.deferredSchemas().map((schema) => schema.name)).toEqual(["drop_table"]);
    expect(box.deferredSchemas("openai")).toEqual([
      { type: "function", function: { name: "drop_table", description: "Drop a table.", parameters: dropTableTool.inputSchema } },
    ]);
    expect(Object.keys(box.schemas("vercel"))).toEqual(["search_docs"]);
    expect(Object.keys(box.deferredSchemas("vercel"))).toEqual(["drop_table"]);
  });

  it("encodes for each provider, generic (MCP shape) by default", () => {
    const box = new Toolbox([searchTool, webSearchHosted]);
    expect(box.schemas()).toEqual([
      { name: "search_docs", description: searchTool.description, inputSchema: searchTool.inputSchema, outputSchema: searchTool.outputSchema },
    ]);
    expect(box.schemas("anthropic")).toEqual([
      { name: "search_docs", description: searchTool.description, input_schema: searchTool.inputSchema },
      webSearchHosted.providerSpecs.anthropic,
    ]);
  });

  it("gives one tool's schema, deferred or not, or undefined", () => {
    const box = new Toolbox([dropTableTool, webSearchHosted]);
    expect(box.schemaFor("drop_table")).toMatchObject({ name: "drop_table" });
    expect(box.schemaFor("drop_table", "vercel")).toEqual({ description: "Drop a table.", inputSchema: { jsonSchema: dropTableTool.inputSchema } });
    expect(box.schemaFor("web_search", "openai")).toEqual({ type: "web_search_preview" });
    expect(box.schemaFor("web_search", "vercel")).toBeUndefined();
    expect(box.schemaFor("missing")).toBeUndefined();
  });
});

describe("Toolbox fingerprint", () => {
  it("is stable across insertion order and sorted by name", () => {
    const a = new Toolbox(everything()).fingerprint();
    const b = new Toolbox(everything().reverse()).fingerprint();
    expect(a).toEqual(b);
    expect(a.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(a.tools.map((tool) => tool.name)).toEqual([...a.tools.map((tool) => tool.name)].sort());
    expect(a.tools.find((tool) => tool.name === "send_email")).toMatchObject({ kind: "local", risk: "high" });
    expect(a.tools.find((tool) => tool.name === "run_chain")).toMatchObject({ kind: "chain", risk: "safe" });
    expect(a.tools.find((tool) => tool.name === "shell")).toMatchObject({ kind: "provider-defined" });
    expect(a.tools.find((tool) => tool.name === "web_search")).toMatchObject({ kind: "hosted" });
  });

  it("changes when a schema, description, risk or hosted spec changes, not when execute does", () => {
    const base = new Toolbox([echo("a")]).fingerprint();
    const sameShape = new Toolbox([{ ...echo("a"), execute: () => "other" }]).fingerprint();
    expect(sameShape).toEqual(base);
    expect(new Toolbox([echo("a", "changed")]).fingerprint().digest).not.toBe(base.digest);
    const wider = defineTool({ name: "a", description: "Echo.", inputSchema: { type: "object", properties: { x: {} } }, execute: () => "x" });
    expect(new Toolbox([wider]).fingerprint().tools[0]?.schemaDigest).not.toBe(base.tools[0]?.schemaDigest);
    const risky = new Toolbox([{ ...echo("a"), risk: "high" }]).fingerprint();
    expect(risky.tools[0]?.schemaDigest).toBe(base.tools[0]?.schemaDigest);
    expect(risky.digest).not.toBe(base.digest);
    const hosted: HostedTool = { ...webSearchHosted, providerSpecs: { openai: { type: "web_search" } } };
    expect(new Toolbox([hosted]).fingerprint().digest).not.toBe(new Toolbox([webSearchHosted]).fingerprint().digest);
  });
});

describe("Toolbox narrowing", () => {
  it("keeps only the allowed tools in a new box, ignoring unknown names", () => {
    const box = new Toolbox(everything());
    const narrow = box.narrow(["send_email", "web_search", "nope"]);
    expect(narrow).not.toBe(box);
    expect(narrow.names()).toEqual(["send_email", "web_search"]);
    expect(narrow.get("send_email")).toBe(sendEmailTool);
    expect(box.size).toBe(7);
  });

  it("narrows by a skill's allowedTools; * keeps all, none keeps nothing", () => {
    const box = new Toolbox(everything());
    const skill = (allowedTools: string[]) => defineSkill({ name: "s", description: "d", instructions: "i", allowedTools });
    expect(box.withSkill(skill(["search_docs"])).names()).toEqual(["search_docs"]);
    expect(box.withSkill(skill(["*"])).names()).toEqual(box.names());
    expect(box.withSkill(skill([])).size).toBe(0);
  });
});

describe("Toolbox arguments", () => {
  it("refuses what is not a list of tools with ARGUMENT_INVALID, never a TypeError or a per-character TOOL_INVALID", () => {
    for (const [tools, got] of [
      [null, "got null."],
      ["abc", "got a string."],
      [5, "got a number."],
      [true, "got a boolean."],
      [{}, "got an object that is not iterable."],
      [() => [searchTool], "got a function."],
    ] as const) {
      const error = thrown(() => new Toolbox(tools as never));
      expect(error.code).toBe("ARGUMENT_INVALID");
      expect(error.message).toBe(`new Toolbox() takes an array of tools (defineTool(...)); ${got}`);
      expect(error.details).toEqual({ argument: "tools" });
    }
  });

  it("names the slip of passing one tool where a list belongs", () => {
    const error = thrown(() => new Toolbox(searchTool as never));
    expect(error.code).toBe("ARGUMENT_INVALID");
    expect(error.message).toContain('got one tool ("search_docs"); wrap it in an array: new Toolbox([tool])');
  });

  it("still takes any iterable of tools, another Toolbox included, and nothing at all", () => {
    expect(new Toolbox().size).toBe(0);
    expect(new Toolbox(undefined).size).toBe(0);
    expect(new Toolbox(new Set([searchTool, sendEmailTool])).names()).toEqual(["search_docs", "send_email"]);
    expect(new Toolbox(new Toolbox([searchTool])).names()).toEqual(["search_docs"]);
    function* generate(): Generator<AnyTool> {
      yield searchTool;
    }
    expect(new Toolbox(generate()).names()).toEqual(["search_docs"]);
    // A list whose items are not tools is still about the items: TOOL_INVALID naming the field.
    expect(thrown(() => new Toolbox([null as never])).code).toBe("TOOL_INVALID");
  });

  it("refuses narrow() and withSkill() arguments that are not name lists or skills", () => {
    const box = new Toolbox([searchTool, sendEmailTool]);
    for (const names of [null, "search_docs", 5, {}]) {
      const error = thrown(() => box.narrow(names as never));
      expect(error).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "allowedTools" } });
      expect(error.message).toMatch(/^Toolbox\.narrow\(\) takes an array of tool names; got /);
    }
    expect(box.narrow(new Set(["send_email"])).names()).toEqual(["send_email"]);
    for (const skill of [null, undefined, "s", {}, { allowedTools: "search_docs" }]) {
      const error = thrown(() => box.withSkill(skill as never));
      expect(error).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "skill" } });
    }
    expect(thrown(() => box.withSkill({ allowedTools: "x" } as never)).message).toContain("an object whose allowedTools is a string");
  });
});

describe("Toolbox provider and risk arguments", () => {
  const PROVIDERS = 'Use one of "openai", "anthropic", "vercel", "generic".';

  it("refuses a provider that is none, in schemas(), deferredSchemas() and schemaFor(), naming the nearest", () => {
    const box = new Toolbox([searchTool, dropTableTool]);
    for (const [method, run] of [
      ["schemas", (provider: unknown) => box.schemas(provider as never)],
      ["deferredSchemas", (provider: unknown) => box.deferredSchemas(provider as never)],
      ["schemaFor", (provider: unknown) => box.schemaFor("search_docs", provider as never)],
    ] as const) {
      const wrongCase = thrown(() => run("OpenAI"));
      expect(wrongCase).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "provider", choices: ["openai", "anthropic", "vercel", "generic"] } });
      expect(wrongCase.message).toBe(`Toolbox.${method}(): unknown provider "OpenAI"; did you mean "openai"? ${PROVIDERS}`);
      expect(thrown(() => run("anthropc")).message).toContain('did you mean "anthropic"?');
      expect(thrown(() => run("bogus")).message).toBe(`Toolbox.${method}(): unknown provider "bogus". ${PROVIDERS}`);
      expect(thrown(() => run(null)).message).toBe(`Toolbox.${method}() takes a provider; got null. ${PROVIDERS}`);
    }
    // Even with no such tool, and on an empty box: the argument is wrong whatever the box holds.
    expect(thrown(() => box.schemaFor("missing", "bogus" as never)).code).toBe("ARGUMENT_INVALID");
    expect(thrown(() => new Toolbox().schemas("bogus" as never)).code).toBe("ARGUMENT_INVALID");
  });

  it("keeps the default provider: no argument (or undefined) is generic", () => {
    const box = new Toolbox([searchTool, dropTableTool]);
    expect(box.schemas()).toEqual(box.schemas("generic"));
    expect(box.schemas(undefined as never)).toEqual(box.schemas("generic"));
    expect(box.deferredSchemas()).toEqual(box.deferredSchemas("generic"));
    expect(box.schemaFor("search_docs")).toEqual(box.schemaFor("search_docs", "generic"));
  });

  it("refuses a risk that is none in byRisk(), a missing one included", () => {
    const box = new Toolbox(everything());
    const upper = thrown(() => box.byRisk("HIGH" as never));
    expect(upper).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "risk", choices: ["safe", "high", "critical"] } });
    expect(upper.message).toBe('Toolbox.byRisk(): unknown risk "HIGH"; did you mean "high"? Use one of "safe", "high", "critical".');
    expect(thrown(() => (box.byRisk as () => unknown)()).message).toBe('Toolbox.byRisk() takes a risk; got undefined. Use one of "safe", "high", "critical".');
    expect(thrown(() => box.byRisk("medium" as never)).message).toBe('Toolbox.byRisk(): unknown risk "medium". Use one of "safe", "high", "critical".');
  });
});
