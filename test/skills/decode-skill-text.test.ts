import { describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { decodeSkillText } from "../../src/skills/decode-skill-text.ts";

function refusal(bytes: Uint8Array): { message: string; details: Readonly<Record<string, unknown>> } {
  try {
    decodeSkillText(bytes, "/s/SKILL.md");
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") return error;
    throw error;
  }
  throw new Error("did not throw");
}

const FRONT = "---\nname: u\ndescription: d\n---\n";

describe("decodeSkillText", () => {
  it("decodes UTF-8, drops a UTF-8 BOM and keeps a U+FFFD the file itself holds", () => {
    expect(decodeSkillText(Buffer.from("---\nname: café\n"), "f")).toBe("---\nname: café\n");
    expect(decodeSkillText(Buffer.from("\uFEFF---\n"), "f")).toBe("---\n");
    expect(decodeSkillText(Buffer.from("a \uFFFD 😀"), "f")).toBe("a \uFFFD 😀");
  });

  it("refuses Latin-1 text at the line and byte offset of the first bad byte, saying to save as UTF-8", () => {
    const error = refusal(Buffer.from("---\nname: l\ndescription: caf\xe9 cr\xe8me\n---\n", "latin1"));
    expect(error.details).toEqual({ file: "/s/SKILL.md", line: 3, offset: 28, byte: 0xe9 });
    expect(error.message).toBe(
      "/s/SKILL.md:3: the skill file is not valid UTF-8: byte 0xE9 at offset 28 (byte 17 of line 3) is not part of a UTF-8 character. " +
        "Save the file as UTF-8 (Latin-1 and Windows-1252 are not).",
    );
  });

  it("counts offsets in bytes past a BOM, multi-byte characters and a real U+FFFD", () => {
    // BOM 3 + "a\n" 2 + U+FFFD 3 + 😀 4 + é 2 = 14, then a lone lead byte.
    const bytes = Buffer.concat([Buffer.from("\uFEFFa\n\uFFFD😀é"), Buffer.from([0xc3, 0x41])]);
    expect(refusal(bytes).details).toMatchObject({ line: 2, offset: 14, byte: 0xc3 });
    expect(refusal(Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0xed, 0xa0, 0x80])).details).toMatchObject({ line: 2, offset: 4, byte: 0xed });
  });

  it("reports a file cut inside its last character", () => {
    const error = refusal(Buffer.concat([Buffer.from("---\n"), Buffer.from([0xe2, 0x82])]));
    expect(error.details).toMatchObject({ line: 2, offset: 4, byte: 0xe2 });
  });

  it.each([
    ["UTF-16LE", "by its byte-order mark", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(FRONT, "utf16le")])],
    ["UTF-16BE", "by its byte-order mark", Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(FRONT, "utf16le").swap16()])],
    ["UTF-16LE", "without a byte-order mark", Buffer.from(FRONT, "utf16le")],
    ["UTF-16BE", "without a byte-order mark", Buffer.from(FRONT, "utf16le").swap16()],
    ["UTF-32LE", "by its byte-order mark", Buffer.from([0xff, 0xfe, 0x00, 0x00, 0x2d, 0x00, 0x00, 0x00])],
    ["UTF-32BE", "by its byte-order mark", Buffer.from([0x00, 0x00, 0xfe, 0xff, 0x00, 0x00, 0x00, 0x2d])],
  ])("refuses %s (%s) as such, not as a missing front matter", (encoding, how, bytes) => {
    const error = refusal(bytes);
    expect(error.details).toEqual({ file: "/s/SKILL.md", encoding });
    expect(error.message).toMatch(new RegExp(`^/s/SKILL\\.md: the skill file is ${encoding} \\(${how}.*\\); a skill file must be UTF-8, so save it as UTF-8\\.$`));
  });
});
