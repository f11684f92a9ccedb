/** Test folders of skills: a fresh root per test, removed after it, and the SKILL_INVALID a load throws. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";

/** A temporary root made before each test of the file and removed after it (call at the top level). */
export interface SkillFolders {
  /** The current test's root. */
  readonly root: string;
  /** A skill folder `folder` under the root whose `SKILL.md` holds `content` (none when undefined); returns the folder. */
  skillDir(folder: string, content: string | Uint8Array | undefined): Promise<string>;
}

export function skillFolders(prefix: string): SkillFolders {
  let root = "";
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });
  return {
    get root() {
      return root;
    },
    async skillDir(folder, content) {
      const dir = join(root, folder);
      await mkdir(dir, { recursive: true });
      if (content !== undefined) await writeFile(join(dir, "SKILL.md"), content);
      return dir;
    },
  };
}

/** The `SKILL_INVALID` error `promise` rejects with; anything else fails the test. */
export async function skillErrorOf(promise: Promise<unknown>): Promise<{ message: string; details: Readonly<Record<string, unknown>> }> {
  try {
    await promise;
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") return error;
    throw error;
  }
  throw new Error("did not throw");
}
