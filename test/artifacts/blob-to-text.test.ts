import { describe, expect, it } from "vitest";
import { blobToText } from "../../src/artifacts/blob-to-text.ts";

describe("blobToText", () => {
  it("decodes valid UTF-8 as text", () => {
    expect(blobToText(new TextEncoder().encode("héllo ✓"))).toEqual({ encoding: "utf8", text: "héllo ✓" });
    expect(blobToText(new Uint8Array(0))).toEqual({ encoding: "utf8", text: "" });
  });

  it("keeps a leading BOM", () => {
    expect(blobToText(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])).text).toBe("\ufeffa");
  });

  it("gives base64 for invalid UTF-8", () => {
    expect(blobToText(new Uint8Array([0xff, 0xfe, 0x00, 0x80]))).toEqual({ encoding: "base64", text: "//4AgA==" });
  });

  it("gives base64 for bytes that contain NUL, even when valid UTF-8", () => {
    expect(blobToText(new Uint8Array([0x61, 0x00, 0x62]))).toEqual({ encoding: "base64", text: "YQBi" });
  });

  it("refuses what is not bytes with a typed error, not a TypeError", () => {
    for (const value of ["text", null, [1, 2], undefined]) {
      expect(() => blobToText(value as never)).toThrow(/blobToText\(\) needs a blob's bytes \(a Uint8Array\)/);
    }
  });

  it("encodes only the view's own bytes of a larger buffer", () => {
    const backing = new Uint8Array([0xff, 0xff, 0x00, 0x01, 0xff]);
    expect(blobToText(backing.subarray(1, 4))).toEqual({ encoding: "base64", text: "/wAB" });
  });
});
