/**
 * Getting a sandbox: cold (nothing pooled: create an isolate, install the prelude, dispose) and
 * pooled (a warm pool lends a prepared context; the script is `return 1;`, no calls).
 *
 * isochain figures drive `InProcessSandboxDriver` directly (no compile, no invoker): cold is
 * `new driver({ poolSize: 1 })` + `warm()` + `close()`; pooled is `driver.run()` of the compiled
 * no-op with the pool re-warmed between iterations (untimed).
 * @module
 */
import { ChildProcessEcho } from "./baselines/child-process-echo.ts";
import { NodeVmRunner } from "./baselines/node-vm-runner.ts";
import { RawIsolatedVmRunner } from "./baselines/raw-isolated-vm-runner.ts";
import type { BenchFile, Scenario } from "./harness.ts";
import { BASELINE_TOOLS, SCRIPTS } from "./support/fixtures.ts";
import { createDriver, type DriverLike, driverRequest, loadCompileScript } from "./support/isochain.ts";

const GROUP = "acquire";

const nodeVmCold: Scenario = {
  name: "node-vm/acquire-cold",
  group: GROUP,
  description: "vm.createContext() + one statement (the floor of a fresh context)",
  run: () => NodeVmRunner.acquireCold(),
};

const rawIvmCold: Scenario = {
  name: "raw-ivm/acquire-cold",
  group: GROUP,
  baseline: "node-vm/acquire-cold",
  description: "new ivm.Isolate + context + prelude, then dispose",
  run: () => RawIsolatedVmRunner.acquireCold(),
};

let contextRunner: RawIsolatedVmRunner | undefined;
const rawIvmContext: Scenario = {
  name: "raw-ivm/fresh-context",
  group: GROUP,
  baseline: "node-vm/acquire-cold",
  description: "a fresh context + prelude on a warm isolate, created inline (what pooling hides)",
  async setup() {
    contextRunner = new RawIsolatedVmRunner({ poolSize: 1, prepareAhead: false });
    await contextRunner.warm();
  },
  run: () => contextRunner?.contextOnly(),
  teardown() {
    contextRunner?.close();
  },
};

const childCold: Scenario = {
  name: "child-process/acquire-cold",
  group: GROUP,
  description: "spawn a Node child, one round trip, stop it (the floor of a cold process sandbox)",
  run: () => ChildProcessEcho.startCold(),
};

const isochainCold: Scenario = {
  name: "isochain/acquire-cold",
  group: GROUP,
  baseline: "raw-ivm/acquire-cold",
  description: "new InProcessSandboxDriver({ poolSize: 1 }) + warm() + close()",
  async setup() {
    const driver = await createDriver(1);
    await driver.warm?.();
    await driver.close();
  },
  async run() {
    const driver = await createDriver(1);
    await driver.warm?.();
    await driver.close();
  },
};

let nodeVm: NodeVmRunner | undefined;
const nodeVmPooled: Scenario = {
  name: "node-vm/acquire-pooled",
  group: GROUP,
  description: "run `return 1;` in the reused context",
  setup() {
    nodeVm = new NodeVmRunner();
  },
  run: () => nodeVm?.run(SCRIPTS.noop, BASELINE_TOOLS),
};

let rawRunner: RawIsolatedVmRunner | undefined;
const rawIvmPooled: Scenario = {
  name: "raw-ivm/acquire-pooled",
  group: GROUP,
  baseline: "node-vm/acquire-pooled",
  description: "run `return 1;` in a prepared fresh context of a warm isolate",
  async setup() {
    rawRunner = new RawIsolatedVmRunner({ poolSize: 2 });
    await rawRunner.warm();
  },
  run: () => rawRunner?.run(SCRIPTS.noop, BASELINE_TOOLS),
  between: () => rawRunner?.warm(),
  teardown() {
    rawRunner?.close();
  },
};

let driver: DriverLike | undefined;
let noopRequest: unknown;
const isochainPooled: Scenario = {
  name: "isochain/acquire-pooled",
  group: GROUP,
  baseline: "raw-ivm/acquire-pooled",
  description: "InProcessSandboxDriver.run of the compiled `return 1;`, warm pool",
  async setup() {
    const compileScript = await loadCompileScript();
    const compiled = compileScript(SCRIPTS.noop, { filename: "chain.js" });
    if (!compiled.ok || compiled.code === undefined) throw new Error(`compileScript failed: ${compiled.error?.message ?? "no code"}`);
    noopRequest = driverRequest(compiled.code);
    driver = await createDriver(2);
    await driver.warm?.();
    const outcome = await driver.run(noopRequest);
    if (outcome.status !== "ok" || outcome.returnJson !== "1") {
      throw new Error(`first run ended ${outcome.status} with ${outcome.returnJson ?? outcome.error?.message ?? "nothing"}`);
    }
  },
  async run() {
    const outcome = await driver?.run(noopRequest);
    if (outcome !== undefined && outcome.status !== "ok") throw new Error(`run ended ${outcome.status}`);
  },
  between: () => driver?.warm?.(),
  async teardown() {
    await driver?.close();
  },
};

export default {
  scenarios: [nodeVmCold, rawIvmCold, rawIvmContext, childCold, isochainCold, nodeVmPooled, rawIvmPooled, isochainPooled],
} satisfies BenchFile;
