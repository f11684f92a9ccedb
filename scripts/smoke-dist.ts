/**
 * Checks the built package (`npm run build` first): imports `dist/src/index.js`, as a consumer of
 * the published package would, and runs one chain on the default (process) driver; then runs the
 * built command (`dist/src/cli/main.js`, the package's `bin`) as `isochain bench --list`, which in
 * a checkout finds the suite beside `dist/`. Exits 1 when either does not do what it should.
 * @module
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
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

const cli = spawnSync(process.execPath, ["--no-node-snapshot", fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url)), "bench", "--list"], { encoding: "utf8" });
if (cli.status !== 0 || !/^chain +isochain\/one-call /m.test(cli.stdout)) {
  process.stderr.write(`dist smoke: the built isochain bench --list exited ${String(cli.status)}: ${cli.stderr}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write("dist smoke: ok (the built command lists the benchmark suite)\n");
}
