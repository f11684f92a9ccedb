// Tools shared by the toolbox tests: one of each kind, with schemas that exercise the encoders
// and the declaration renderer. Not a test file.
import { brandChainTool, type HostedTool, type ProviderDefinedTool, type Tool } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";

export const searchTool = defineTool({
  name: "search_docs",
  description: "Search the product docs.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "Words to look for." },
      limit: { type: "integer", minimum: 1, maximum: 50, default: 10 },
      mode: { enum: ["fast", "deep"] },
    },
    required: ["query"],
  },
  outputSchema: {
    type: "object",
    properties: { hits: { type: "array", items: { type: "object", properties: { title: { type: "string" }, url: { type: "string" } }, required: ["title", "url"] } } },
    required: ["hits"],
  },
  execute: ({ query }) => ({ hits: [{ title: query, url: "https://example.com" }] }),
});

export const sendEmailTool = defineTool({
  name: "send_email",
  description: "Send an email.\nOnly to addresses inside the company.",
  risk: "high",
  inputSchema: {
    type: "object",
    properties: {
      to: { type: "array", items: { type: "string", format: "email" }, minItems: 1 },
      subject: { type: "string" },
      body: { type: "string" },
      attachment: { anyOf: [{ type: "string" }, { type: "object", properties: { $artifact: { type: "string" } }, required: ["$artifact"] }] },
    },
    required: ["to", "subject", "body"],
  },
  execute: () => "sent",
});

export const dropTableTool = defineTool({
  name: "drop_table",
  description: "Drop a table.",
  risk: "critical",
  deferLoading: true,
  inputSchema: { type: "object", properties: { table: { type: "string" } }, required: ["table"], additionalProperties: false },
  execute: () => ({ dropped: true }),
});

export const oddNameTool = defineTool({
  name: "odd-name.v2",
  description: "A tool whose name is not an identifier.",
  inputSchema: {
    type: "object",
    properties: {
      "content-type": { type: ["string", "null"] },
      tags: { type: "object", additionalProperties: { type: "number" } },
      meta: { type: "object", properties: { id: { type: "string" } }, additionalProperties: true },
      pair: { type: "array", items: [{ type: "string" }, { type: "number" }] },
      either: { oneOf: [{ const: "a" }, { type: "array", items: { enum: [1, 2] } }] },
      anything: {},
    },
  },
  outputSchema: { type: "array", items: { type: "string" } },
  execute: () => ["x"],
});

export const webSearchHosted: HostedTool = {
  name: "web_search",
  description: "Search the web (run by the provider).",
  providerSpecs: {
    openai: { type: "web_search_preview" },
    anthropic: { type: "web_search_20250305", name: "web_search", max_uses: 5 },
  },
};

export const shellProviderDefined: ProviderDefinedTool = {
  name: "shell",
  description: "Run a shell command (provider-defined call shape, runs here).",
  providerSpecs: { openai: { type: "local_shell" } },
  callTypes: ["local_shell_call"],
  handleCall: async () => ({ content: [{ type: "text", text: "ok" }] }),
};

/** A `run_chain` tool branded as isochain's own. */
export function chainTool(): Tool<never, unknown> {
  const tool: Tool<never, unknown> = {
    name: "run_chain",
    description: "Run a TypeScript script that calls tools.",
    inputSchema: { type: "object", properties: { code: { type: "string" } }, required: ["code"] },
    execute: () => "done",
  };
  brandChainTool(tool);
  return tool;
}
