/**
 * A refused start removes the private root's directories it made, each only while empty
 * (layers.ts, withNotebook): another process starting at the same instant on the same
 * new private root can find its just-made `sessions/` (or the private root) gone before
 * it locks or records its session there. The claim makes them again and goes on; it did
 * not, and that start failed with an I/O error. On the node file system.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import * as nodeFs from "../../src/adapters/nodeFileSystem.js";
import { claimSession, sessionsDirectory } from "../../src/app/sessions.js";
import type { FileSystemService } from "../../src/ports/FileSystem.js";

const roots: Array<string> = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** The node file system, where the first `times` makings of `sessions/` are undone at once. */
const cleanedAfterMaking = (privateRoot: string, times: number, alsoRoot: boolean) => {
  const base = nodeFs.make();
  let left = times;
  const fs: FileSystemService = {
    ...base,
    makeDirectory: (path, mode) =>
      Effect.tap(base.makeDirectory(path, mode), () =>
        Effect.sync(() => {
          if (path !== sessionsDirectory(privateRoot) || left === 0) return;
          left--;
          // What the other process's cleanup does: each directory it made, while empty.
          rmdirSync(path);
          if (alsoRoot) rmdirSync(privateRoot);
        }),
      ),
  };
  return fs;
};

describe("claiming a session while a refused start cleans up the same new private root", () => {
  for (const alsoRoot of [false, true])
    it(`makes sessions/ again${alsoRoot ? " (and the private root)" : ""} and records the session`, async () => {
      const root = mkdtempSync(join(tmpdir(), "quire-claim-"));
      roots.push(root);
      const privateRoot = join(root, "private");
      const fs = cleanedAfterMaking(privateRoot, 1, alsoRoot);
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            yield* fs.makeDirectory(privateRoot, 0o700);
            yield* claimSession(fs, privateRoot, "0123456789abcdef", join(root, "nb"), "store");
            expect(readdirSync(sessionsDirectory(privateRoot)).sort()).toEqual([
              "0123456789abcdef.json",
              "0123456789abcdef.lock",
            ]);
          }),
        ),
      );
      expect(existsSync(join(sessionsDirectory(privateRoot), "0123456789abcdef.json"))).toBe(true);
    });
});
