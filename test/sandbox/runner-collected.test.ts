import { describe, expect, it } from "vitest";
import { IsolateRunner } from "../../sandbox/isolate-runner.ts";
import { SyncIsolateRunner } from "../../sandbox/sync-isolate-runner.ts";
import { forceGc } from "../security/harness.ts";

describe.each([
  ["IsolateRunner", (): { dispose(): void } => new IsolateRunner({ memoryLimitMb: 16 })],
  ["SyncIsolateRunner", (): { dispose(): void } => new SyncIsolateRunner({ memoryLimitMb: 16 })],
] as const)("%s", (_name, create) => {
  it("is collected once disposed, with its isolate (isolated-vm holds its frame callback for good)", async () => {
    const runners = disposedRunners(create, 8);
    // A WeakRef holds its target to the end of the job that read it: collect between turns.
    for (let round = 0; round < 5 && runners.some((ref) => ref.deref() !== undefined); round++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      forceGc();
    }
    expect(runners.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });
});

/** `count` runners made and disposed, as weak references (made here: no stale local of the test's suspended frame holds one). */
function disposedRunners(create: () => { dispose(): void }, count: number): WeakRef<object>[] {
  const runners: WeakRef<object>[] = [];
  for (let i = 0; i < count; i++) {
    const runner = create();
    runners.push(new WeakRef(runner));
    runner.dispose();
  }
  return runners;
}
