/**
 * What the invoker adds per call, without any sandbox: `invoker.invoke({ name: "echo",
 * arguments })` in an open session (budget, validation, result shaping, trace record) against
 * awaiting the same tool function directly. One iteration = a new session and 50 calls; figures
 * are per call (the session's opening is amortised over its 50 calls).
 * @module
 */
import type { BenchFile, Scenario } from "./harness.ts";
import { BASELINE_TOOLS } from "./support/fixtures.ts";
import { createInvoker, type InvokerLike } from "./support/isochain.ts";

const GROUP = "invoker";
const CALLS = 50;
const echo = BASELINE_TOOLS.echo;

const direct: Scenario = {
  name: "direct/await-call",
  group: GROUP,
  opsPerRun: CALLS,
  description: "await echo(args) directly: the floor",
  async run() {
    if (echo === undefined) return;
    for (let n = 0; n < CALLS; n++) await echo({ n });
  },
};

let invoker: InvokerLike | undefined;
const invoke: Scenario = {
  name: "isochain/invoker-call",
  group: GROUP,
  baseline: "direct/await-call",
  opsPerRun: CALLS,
  description: "ToolInvoker.invoke of echo in an open session (per call, session opened per 50)",
  async setup() {
    invoker = await createInvoker(CALLS);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "echo", arguments: { n: 1 } }, { session });
    await session.close?.();
    if (result.status !== "ok") throw new Error(`first invoke ended ${result.status}: ${result.text ?? ""}`);
  },
  async run() {
    const inv = invoker;
    if (inv === undefined) return;
    const session = inv.openSession();
    for (let n = 0; n < CALLS; n++) {
      const result = await inv.invoke({ name: "echo", arguments: { n } }, { session });
      if (result.status !== "ok") throw new Error(`invoke ended ${result.status}: ${result.text ?? ""}`);
    }
    await session.close?.();
  },
};

export default { scenarios: [direct, invoke] } satisfies BenchFile;
