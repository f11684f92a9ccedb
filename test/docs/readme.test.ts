import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as crm from "../../examples/crm-tools.ts";
import { AutoApprovalHandler, MemoryBlobStore, ToolChainTool } from "../../src/index.ts";

const root = new URL("../../", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");

/** The fenced ```ts blocks of the README that import from "isochain". */
function apiBlocks(): string[] {
  return [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? "").filter((code) => code.includes('from "isochain"'));
}

/** The README's first ```ts block: what a model writes, as the body of the chain's async function. */
function modelBlock(): string {
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)][0]?.[1] ?? "";
  if (!block.startsWith("// What a model writes:")) throw new Error("the README's first ts block is not the model-side example");
  return block;
}

/** A chain over the example CRM tools, as the Quick start runs it (approvals granted, a blob store). */
function exampleChain(): ToolChainTool {
  return new ToolChainTool({
    tools: [crm.crm_query, crm.aggregate, crm.render_csv, crm.send_email],
    blobStore: new MemoryBlobStore(),
    approvalHandler: new AutoApprovalHandler("approved"),
    driver: "in-process",
  });
}

/** Type-checks `files` (path → text) with the standard library only, as a script sees it; returns the messages. */
function typeCheck(files: Record<string, string>): string[] {
  const options: ts.CompilerOptions = { noEmit: true, strict: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], types: [] };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError) => (name in files ? ts.createSourceFile(name, files[name] ?? "", version) : getSourceFile(name, version, onError));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name in files || fileExists(name);
  return ts
    .getPreEmitDiagnostics(ts.createProgram(Object.keys(files), options, host))
    .map((diagnostic) => `${diagnostic.file?.fileName ?? ""}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`);
}

describe("README", () => {
  it("the model-side example type-checks against the declarations the model is shown", async () => {
    const chain = exampleChain();
    try {
      const script = `async function main() {\n${modelBlock()}\n}\nvoid main;\nexport {};\n`;
      expect(typeCheck({ "/tools.d.ts": chain.declarations(), "/script.ts": script })).toEqual([]);
    } finally {
      await chain.close();
    }
  });

  it("the model-side example runs: the CSV reaches the email as an attachment", async () => {
    const chain = exampleChain();
    const sentBefore = crm.OUTBOX.length;
    try {
      const run = await chain.run(modelBlock());
      expect(run.status).toBe("ok");
      expect(run.returnValue).toMatchObject({ emailed: true });
      expect(run.callTrace.map((call) => call.tool)).toEqual(["crm_query", "render_csv", "send_email"]);
      const sent = crm.OUTBOX.slice(sentBefore);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.bytes).toBeGreaterThan(1000);
    } finally {
      await chain.close();
    }
  });

  it("has a Quick start with exactly two commands: the main job and the tests", () => {
    const section = readme.split(/^## Quick start$/m)[1]?.split(/^## /m)[0] ?? "";
    const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    const commands = block.split("\n").filter((line) => line.trim() !== "" && !line.trim().startsWith("#"));
    expect(commands).toHaveLength(2);
    expect(commands[0]).toContain("isochain -- run");
    expect(commands[1]).toBe("npm test");
  });

  it("API examples typecheck against the public entry point", () => {
    const blocks = apiBlocks();
    expect(blocks.length).toBeGreaterThan(0);
    const dir = mkdtempSync(join(root, "test/docs/.readme-"));
    try {
      const entry = relative(dir, join(root, "src/index.ts"));
      const files = blocks.map((code, index) => {
        const file = join(dir, `block-${index}.ts`);
        // Blocks may lean on names an earlier block defined (toolbox, blobStore): declare them.
        const prelude = index === 0 ? "" : 'declare const toolbox: import("isochain").Toolbox;\ndeclare const blobStore: import("isochain").BlobStore;\ndeclare const code: string;\n';
        writeFileSync(file, `${prelude}${code.replaceAll('"isochain"', JSON.stringify(entry))}\nexport {};\n`);
        return file;
      });
      const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
      const program = ts.createProgram(files, { ...config!.options, noEmit: true, noUnusedLocals: false, paths: { isochain: [join(root, "src/index.ts")] } });
      const messages = ts
        .getPreEmitDiagnostics(program)
        .filter((diagnostic) => diagnostic.file && files.includes(diagnostic.file.fileName))
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      expect(messages).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
