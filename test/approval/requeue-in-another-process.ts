import { execFileSync } from "node:child_process";
import { FileApprovalStore } from "../../src/approval/file-approval-store.ts";
import type { ApprovalRequest } from "../../src/kernel/index.ts";

/**
 * Runs `remove(request.id)` + `putPending(request)` on a `FileApprovalStore` over `dir` in a
 * child process and waits for it: synchronous, so a test can do it from inside a store's `now`
 * clock, which `decide` reads after it has read the request and before it records the decision.
 */
export function requeueInAnotherProcess(dir: string, request: ApprovalRequest): void {
  const storeModule = new URL("../../src/approval/file-approval-store.ts", import.meta.url).href;
  const script = `
    const { FileApprovalStore } = await import(${JSON.stringify(storeModule)});
    const store = new FileApprovalStore({ dir: ${JSON.stringify(dir)} });
    const request = ${JSON.stringify(request)};
    await store.remove(request.id);
    await store.putPending(request);
  `;
  execFileSync(process.execPath, ["--input-type=module", "--disable-warning=ExperimentalWarning", "-e", script], {
    stdio: ["ignore", "inherit", "inherit"],
  });
}

/**
 * A `FileApprovalStore` over `dir` whose clock, the first time `decide` reads it (after reading
 * the request, before recording the decision), has another process remove the id and queue
 * `requeued` instead. `clockReads()` counts the store's reads of its clock.
 */
export function storeRequeuedDuringFirstDecide(dir: string, requeued: ApprovalRequest): { store: FileApprovalStore; clockReads: () => number } {
  let reads = 0;
  const store = new FileApprovalStore({
    dir,
    now: () => {
      if ((reads += 1) === 1) requeueInAnotherProcess(dir, requeued);
      return 1;
    },
  });
  return { store, clockReads: () => reads };
}
