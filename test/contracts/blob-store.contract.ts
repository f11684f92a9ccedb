import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isChainRuntimeError, type ArtifactRef, type BlobStore, type ChainRuntimeError, type ErrorCode } from "../../src/kernel/index.ts";

/** How a contract run gets a fresh, empty store for each test. */
export interface BlobStoreContractOptions {
  readonly create: () => Promise<BlobStore> | BlobStore;
  /** A fresh, empty store whose `createdAt` stamps (and `gc`'s default now) come from `now`. */
  readonly createWithClock: (now: () => number) => Promise<BlobStore> | BlobStore;
}

/** sha256 ref of some bytes, computed independently of the stores. */
export function refOf(data: Uint8Array | string): ArtifactRef {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** Awaits `promise` and asserts it rejects with a ChainRuntimeError of `code`; returns the error. */
export async function expectCode(promise: Promise<unknown>, code: ErrorCode): Promise<ChainRuntimeError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(isChainRuntimeError(caught), `expected a ChainRuntimeError ${code}, got ${String(caught)}`).toBe(true);
  expect((caught as { code: string }).code).toBe(code);
  return caught as ChainRuntimeError;
}

const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);

const DAY_MS = 86_400_000;
/** A fixed "now" for the clock tests, and the week before it. */
const NOW = Date.UTC(2030, 0, 8);
const WEEK_AGO = NOW - 7 * DAY_MS;

/**
 * The behaviour every {@link BlobStore} must have. Call once per implementation:
 * `runBlobStoreContract("MemoryBlobStore", { create: () => new MemoryBlobStore(),
 * createWithClock: (now) => new MemoryBlobStore({ now }) })`.
 */
