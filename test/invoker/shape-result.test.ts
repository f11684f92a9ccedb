import { describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../src/artifacts/memory-blob-store.ts";
import { MAX_RESULT_BYTES_WITHOUT_STORE, mediaExtension, PREVIEW_CHARS } from "../../src/invoker/gates/shape-result.ts";
import type { ArtifactRef } from "../../src/kernel/index.ts";
import { localTool, makeInvoker } from "./invoker-fixtures.ts";

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64");

describe("ToolInvoker result shaping", () => {
  describe("bad results and crashes", () => {
    it.each([
      ["a string", () => Promise.reject("boom"), 'threw a non-Error value: boom'],
      ["undefined", () => Promise.reject(undefined), "threw undefined"],
      ["an Error", () => {
        throw new TypeError("bad thing");
      }, "threw TypeError: bad thing"],
      ["a number, synchronously", () => {
        throw 42;
      }, "threw a non-Error value: 42"],
    ])("turns a tool that throws %s into TOOL_ERROR with a record", async (_label, execute, text) => {
      const invoker = makeInvoker([localTool("t", execute)]);
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      expect(result).toMatchObject({ status: "error", code: "TOOL_ERROR" });
      expect(result.text).toContain(text);
      expect(session.trace[0]).toMatchObject({ status: "error", code: "TOOL_ERROR", error: result.text });
    });

    it("turns undefined into RESULT_INVALID", async () => {
      const invoker = makeInvoker([localTool("t", () => undefined)]);
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      expect(result).toMatchObject({ status: "error", code: "RESULT_INVALID" });
      expect(result.text).toContain("undefined");
      expect(session.trace[0]).toMatchObject({ code: "RESULT_INVALID" });
    });

    it("turns a cyclic result into RESULT_INVALID", async () => {
      const invoker = makeInvoker([localTool("t", () => {
        const value: Record<string, unknown> = { a: 1 };
        value.self = value;
        return value;
      })]);
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      expect(result).toMatchObject({ status: "error", code: "RESULT_INVALID" });
      expect(result.text).toContain("cycle");
      expect(session.trace).toHaveLength(1);
    });

    it("turns isError into TOOL_FAILED with the tool's text and structured", async () => {
      const invoker = makeInvoker([localTool("t", () => ({
        content: [{ type: "text", text: "rate limited" }],
        isError: true,
        structuredContent: { retryAfter: 3 },
      }))]);
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "TOOL_FAILED", structured: { retryAfter: 3 } });
      expect(result.text).toContain("rate limited");
    });
  });

  describe("inline or offloaded", () => {
    const limit = 100;
    const makeText = (bytes: number) => "é".repeat(Math.floor(bytes / 2)) + "a".repeat(bytes % 2); // é is 2 UTF-8 bytes

    it("keeps a result of exactly maxInlineResultBytes inline", async () => {
      const store = new MemoryBlobStore();
      const text = makeText(limit);
      expect(Buffer.byteLength(text)).toBe(limit);
      const invoker = makeInvoker([localTool("t", () => text)], { blobStore: store, policy: { maxInlineResultBytes: limit } });
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toEqual({ status: "ok", text });
    });

    it("offloads a result one byte over: pinned blob, preview, ref and bytes", async () => {
      const store = new MemoryBlobStore();
      const text = makeText(limit + 1);
      const invoker = makeInvoker([localTool("t", () => text)], { blobStore: store, policy: { maxInlineResultBytes: limit } });
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      expect(result.status).toBe("ok");
      if (result.status !== "ok") return;
      expect(result.artifactRef).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(result.bytes).toBe(limit + 1);
      expect(result.text).toContain(`[${limit + 1} bytes offloaded to artifact ${result.artifactRef}]`);
      const ref = result.artifactRef as ArtifactRef;
      expect(Buffer.from(await store.resolve(ref)).toString("utf8")).toBe(text);
      expect((await store.stat(ref))?.pins).toBe(1);
      expect(session.pinnedRefs).toEqual([ref]);
    });

    it("counts text plus structured JSON against the limit, and stores both", async () => {
      const store = new MemoryBlobStore();
      const invoker = makeInvoker(
        [localTool("t", () => ({ content: [{ type: "text", text: "x".repeat(60) }], structuredContent: { y: "y".repeat(40) } }))],
        { blobStore: store, policy: { maxInlineResultBytes: 100 } },
      );
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result.status === "ok" && result.artifactRef).toBeTruthy();
      if (result.status !== "ok" || !result.artifactRef) return;
      const stored = JSON.parse(Buffer.from(await store.resolve(result.artifactRef)).toString("utf8"));
      expect(stored).toEqual({ text: "x".repeat(60), structured: { y: "y".repeat(40) } });
      expect((await store.stat(result.artifactRef))?.mimeType).toContain("application/json");
      expect(result.text.startsWith("x".repeat(60))).toBe(true);
    });

    it("stores a large plain-value result as its JSON", async () => {
      const store = new MemoryBlobStore();
      const rows = Array.from({ length: 50 }, (_, i) => ({ id: i }));
      const invoker = makeInvoker([localTool("q", () => ({ rows }))], { blobStore: store, policy: { maxInlineResultBytes: 100 } });
      const result = await invoker.invoke({ name: "q", arguments: {} }, { session: invoker.openSession() });
      if (result.status !== "ok" || !result.artifactRef) throw new Error("expected an offloaded result");
      expect(JSON.parse(Buffer.from(await store.resolve(result.artifactRef)).toString("utf8"))).toEqual({ rows });
      expect(result.structured).toBeUndefined();
    });

    it("keeps everything inline without a store", async () => {
      const text = "z".repeat(10_000);
      const invoker = makeInvoker([localTool("t", () => text)], { policy: { maxInlineResultBytes: 100 } });
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toEqual({ status: "ok", text });
    });

    it("refuses, without a store, a result past MAX_RESULT_BYTES_WITHOUT_STORE, and traces the refusal", async () => {
      const invoker = makeInvoker([localTool("t", (args: { n?: number }) => "y".repeat(args.n ?? 0))]);
      const session = invoker.openSession();
      const over = await invoker.invoke({ name: "t", arguments: { n: MAX_RESULT_BYTES_WITHOUT_STORE + 1 } }, { session });
      expect(over).toMatchObject({ status: "error", code: "RESULT_INVALID", text: expect.stringContaining("configure a blobStore") });
      const at = await invoker.invoke({ name: "t", arguments: { n: MAX_RESULT_BYTES_WITHOUT_STORE } }, { session });
      expect(at.status).toBe("ok");
      expect(session.trace.map((record) => record.code ?? record.status)).toEqual(["RESULT_INVALID", "ok"]);
    });

    it("offloads a 50 MB string instead of failing", async () => {
      const store = new MemoryBlobStore();
      const big = "a".repeat(50 * 1024 * 1024);
      const invoker = makeInvoker([localTool("dump", () => big)], { blobStore: store });
      const result = await invoker.invoke({ name: "dump", arguments: {} }, { session: invoker.openSession() });
      expect(result.status).toBe("ok");
      if (result.status !== "ok") return;
      expect(result.bytes).toBe(big.length);
      expect(result.text.length).toBeLessThan(1000);
      expect((await store.stat(result.artifactRef as ArtifactRef))?.bytes).toBe(big.length);
    });
  });

  describe("failures (isError) under a success's size rules", () => {
    const limit = 100;
    const failing = (result: Record<string, unknown>) => localTool("t", () => ({ isError: true, ...result }));
    const offloadedRef = (text: string) => /… \[\d+ bytes offloaded to artifact (sha256:[0-9a-f]{64})\]$/.exec(text)?.[1] as ArtifactRef;

    it("keeps a failure of exactly maxInlineResultBytes inline, text and structured, as before", async () => {
      const structured = { n: 1 };
      const text = "e".repeat(limit - JSON.stringify(structured).length); // with the structured JSON: exactly the limit
      const invoker = makeInvoker([failing({ content: [{ type: "text", text }], structuredContent: structured })], {
        blobStore: new MemoryBlobStore(),
        policy: { maxInlineResultBytes: limit },
      });
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toEqual({ status: "error", code: "TOOL_FAILED", text: `Tool "t" reported a failure: ${text}`, structured });
    });

    it("offloads a failure over maxInlineResultBytes: TOOL_FAILED with a preview, its artifactRef and bytes, the whole text stored and pinned", async () => {
      const store = new MemoryBlobStore();
      const big = "f".repeat(2 * 1024 * 1024);
      const invoker = makeInvoker([failing({ content: [{ type: "text", text: big }] })], { blobStore: store, policy: { maxInlineResultBytes: limit } });
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      const ref = offloadedRef(result.text);
      expect(result).toEqual({
        status: "error",
        code: "TOOL_FAILED",
        text: `Tool "t" reported a failure: ${"f".repeat(PREVIEW_CHARS)}… [${big.length} bytes offloaded to artifact ${ref}]`,
        artifactRef: ref,
        bytes: big.length,
      });
      expect(Buffer.from(await store.resolve(ref)).toString("utf8")).toBe(big);
      expect(session.pinnedRefs).toEqual([ref]);
      expect(session.trace[0]).toMatchObject({ status: "error", code: "TOOL_FAILED", error: result.text });
    });

    it("offloads a failure whose structuredContent is large: both stored, neither inline", async () => {
      const store = new MemoryBlobStore();
      const structured = { dump: "d".repeat(2 * 1024 * 1024) };
      const invoker = makeInvoker([failing({ content: [{ type: "text", text: "quota exceeded" }], structuredContent: structured })], {
        blobStore: store,
        policy: { maxInlineResultBytes: limit },
      });
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "TOOL_FAILED" });
      expect("structured" in result).toBe(false);
      expect(result.text.length).toBeLessThan(200);
      expect(result.text).toMatch(/^Tool "t" reported a failure: quota exceeded… \[\d+ bytes offloaded to artifact sha256:/);
      const stored = JSON.parse(Buffer.from(await store.resolve(offloadedRef(result.text))).toString("utf8"));
      expect(stored).toEqual({ text: "quota exceeded", structured });
    });

    it("cuts, without a store, a failure past MAX_RESULT_BYTES_WITHOUT_STORE to a preview that says how much was cut", async () => {
      const chars = Math.floor(MAX_RESULT_BYTES_WITHOUT_STORE / 3) + 1; // "€" is 3 UTF-8 bytes: just over the bound
      const invoker = makeInvoker([failing({ content: [{ type: "text", text: "€".repeat(chars) }] })]);
      const session = invoker.openSession();
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
      expect(result).toEqual({
        status: "error",
        code: "TOOL_FAILED",
        text:
          `Tool "t" reported a failure: ${"€".repeat(PREVIEW_CHARS)}… [${chars - PREVIEW_CHARS} more characters] ` +
          `[the failure is ${chars * 3} bytes, over the ${MAX_RESULT_BYTES_WITHOUT_STORE} kept inline when no blob store is configured: only this much is kept]`,
      });
      expect(session.trace[0]).toMatchObject({ code: "TOOL_FAILED", error: result.text });
    });

    it("drops, without a store, a structuredContent that takes a failure past the bound, and says so", async () => {
      const invoker = makeInvoker([failing({ content: [{ type: "text", text: "boom" }], structuredContent: { dump: "d".repeat(MAX_RESULT_BYTES_WITHOUT_STORE) } })]);
      const result = await invoker.invoke({ name: "t", arguments: {} }, { session: invoker.openSession() });
      expect(result).toEqual({
        status: "error",
        code: "TOOL_FAILED",
        text:
          `Tool "t" reported a failure: boom [the failure is ${4 + MAX_RESULT_BYTES_WITHOUT_STORE + 11} bytes with its structuredContent, ` +
          `over the ${MAX_RESULT_BYTES_WITHOUT_STORE} kept inline when no blob store is configured: only this much is kept]`,
      });
    });
  });

  describe("media", () => {
    it("stores images as ChainFiles numbered per tool and session, pinned", async () => {
      const store = new MemoryBlobStore();
      const chart = localTool("chart", () => ({ content: [{ type: "text", text: "here" }, { type: "image", data: PNG, mimeType: "image/png" }] }));
      const invoker = makeInvoker([chart], { blobStore: store });
      const session = invoker.openSession();
      const first = await invoker.invoke({ name: "chart", arguments: {} }, { session });
      const second = await invoker.invoke({ name: "chart", arguments: {} }, { session });
      if (first.status !== "ok" || second.status !== "ok") throw new Error("expected ok");
      expect(first.text).toBe("here");
      expect(first.files).toEqual([
        { path: "/workspace/media/chart_0.png", artifactRef: expect.stringMatching(/^sha256:/), mimeType: "image/png", bytes: 7 },
      ]);
      expect(second.files?.[0]?.path).toBe("/workspace/media/chart_1.png");
      const ref = first.files?.[0]?.artifactRef as ArtifactRef;
      expect(Buffer.from(await store.resolve(ref)).toString("base64")).toBe(PNG);
      expect((await store.stat(ref))?.pins).toBe(2); // same bytes, pinned by both calls
      const other = invoker.openSession();
      await invoker.invoke({ name: "chart", arguments: {} }, { session: other });
      expect(other.trace).toHaveLength(1);
    });

    it("starts numbering again in a new session", async () => {
      const chart = localTool("chart", () => ({ content: [{ type: "audio", data: PNG, mimeType: "audio/mpeg" }] }));
      const invoker = makeInvoker([chart], { blobStore: new MemoryBlobStore() });
      const a = await invoker.invoke({ name: "chart", arguments: {} }, { session: invoker.openSession() });
      const b = await invoker.invoke({ name: "chart", arguments: {} }, { session: invoker.openSession() });
      expect(a.status === "ok" && a.files?.[0]?.path).toBe("/workspace/media/chart_0.mp3");
      expect(b.status === "ok" && b.files?.[0]?.path).toBe("/workspace/media/chart_0.mp3");
      expect(a.text).toContain("/workspace/media/chart_0.mp3"); // no text blocks: the text names the file
    });

    it("keeps media out without a store and says so", async () => {
      const chart = localTool("chart", () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }));
      const invoker = makeInvoker([chart]);
      const result = await invoker.invoke({ name: "chart", arguments: {} }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "ok" });
      expect(result.text).toContain("image/png, 7 bytes");
      expect(result.text).toContain("no blob store");
      expect("files" in result).toBe(false);
    });

    it("bounds media: at most 100 blocks a result, a mimeType of at most 255 characters (neither passed through any size limit)", async () => {
      const store = new MemoryBlobStore();
      const many = localTool("many", (args) => ({ content: Array.from({ length: args.n as number }, () => ({ type: "image", data: PNG, mimeType: "image/png" })) }));
      const odd = localTool("odd", () => ({ content: [{ type: "image", data: PNG, mimeType: `image/${"x".repeat(70_000)}` }] }));
      const invoker = makeInvoker([many, odd], { blobStore: store });
      const session = invoker.openSession();
      const tooMany = await invoker.invoke({ name: "many", arguments: { n: 101 } }, { session });
      expect(tooMany).toMatchObject({ status: "error", code: "RESULT_INVALID" });
      expect(tooMany.text).toContain("returned 101 image or audio blocks; at most 100 are kept per result");
      const enough = await invoker.invoke({ name: "many", arguments: { n: 100 } }, { session });
      expect(enough.status === "ok" && enough.files?.length).toBe(100);
      const longType = await invoker.invoke({ name: "odd", arguments: {} }, { session });
      expect(longType).toMatchObject({ status: "error", code: "RESULT_INVALID" });
      expect(longType.text).toContain("mimeType must be 1 to 255 characters");
    });

    it.each([
      ["image/png", "png"],
      ["image/jpeg", "jpg"],
      ["image/gif", "gif"],
      ["image/webp", "webp"],
      ["image/svg+xml", "svg"],
      ["audio/mpeg", "mp3"],
      ["audio/wav", "wav"],
      ["audio/ogg; codecs=opus", "ogg"],
      ["image/x-unknown", "bin"],
    ])("names %s files .%s", (mime, ext) => {
      expect(mediaExtension(mime)).toBe(ext);
    });
  });

  describe("inbound artifact refs", () => {
    it("replaces refs anywhere in the arguments with text, or base64 for binary", async () => {
      const store = new MemoryBlobStore();
      const textRef = await store.put("name,amount\na,1");
      const binRef = await store.put(new Uint8Array([0xff, 0xfe, 0x00]));
      const tool = localTool("render", () => "ok");
      const invoker = makeInvoker([tool], { blobStore: store });
      const args = { data: { $artifact: textRef }, parts: [{ file: { $artifact: binRef } }, 1], keep: { $artifact: textRef, other: 1 } };
      const result = await invoker.invoke({ name: "render", arguments: args }, { session: invoker.openSession() });
      expect(result.status).toBe("ok");
      expect(tool.calls[0]?.args).toEqual({
        data: "name,amount\na,1",
        parts: [{ file: Buffer.from([0xff, 0xfe, 0x00]).toString("base64") }, 1],
        keep: { $artifact: textRef, other: 1 }, // not a bare artifact argument
      });
    });

    it.each([
      ["beside other keys", (ref: string) => ({ $artifact: ref, encoding: "utf8" })],
      ["with a ref that is not a string", () => ({ $artifact: 42 })],
    ])("says why an object with $artifact %s fails a schema that wants text there", async (_label, value) => {
      const store = new MemoryBlobStore();
      const ref = await store.put("a,b");
      const tool = localTool("render", () => "ok", { inputSchema: { type: "object", properties: { data: { type: "string" } } } });
      const invoker = makeInvoker([tool], { blobStore: store });
      const result = await invoker.invoke({ name: "render", arguments: { data: value(ref) } }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(result.text).toContain('argument "data" must be string');
      expect(result.text).toContain('Argument "data" has a "$artifact" key but is not an artifact argument');
      expect(result.text).toContain("{ $artifact: result.artifactRef }");
      expect(tool.calls).toHaveLength(0);
      // A failure elsewhere says nothing of artifacts.
      const other = await invoker.invoke({ name: "render", arguments: { data: 1 } }, { session: invoker.openSession() });
      expect(other.text).not.toContain("$artifact");
    });

    it("says that an artifact reaches the tool as a string when the schema wants another type there", async () => {
      const store = new MemoryBlobStore();
      const ref = await store.put(JSON.stringify({ rows: [1, 2, 3] }));
      const tool = localTool("render", () => "ok", { inputSchema: { type: "object", properties: { data: { type: "array" } } } });
      const invoker = makeInvoker([tool], { blobStore: store });
      const result = await invoker.invoke({ name: "render", arguments: { data: { $artifact: ref } } }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(result.text).toContain('argument "data" must be array');
      expect(result.text).toContain('Argument "data" is an artifact, which reaches the tool as a string');
      expect(result.text).not.toContain("not an artifact argument");
      expect(tool.calls).toHaveLength(0);
    });

    it("hands a tool the content as blobToText gives it: a BOM kept, text holding NUL as base64", async () => {
      const store = new MemoryBlobStore();
      const withBom = await store.put(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]));
      const withNul = await store.put(new Uint8Array([0x61, 0x00, 0x62]));
      const tool = localTool("render", () => "ok");
      const invoker = makeInvoker([tool], { blobStore: store });
      await invoker.invoke({ name: "render", arguments: { a: { $artifact: withBom }, b: { $artifact: withNul } } }, { session: invoker.openSession() });
      expect(tool.calls[0]?.args).toEqual({ a: "\ufeffa", b: "YQBi" });
    });

    it("fails with ARTIFACT_NOT_FOUND for a ref the store lacks", async () => {
      const tool = localTool("render", () => "ok");
      const invoker = makeInvoker([tool], { blobStore: new MemoryBlobStore() });
      const missing = `sha256:${"0".repeat(64)}`;
      const result = await invoker.invoke({ name: "render", arguments: { data: { $artifact: missing } } }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "ARTIFACT_NOT_FOUND" });
      expect(result.text).toContain('argument "data"');
      expect(tool.calls).toHaveLength(0);
    });

    it("fails with ARTIFACT_NOT_FOUND when there is no store", async () => {
      const invoker = makeInvoker([localTool("render", () => "ok")]);
      const ref = `sha256:${"a".repeat(64)}`;
      const result = await invoker.invoke({ name: "render", arguments: { data: { $artifact: ref } } }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "ARTIFACT_NOT_FOUND" });
      expect(result.text).toContain("no blob store");
    });

    it("refuses a ref passed so many times that its copies would pass the resolved bound (each copy costs the host its content)", async () => {
      const store = new MemoryBlobStore();
      const ref = await store.put("x".repeat(1024 * 1024));
      const tool = localTool("render", () => "ok", {
        inputSchema: { type: "object", properties: { parts: { type: "array", items: { type: "string", maxLength: 2_000_000 } } } },
      });
      const invoker = makeInvoker([tool], { blobStore: store });
      const session = invoker.openSession();
      const many = await invoker.invoke({ name: "render", arguments: { parts: Array.from({ length: 65 }, () => ({ $artifact: ref })) } }, { session });
      expect(many).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(many.text).toBe(
        `The arguments would hold ${65 * 1024 * 1024} characters once their artifacts are resolved (at most ${64 * 1024 * 1024}; ${ref} is passed 65 times). ` +
          "Pass each artifact once, or fewer of them per call.",
      );
      expect(tool.calls).toHaveLength(0);
      const some = await invoker.invoke({ name: "render", arguments: { parts: Array.from({ length: 64 }, () => ({ $artifact: ref })) } }, { session });
      expect(some.status).toBe("ok");
    });

    it("takes only bytes from a store of the embedder's own: anything else is STORE_FAILED saying so", async () => {
      const store = new MemoryBlobStore();
      const ref = await store.put("data");
      for (const answer of [undefined, "text", null, [1, 2]]) {
        const odd = Object.assign(Object.create(store) as MemoryBlobStore, { resolve: () => Promise.resolve(answer) });
        const tool = localTool("render", () => "ok");
        const invoker = makeInvoker([tool], { blobStore: odd });
        const result = await invoker.invoke({ name: "render", arguments: { data: { $artifact: ref } } }, { session: invoker.openSession() });
        expect(result, String(answer)).toMatchObject({ status: "error", code: "STORE_FAILED" });
        expect(result.text).toContain("not the blob's bytes (a Uint8Array)");
        expect(tool.calls).toHaveLength(0);
      }
    });

    it("refuses a malformed ref with INVALID_ARGUMENTS", async () => {
      const invoker = makeInvoker([localTool("render", () => "ok")], { blobStore: new MemoryBlobStore() });
      const result = await invoker.invoke({ name: "render", arguments: { data: { $artifact: "nope" } } }, { session: invoker.openSession() });
      expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      // A script chooses the ref and the path: both are cut in the failure (4 MB of either was quoted whole).
      const huge = await invoker.invoke({ name: "render", arguments: { ["k".repeat(1e6)]: { $artifact: "x".repeat(4e6) } } }, { session: invoker.openSession() });
      expect(huge).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(huge.text.length).toBeLessThan(1000);
    });

    it("validates an artifact argument as the string it becomes, then checks the content", async () => {
      const store = new MemoryBlobStore();
      const short = await store.put("tiny");
      const long = await store.put("x".repeat(50));
      const tool = localTool("measure", (args) => ({ length: (args.text as string).length }), {
        inputSchema: { type: "object", properties: { text: { type: "string", maxLength: 10 } }, required: ["text"] },
      });
      const wantsObject = localTool("obj", () => "ok", {
        inputSchema: { type: "object", properties: { data: { type: "object" } } },
      });
      const invoker = makeInvoker([tool, wantsObject], { blobStore: store });
      const session = invoker.openSession();
      // The ref string (71 chars) would break maxLength 10, but only the content counts.
      expect((await invoker.invoke({ name: "measure", arguments: { text: { $artifact: short } } }, { session })).structured).toEqual({
        length: 4,
      });
      const tooLong = await invoker.invoke({ name: "measure", arguments: { text: { $artifact: long } } }, { session });
      expect(tooLong).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
      expect(tooLong.text).toContain('After resolving artifacts: Invalid arguments for "measure": argument "text" must NOT have more than 10 characters');
      // An artifact always arrives as a string: a schema wanting an object there is told so up front.
      const wrongType = await invoker.invoke({ name: "obj", arguments: { data: { $artifact: short } } }, { session });
      expect(wrongType.text).toContain('argument "data" must be object');
      expect(tool.calls).toHaveLength(1);
      expect(wantsObject.calls).toHaveLength(0);
    });

    it("passes an offloaded result on to the next tool", async () => {
      const store = new MemoryBlobStore();
      const big = "row\n".repeat(2000);
      const consumer = localTool("count", (args) => ({ lines: (args.data as string).split("\n").length - 1 }));
      const invoker = makeInvoker([localTool("query", () => big), consumer], { blobStore: store });
      const session = invoker.openSession();
      const rows = await invoker.invoke({ name: "query", arguments: {} }, { session });
      if (rows.status !== "ok" || !rows.artifactRef) throw new Error("expected an offloaded result");
      const counted = await invoker.invoke({ name: "count", arguments: { data: { $artifact: rows.artifactRef } } }, { session });
      expect(counted.structured).toEqual({ lines: 2000 });
    });
  });
});
