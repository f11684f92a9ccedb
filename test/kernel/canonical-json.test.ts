import { describe, expect, it } from "vitest";
import { canonicalJson, digestJson, isArtifactArgument, isArtifactRef } from "../../src/kernel/index.ts";

describe("canonicalJson", () => {
  it("sorts keys at every depth", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
  });

  it("gives equal digests for equal values in any key order", () => {
    expect(digestJson({ a: 1, b: 2 })).toBe(digestJson({ b: 2, a: 1 }));
    expect(digestJson({ a: 1 })).not.toBe(digestJson({ a: 2 }));
    expect(digestJson({})).toMatch(/^[0-9a-f]{64}$/);
  });

  it("never throws on cycles and non-JSON values", () => {
    const cyclic: Record<string, unknown> = { n: 1n, f: () => 1 };
    cyclic.self = cyclic;
    expect(canonicalJson(cyclic)).toBe('{"n":"1n","self":"[Circular]"}');
    expect(canonicalJson([Number.NaN, undefined])).toBe("[null,null]");
  });
});

describe("artifact refs", () => {
  it("accepts only sha256:<64 hex>", () => {
    expect(isArtifactRef(`sha256:${"a".repeat(64)}`)).toBe(true);
    expect(isArtifactRef("sha256:../../etc/passwd")).toBe(false);
    expect(isArtifactRef(`sha256:${"A".repeat(64)}`)).toBe(false);
  });

  it("recognises the { $artifact } argument form only alone", () => {
    expect(isArtifactArgument({ $artifact: "sha256:x" })).toBe(true);
    expect(isArtifactArgument({ $artifact: "sha256:x", other: 1 })).toBe(false);
    expect(isArtifactArgument([{ $artifact: "x" }])).toBe(false);
  });
});
