/**
 * Checks the built package (`npm run build` first): imports `dist/src/index.js`, as a consumer of
 * the published package would, and runs one chain on the default (process) driver. Exits 1 when
 * the chain does not end `ok` with the expected value.
 * @module
 */
import type * as Isochain from "../src/index.ts";

const entry = new URL("../dist/src/index.js", import.meta.url).href;
const { ToolChainTool, Toolbox, defineTool } = (await import(entry)) as typeof Isochain;

const echo = defineTool({
  name: "echo",
  description: "Returns its arguments.",
  inputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  execute: (args) => args,
});
const chain = new ToolChainTool({ toolbox: new Toolbox([echo]) });
try {
  const run = await chain.run("const r = await tools.echo({ n: 41 }); return r.structured.n + 1;");
  if (run.status !== "ok" || run.returnValue !== 42) {
    process.stderr.write(`dist smoke: the chain ended ${run.status} with ${JSON.stringify(run.returnValue ?? run.error)}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write("dist smoke: ok (a chain ran from the built package)\n");
  }
} finally {
  await chain.close();
}
