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

  it("writes an object seen twice, but not inside itself, in full both times", () => {
    const shared = { k: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"k":1},"b":[{"k":1},{"k":1}]}');
  });

  it("digests are sha256 hex of the canonical text (stable across versions: traces keep them)", () => {
    expect(digestJson({})).toBe("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    expect(digestJson({ b: [1, "x"], a: null })).toBe(digestJson(JSON.parse('{"a":null,"b":[1,"x"]}')));
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
