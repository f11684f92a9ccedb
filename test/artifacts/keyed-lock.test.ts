import { describe, expect, it } from "vitest";
import { KeyedLock } from "../../src/artifacts/keyed-lock.ts";

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

describe("KeyedLock", () => {
  it("runs tasks of one key one at a time, in call order", async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    let running = 0;
    let maxRunning = 0;
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        lock.run("k", async () => {
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          events.push(`start ${n}`);
          await tick();
          events.push(`end ${n}`);
          running -= 1;
        }),
      ),
    );
    expect(maxRunning).toBe(1);
    expect(events).toEqual(["start 1", "end 1", "start 2", "end 2", "start 3", "end 3", "start 4", "end 4"]);
  });

  it("runs tasks of different keys concurrently", async () => {
    const lock = new KeyedLock();
    let running = 0;
    let maxRunning = 0;
    await Promise.all(
      ["a", "b", "c"].map((key) =>
        lock.run(key, async () => {
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          await tick();
          running -= 1;
        }),
      ),
    );
    expect(maxRunning).toBe(3);
  });

  it("returns the task's value, passes its rejection on, and releases the key either way", async () => {
    const lock = new KeyedLock();
    await expect(lock.run("k", async () => 7)).resolves.toBe(7);
    await expect(lock.run("k", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(lock.run("k", async () => "after")).resolves.toBe("after");
  });

  it("forgets a key once its last task settles", async () => {
    const lock = new KeyedLock();
    const first = lock.run("k", tick);
    const second = lock.run("k", tick);
    expect(lock.size).toBe(1);
    await Promise.all([first, second]);
    expect(lock.size).toBe(0);
  });
});
