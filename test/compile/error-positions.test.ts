import { afterAll, describe, expect, it } from "vitest";
import { defineTool, ToolChainTool, Toolbox } from "../../src/index.ts";

// Runtime error positions end to end, through a real isolate on each driver: what the script's
// own text (magic comments) or a tool's error text could do to the line and column reported.

/** A tool that fails with an upstream error whose text carries someone else's stack. */
const rpc = defineTool({
  name: "rpc",
  description: "Calls an upstream service.",
  inputSchema: { type: "object", properties: {} } as const,
  execute: () => {
    throw new Error("nonce too low\n    at send (/srv/node_modules/web3/lib/blockchain.js:3:14)\n    at retry (chain.js:2:14)");
  },
});

/** A base64 `data:` source map comment. */
function inlineMap(map: object): string {
  return `//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString("base64")}`;
}

describe.each(["in-process", "process"] as const)("error positions end to end (%s driver)", (driver) => {
  const chain = new ToolChainTool({ toolbox: new Toolbox([rpc]), driver });
  afterAll(() => chain.close());

  it("a tool's error text that reads like stack frames stays message text, and the position is the throw's", async () => {
    const script = [
      "const r = await tools.rpc({});",
      "console.log('got', r.status);",
      "if (r.status !== 'ok') {",
      "  throw new Error(`rpc failed: ${r.text}`);",
      "}",
    ].join("\n");
    const { error } = await chain.run(script);
    expect(error).toMatchObject({ phase: "runtime", line: 4, column: 9 });
    expect(error?.codeFrame).toContain("> 4 |   throw new Error(`rpc failed: ${r.text}`);");
    const lines = error?.stack?.split("\n") ?? [];
    expect(lines.slice(1)).toEqual(["    at send (/srv/node_modules/web3/lib/blockchain.js:3:14)", "    at retry (chain.js:2:14)", "    at chain.ts:4:9"]);
    expect(lines[0]).toMatch(/^Error: rpc failed: .*nonce too low$/u);
  });

  it.each([
    ["//#", "//# sourceURL=report.ts"],
    ["//@", "//@ sourceURL=report.ts"],
    ["/*#", "/*# sourceURL=report.ts */"],
    ["two //#", "//# sourceURL=chain.js\n//# sourceURL=report.ts"],
  ])("a %s sourceURL comment in the script does not rename it: positions survive, on both compile paths", async (_label, comment) => {
    // Padded past 6 KiB, the script takes the esbuild path. Run twice: the driver evaluates a
    // script it sees for the first time, and compiles (and keeps) one it sees again.
    for (const padding of ["", `\n//${"p".repeat(7_000)}`]) {
      for (let sighting = 1; sighting <= 2; sighting++) {
        const run = await chain.run(`const o: any = {};\no.x.y;\n${comment}${padding}`);
        expect(run.error).toMatchObject({ line: 2, column: 5, stack: "TypeError: Cannot read properties of undefined (reading 'y')\n    at chain.ts:2:5" });
      }
    }
  });

  it.each([
    ["a binary operator", "const big = 10n;\nconst v = big + (1 as any);", 2, 15],
    ["a call on a generic's result", "function id<T>(x: T): T { return x; }\nconst v = id<any>({}).a.b;", 2, 24],
    ["a computed tool name", "const o: any = {};\nconst v = o['missing']({});", 2, 23],
  ])("places %s where V8 does on the esbuild path too (inside a mapped token's span)", async (_label, script, line, column) => {
    for (const padding of ["", `\n//${"p".repeat(7_000)}`]) {
      expect((await chain.run(`${script}${padding}`)).error).toMatchObject({ line, column });
    }
  });

  it("the same text in strings is left as it is", async () => {
    const script = 'const a = "x\\n//# sourceURL=report.ts";\nconst b = `\n//# sourceMappingURL=data:,{}\n`;\nreturn [a, b];';
    expect((await chain.run(script)).returnValue).toEqual(["x\n//# sourceURL=report.ts", "\n//# sourceMappingURL=data:,{}\n"]);
    const esbuilt = await chain.run(`enum K { A }\n${script}`);
    expect(esbuilt.returnValue).toEqual(["x\n//# sourceURL=report.ts", "\n//# sourceMappingURL=data:,{}\n"]);
  });

  it.each([
    ["names the script", { version: 3, sources: ["chain.ts"], names: [], mappings: "AAIA;AAAA;AAAA;AAAA;AAAA;AAAA" }],
    ["names another file", { version: 3, sources: ["x.ts"], names: [], mappings: "AAAA;AAAA;AAAA;AAAA" }],
  ])("an inline source map in the script is never used on the esbuild path (one that %s)", async (_label, map) => {
    for (const comment of [inlineMap(map), `/*# ${inlineMap(map).slice(4)} */`, inlineMap(map).replace("#", "@")]) {
      const script = ["enum Kind { A }", "const o: any = {};", "o.x.y;", "const fine = 1;", comment].join("\n");
      const { error } = await chain.run(script);
      expect(error).toMatchObject({ line: 3, column: 5 });
      expect(error?.codeFrame).toContain("> 3 | o.x.y;");
    }
  });
});
