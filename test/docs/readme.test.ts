import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");

/** The fenced ```ts blocks of the README that import from "isochain". */
function apiBlocks(): string[] {
  return [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? "").filter((code) => code.includes('from "isochain"'));
}

describe("README", () => {
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