export function runBlobStoreContract(name: string, options: BlobStoreContractOptions): void {
  describe(`BlobStore contract: ${name}`, () => {
    const create = async (): Promise<BlobStore> => options.create();
    /** A store on a clock the test sets: `clock.now = ...`. */
    const createOnClock = async (start: number): Promise<{ store: BlobStore; clock: { now: number } }> => {
      const clock = { now: start };
      return { store: await options.createWithClock(() => clock.now), clock };
    };

    describe("put / resolve", () => {
      it("returns sha256:<hex> of the bytes", async () => {
        const store = await create();
        const data = bytes(1, 2, 3, 250);
        expect(await store.put(data)).toBe(refOf(data));
      });

      it("stores strings as UTF-8", async () => {
        const store = await create();
        const text = "héllo ✓ 日本";
        const ref = await store.put(text);
        const utf8 = new TextEncoder().encode(text);
        expect(ref).toBe(refOf(utf8));
        expect(await store.resolve(ref)).toEqual(utf8);
      });

      it("gives the same ref for the same bytes and different refs for different bytes", async () => {
        const store = await create();
        const a = await store.put(bytes(1, 2));
        expect(await store.put(bytes(1, 2))).toBe(a);
        expect(await store.put("\u0001\u0002")).toBe(a);
        expect(await store.put(bytes(2, 1))).not.toBe(a);
      });

      it("round-trips empty and large blobs byte for byte", async () => {
        const store = await create();
        const empty = await store.put(new Uint8Array(0));
        expect(await store.resolve(empty)).toEqual(new Uint8Array(0));
        const large = new Uint8Array(1_500_000);
        for (let i = 0; i < large.length; i += 1) large[i] = (i * 31) & 0xff;
        const ref = await store.put(large);
        expect(ref).toBe(refOf(large));
        expect(Buffer.from(await store.resolve(ref)).equals(Buffer.from(large))).toBe(true);
      });

      it("is not affected by the caller mutating its array after put, even before put settles", async () => {
        const store = await create();
        const data = bytes(7, 8, 9);
        const pending = store.put(data);
        data[0] = 0;
        const ref = await pending;
        expect(ref).toBe(refOf(bytes(7, 8, 9)));
        expect(await store.resolve(ref)).toEqual(bytes(7, 8, 9));
      });

      it("copies a Node Buffer too (whose slice shares its memory) and an array with its own slice", async () => {
        const store = await create();
        const buffer = Buffer.from("hello");
        const ref = await store.put(buffer);
        buffer[0] = 0x4a; // "Jello"
        expect(ref).toBe(refOf("hello"));
        expect(Buffer.from(await store.resolve(ref)).toString()).toBe("hello");
        class SharingArray extends Uint8Array<ArrayBuffer> {
          override slice(): Uint8Array<ArrayBuffer> {
            return this; // a hostile or careless subclass: no copy
          }
        }
        const shared = new SharingArray(new ArrayBuffer(3));
        shared.set([1, 2, 3]);
        const sharedRef = await store.put(shared);
        shared[0] = 9;
        expect(await store.resolve(sharedRef)).toEqual(bytes(1, 2, 3));
      });

      it("is not affected by the caller mutating resolved bytes", async () => {
        const store = await create();
        const ref = await store.put(bytes(4, 5));
        const first = await store.resolve(ref);
        first[0] = 99;
        expect(await store.resolve(ref)).toEqual(bytes(4, 5));
      });

      it("returns one ref for 50 concurrent puts of the same bytes, and keeps one blob", async () => {
        const store = await create();
        const data = new TextEncoder().encode("same bytes from everywhere ".repeat(1000));
        const refs = await Promise.all(Array.from({ length: 50 }, () => store.put(data)));
        expect(new Set(refs)).toEqual(new Set([refOf(data)]));
        expect(await store.resolve(refOf(data))).toEqual(data);
        expect((await store.stat(refOf(data)))?.pins).toBe(0);
        expect(await store.gc()).toEqual({ removed: 1, freedBytes: data.byteLength });
      });

      it("stores many different blobs concurrently", async () => {
        const store = await create();
        const inputs = Array.from({ length: 30 }, (_, i) => `blob number ${i}`);
        const refs = await Promise.all(inputs.map((text) => store.put(text)));
        for (const [i, ref] of refs.entries()) {
          expect(new TextDecoder().decode(await store.resolve(ref))).toBe(inputs[i]);
        }
      });

      it("refuses a put of something that is not bytes or a string", async () => {
        const store = await create();
        await expectCode(store.put(42 as unknown as string), "ARGUMENT_INVALID");
        await expectCode(store.put([1, 2] as unknown as Uint8Array), "ARGUMENT_INVALID");
        await expectCode(store.put("x", { mimeType: 5 } as unknown as { mimeType: string }), "ARGUMENT_INVALID");
      });

      it("refuses meta past its bounds before storing anything (a put that succeeds leaves a blob that reads back)", async () => {
        const store = await create();
        await expectCode(store.put("x", { mimeType: `image/${"x".repeat(70_000)}` }), "ARGUMENT_INVALID");
        await expectCode(store.put("x", { name: "n".repeat(70_000) }), "ARGUMENT_INVALID");
        const ref = await store.put("x", { mimeType: `image/${"x".repeat(200)}`, name: "n".repeat(1000) });
        expect((await store.stat(ref))?.bytes).toBe(1);
      });

      it("throws ARTIFACT_NOT_FOUND when resolving an absent ref", async () => {
        const store = await create();
        const error = await expectCode(store.resolve(refOf("never stored")), "ARTIFACT_NOT_FOUND");
        expect(error.details.ref).toBe(refOf("never stored"));
      });
    });

    describe("malformed refs", () => {
      const malformed = [
        "sha256:../../etc/passwd",
        `sha256:${"A".repeat(64)}`,
        `sha256:${"a".repeat(63)}`,
        `sha256:${"a".repeat(64)}/`,
        `md5:${"a".repeat(64)}`,
        "a".repeat(64),
        "",
      ];
      for (const ref of malformed) {
        it(`refuses ${JSON.stringify(ref.slice(0, 30))} with ARTIFACT_REF_INVALID in every method`, async () => {
          const store = await create();
          const bad = ref as ArtifactRef;
          await expectCode(store.resolve(bad), "ARTIFACT_REF_INVALID");
          await expectCode(store.stat(bad), "ARTIFACT_REF_INVALID");
          await expectCode(store.pin(bad), "ARTIFACT_REF_INVALID");
          await expectCode(store.unpin(bad), "ARTIFACT_REF_INVALID");
        });
      }

      it("refuses non-string refs", async () => {
        const store = await create();
        await expectCode(store.resolve(undefined as unknown as ArtifactRef), "ARTIFACT_REF_INVALID");
        await expectCode(store.stat({} as unknown as ArtifactRef), "ARTIFACT_REF_INVALID");
      });
    });

    describe("stat", () => {
      it("reports size, MIME type, name, createdAt and pins", async () => {
        const store = await create();
        const before = Date.now();
        const ref = await store.put("hello", { mimeType: "text/plain", name: "greeting.txt" });
        const after = Date.now();
        const info = await store.stat(ref);
        expect(info).toMatchObject({ ref, bytes: 5, mimeType: "text/plain", name: "greeting.txt", pins: 0 });
        expect(info?.createdAt).toBeGreaterThanOrEqual(before);
        expect(info?.createdAt).toBeLessThanOrEqual(after);
      });

      it("defaults the MIME type to application/octet-stream and omits an absent name", async () => {
        const store = await create();
        const info = await store.stat(await store.put(bytes(1)));
        expect(info?.mimeType).toBe("application/octet-stream");
        expect(info !== undefined && "name" in info).toBe(false);
      });

      it("keeps the meta and pins of the first put, and moves createdAt to the latest put", async () => {
        const { store, clock } = await createOnClock(WEEK_AGO);
        const ref = await store.put("x", { mimeType: "text/plain", name: "first" });
        await store.pin(ref);
        const first = await store.stat(ref);
        expect(first?.createdAt).toBe(WEEK_AGO);
        clock.now = NOW;
        expect(await store.put("x", { mimeType: "application/json", name: "second" })).toBe(ref);
        expect(await store.stat(ref)).toEqual({ ...first, createdAt: NOW });
        clock.now = WEEK_AGO; // a put whose clock is behind never moves createdAt back
        await store.put("x");
        expect((await store.stat(ref))?.createdAt).toBe(NOW);
      });

      it("returns undefined for an absent ref", async () => {
        const store = await create();
        expect(await store.stat(refOf("absent"))).toBeUndefined();
      });
    });

    describe("pin / unpin", () => {
      it("counts pins up and down, never below zero", async () => {
        const store = await create();
        const ref = await store.put("pinned");
        await store.pin(ref);
        await store.pin(ref);
        expect((await store.stat(ref))?.pins).toBe(2);
        await store.unpin(ref);
        expect((await store.stat(ref))?.pins).toBe(1);
        await store.unpin(ref);
        await store.unpin(ref);
        expect((await store.stat(ref))?.pins).toBe(0);
      });

      it("counts 20 concurrent pins exactly", async () => {
        const store = await create();
        const ref = await store.put("busy");
        await Promise.all(Array.from({ length: 20 }, () => store.pin(ref)));
        expect((await store.stat(ref))?.pins).toBe(20);
        await Promise.all(Array.from({ length: 5 }, () => store.unpin(ref)));
        expect((await store.stat(ref))?.pins).toBe(15);
      });

      it("keeps pins when the same bytes are put again", async () => {
        const store = await create();
        const ref = await store.put("again");
        await store.pin(ref);
        await store.put("again");
        expect((await store.stat(ref))?.pins).toBe(1);
      });

      it("throws ARTIFACT_NOT_FOUND when pinning an absent ref", async () => {
        const store = await create();
        await expectCode(store.pin(refOf("absent")), "ARTIFACT_NOT_FOUND");
      });

      it("ignores an unpin of an absent ref", async () => {
        const store = await create();
        await expect(store.unpin(refOf("absent"))).resolves.toBeUndefined();
        expect(await store.stat(refOf("absent"))).toBeUndefined();
      });
    });

    describe("gc", () => {
      it("removes unpinned blobs at least olderThanMs old, and reports what it freed", async () => {
        const store = await create();
        const old = await store.put("old blob");
        const createdAt = (await store.stat(old))?.createdAt ?? 0;
        expect(await store.gc({ olderThanMs: 1000, now: createdAt + 999 })).toEqual({ removed: 0, freedBytes: 0 });
        expect(await store.stat(old)).toBeDefined();
        expect(await store.gc({ olderThanMs: 1000, now: createdAt + 1000 })).toEqual({ removed: 1, freedBytes: 8 });
        expect(await store.stat(old)).toBeUndefined();
        await expectCode(store.resolve(old), "ARTIFACT_NOT_FOUND");
      });

      it("never removes a pinned blob, and removes it once unpinned", async () => {
        const store = await create();
        const ref = await store.put("keep me");
        await store.pin(ref);
        const far = Date.now() + 10 * 365 * 24 * 3600_000;
        expect(await store.gc({ olderThanMs: 0, now: far })).toEqual({ removed: 0, freedBytes: 0 });
        expect(await store.resolve(ref)).toEqual(new TextEncoder().encode("keep me"));
        await store.unpin(ref);
        expect((await store.gc({ now: far })).removed).toBe(1);
      });

      it("defaults to olderThanMs 0 and now = the clock: removes every unpinned blob", async () => {
        const store = await create();
        const a = await store.put("a");
        const b = await store.put("bb");
        await store.pin(b);
        expect(await store.gc()).toEqual({ removed: 1, freedBytes: 1 });
        expect(await store.stat(a)).toBeUndefined();
        expect(await store.stat(b)).toBeDefined();
      });

      it("counts age from the latest put: bytes stored long ago and put again survive gc({ olderThanMs })", async () => {
        // A run's return value (put, never pinned) identical to a week-old blob: its fresh ref
        // must outlive the next routine "keep a day" collection.
        const { store, clock } = await createOnClock(WEEK_AGO);
        const old = await store.put("the same report", { mimeType: "application/json" });
        clock.now = NOW;
        const fresh = await store.put("the same report", { mimeType: "application/json" });
        expect(fresh).toBe(old);
        expect(await store.gc({ olderThanMs: DAY_MS })).toEqual({ removed: 0, freedBytes: 0 });
        expect(new TextDecoder().decode(await store.resolve(fresh))).toBe("the same report");
        clock.now = NOW + DAY_MS;
        expect(await store.gc({ olderThanMs: DAY_MS })).toEqual({ removed: 1, freedBytes: 15 });
      });

      it("lets a put-then-pin of bytes stored long ago pin them, with a gc({ olderThanMs }) in between", async () => {
        const { store, clock } = await createOnClock(WEEK_AGO);
        await store.put("old result");
        clock.now = NOW;
        const ref = await store.put("old result");
        expect((await store.gc({ olderThanMs: DAY_MS })).removed).toBe(0);
        await store.pin(ref);
        expect((await store.stat(ref))?.pins).toBe(1);
      });

      it("never loses a put-then-pin of bytes stored long ago to gc({ olderThanMs }) running concurrently", async () => {
        const { store, clock } = await createOnClock(WEEK_AGO);
        const data = "a result stored last week ".repeat(100);
        await store.put(data);
        clock.now = NOW;
        const calls = Array.from({ length: 20 }, async () => {
          const ref = await store.put(data);
          await store.pin(ref);
          return ref;
        });
        const gcs = Array.from({ length: 20 }, () => store.gc({ olderThanMs: DAY_MS }));
        const [refs, collected] = await Promise.all([Promise.all(calls), Promise.all(gcs)]);
        expect(new Set(refs)).toEqual(new Set([refOf(data)]));
        expect(collected.map((result) => result.removed)).toEqual(gcs.map(() => 0));
        expect((await store.stat(refOf(data)))?.pins).toBe(20);
      });

      it("lets a removed blob be put again", async () => {
        const store = await create();
        const ref = await store.put("phoenix");
        await store.gc();
        expect(await store.put("phoenix")).toBe(ref);
        expect(new TextDecoder().decode(await store.resolve(ref))).toBe("phoenix");
      });

      it("never loses a blob whose pin succeeded while gc ran concurrently", async () => {
        const store = await create();
        const refs = await Promise.all(Array.from({ length: 40 }, (_, i) => store.put(`contended ${i}`)));
        const pins = refs.map((ref) => store.pin(ref).then(() => true, () => false));
        const [, ...pinned] = await Promise.all([store.gc(), ...pins]);
        for (const [i, ref] of refs.entries()) {
          if (pinned[i] === true) {
            expect((await store.stat(ref))?.pins, `${ref} was pinned`).toBe(1);
            expect(new TextDecoder().decode(await store.resolve(ref))).toBe(`contended ${i}`);
          } else {
            expect(await store.stat(ref)).toBeUndefined();
          }
        }
      });

      it("returns zero counts on an empty store", async () => {
        const store = await create();
        expect(await store.gc({ olderThanMs: 0 })).toEqual({ removed: 0, freedBytes: 0 });
      });

      it("refuses a negative or non-finite olderThanMs or now with ARGUMENT_INVALID", async () => {
        const store = await create();
        await expectCode(store.gc({ olderThanMs: -1 }), "ARGUMENT_INVALID");
        await expectCode(store.gc({ olderThanMs: Number.NaN }), "ARGUMENT_INVALID");
        await expectCode(store.gc({ now: Number.POSITIVE_INFINITY }), "ARGUMENT_INVALID");
      });
    });
  });
}
