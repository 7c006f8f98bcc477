/**
 * A scan's stat cache must never be vouched for by a stat taken through a swapped path
 * component (SPEC §4.1): the directory of a file moved out of the copy keeps the file's
 * inode, size, mtime and ctime, so a stat that reached it through a symlink swapped in
 * for a moment would match the cache and the changed file now in its place would never
 * be read (a commit would answer OK without the edit). Every stat of a scan goes
 * through the directory's handle; this test swaps the directory right after it is
 * listed, and again back right after the file's stat.
 */
import * as nodeFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@effect/vitest";
import { Effect } from "effect";
import { make } from "../../src/adapters/nodeFileSystem.js";
import { makeBlobSource } from "../../src/app/usecases/workingCopy/blobs.js";
import type { StatStamp } from "../../src/app/usecases/workingCopy/privateState.js";
import { scanWorkingCopy } from "../../src/app/usecases/workingCopy/workingCopy.js";

describe("a scan while a directory is swapped for a symlink to its old self", () => {
  it.live("still reads the file that changed, never trusting the moved-out inode's stat", () =>
    Effect.gen(function* () {
      const root = nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-swapscan-")));
      const copy = join(root, "copy");
      const d = join(copy, "d");
      nodeFs.mkdirSync(d, { recursive: true });
      nodeFs.writeFileSync(join(d, "a.md"), "v1\n");
      const old = new Date(Date.now() - 60_000);
      nodeFs.utimesSync(join(d, "a.md"), old, old); // not racy: the stamp is trusted
      const plain = make();
      const blobs = makeBlobSource(plain, join(root, "private"));
      const first = yield* Effect.scoped(
        Effect.flatMap(plain.openTree(copy), (tree) =>
          scanWorkingCopy(tree, new Map(), 0, blobs, new Map()),
        ),
      );
      const v1 = first.get("d/a.md");
      expect(v1).toBeDefined();
      if (v1 === undefined) return;
      const stats = new Map<string, StatStamp>([["d/a.md", v1.stamp]]);
      const recordedAt = Date.now();
      yield* Effect.sleep("30 millis");
      // The old directory leaves (its file keeps every stat field); a new one, with the
      // edited file, takes its place.
      const outside = join(root, "outside-d");
      nodeFs.renameSync(d, outside);
      nodeFs.mkdirSync(d);
      nodeFs.writeFileSync(join(d, "a.md"), "v2 edited\n");
      nodeFs.writeFileSync(join(d, "b.md"), "b\n");
      let swapped = false;
      let restored = false;
      const swapAfterListing = (names: ReadonlyArray<string>) => {
        if (swapped || !names.includes("b.md")) return;
        swapped = true;
        nodeFs.renameSync(d, join(copy, "d-real"));
        nodeFs.symlinkSync(outside, d);
      };
      const racing = make({
        interpose: (calls) => ({
          ...calls,
          readdir: (path) => {
            const names = calls.readdir(path);
            swapAfterListing(names);
            return names;
          },
          readdirKinds: (path) => {
            const listed = calls.readdirKinds(path);
            swapAfterListing(listed.map(({ name }) => name));
            return listed;
          },
          lstat: (path) => {
            const stats = calls.lstat(path);
            if (swapped && !restored && path.endsWith("/a.md")) {
              restored = true;
              nodeFs.unlinkSync(d);
              nodeFs.renameSync(join(copy, "d-real"), d);
            }
            return stats;
          },
        }),
      });
      const second = yield* Effect.scoped(
        Effect.flatMap(racing.openTree(copy), (tree) =>
          scanWorkingCopy(
            tree,
            stats,
            recordedAt,
            makeBlobSource(racing, join(root, "p2")),
            new Map(),
          ),
        ),
      );
      expect(swapped).toBe(true);
      expect(nodeFs.readFileSync(join(d, "a.md"), "utf8")).toBe("v2 edited\n");
      expect(second.get("d/a.md")?.id).not.toBe(v1.id);
      nodeFs.rmSync(root, { recursive: true, force: true });
    }),
  );
});
