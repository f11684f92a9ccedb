/**
 * The script's `artifact(ref)` helper, through the public API on every driver: a ref string
 * becomes `{ $artifact: ref }`; anything else (a number, an empty string, a whole result, ...)
 * throws a `TypeError` at the script's line instead of passing on a reference the host cannot
 * resolve.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, DRIVERS, type Harness } from "../security/harness.ts";

const MESSAGE = "artifact(ref) takes an artifact ref string (a tool result's artifactRef); got ";

describe.each(DRIVERS)("artifact() [%s]", (driver) => {
  let harness: Harness;
  beforeAll(async () => {
    harness = createHarness(driver);
    await harness.chain.warm();
  });
  afterAll(async () => {
    await harness.close();
  });

  it("turns a ref string into the argument form", async () => {
    const ref = `sha256:${"0".repeat(64)}`;
    const result = await harness.run(`return artifact(${JSON.stringify(ref)});`);
    expect(result.status).toBe("ok");
    expect(result.returnValue).toEqual({ $artifact: ref });
  });

  it.each([
    ["123", "a number"],
    ['""', "an empty string"],
    ["undefined", "undefined"],
    ["null", "null"],
    ['{ artifactRef: "sha256:0" }', "an object"],
    ['["sha256:0"]', "an object"],
    ["true", "a boolean"],
    ["10n", "a bigint"],
    ['Symbol("ref")', "a symbol"],
    ["() => 'sha256:0'", "a function"],
  ])("throws a TypeError at the script's line for artifact(%s)", async (argument, kind) => {
    const result = await harness.run(`const before = 1;\nconst ref = artifact(${argument} as any);\nreturn [before, ref];`);
    expect(result.status).toBe("error");
    expect(result.error).toMatchObject({ phase: "runtime", name: "TypeError", message: `${MESSAGE}${kind}`, line: 2 });
    expect(result.callTrace).toEqual([]);
  });

  it("can be caught by the script, which goes on to make its calls", async () => {
    const result = await harness.run(
      "let message = ''; try { artifact(42 as any); } catch (error) { message = error instanceof TypeError ? error.message : 'not a TypeError'; }\nconst r = await tools.echo({ value: message });\nreturn r.structured.value;",
    );
    expect(result.status).toBe("ok");
    expect(result.returnValue).toBe(`${MESSAGE}a number`);
  });

  it("throws the prelude's own TypeError even when the script replaced the global", async () => {
    const result = await harness.run("(globalThis as any).TypeError = function Fake() {};\nreturn artifact(7 as any);");
    expect(result.error).toMatchObject({ phase: "runtime", name: "TypeError", message: `${MESSAGE}a number`, line: 2 });
  });
});
