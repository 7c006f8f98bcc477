/**
 * The cursors of both directory strategies (rootedTree.ts `Cursor`), which walk chains
 * too deep to name: down never follows a symlink, and up never lands anywhere but the
 * directory the cursor came down through, whatever was moved meanwhile — it fails `Moved`
 * instead.
 */
import * as nodeFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openCheckedPaths } from "../../src/adapters/checkedPaths.js";
import { openDirectoryHandles } from "../../src/adapters/directoryHandles.js";
import type { Directories } from "../../src/adapters/rootedTree.js";
import { FsError } from "../../src/ports/FileSystem.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) nodeFs.rmSync(root, { recursive: true, force: true });
});

/** A fresh root holding a/b/c, and a symlink a/link to the root itself. */
const fixture = (): string => {
  const root = nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-cursor-")));
  roots.push(root);
  nodeFs.mkdirSync(join(root, "a", "b", "c"), { recursive: true });
  nodeFs.symlinkSync(root, join(root, "a", "link"));
  return root;
};

const strategies: ReadonlyArray<readonly [string, (root: string) => Directories]> = [
  [
    "directory handles",
    (root) => {
      const handles = openDirectoryHandles(root);
      if (handles === undefined) throw new Error("this host has no /proc/self/fd");
      return handles;
    },
  ],
  [
    "checked paths",
    (root) =>
      openCheckedPaths(
        { lstat: (path) => nodeFs.lstatSync(path), realpath: (path) => nodeFs.realpathSync(path) },
        root,
      ),
  ],
];

const reasonOf = (body: () => void): string => {
  try {
    body();
  } catch (error) {
    if (error instanceof FsError) return error.reason;
    throw error;
  }
  return "none";
};

describe.each(strategies)("a cursor by %s", (_, open) => {
  it("goes down and back up to where it came from", () => {
    const root = fixture();
    const dirs = open(root);
    const cursor = dirs.cursor("");
    cursor.down("a");
    cursor.down("b");
    cursor.down("c");
    expect(nodeFs.readdirSync(cursor.here())).toEqual([]);
    cursor.up(2);
    expect(nodeFs.readdirSync(cursor.here()).sort()).toEqual(["b", "link"]);
    cursor.close();
    dirs.close();
  });

  it("never follows a symlink down, and stays where it was", () => {
    const root = fixture();
    const dirs = open(root);
    const cursor = dirs.cursor("a");
    expect(reasonOf(() => cursor.down("link"))).toBe("NotADirectory");
    expect(reasonOf(() => cursor.down("missing"))).toBe("NotFound");
    expect(nodeFs.readdirSync(cursor.here()).sort()).toEqual(["b", "link"]);
    cursor.close();
    dirs.close();
  });

  it("climbing back through a directory moved meanwhile reaches it or fails Moved, never elsewhere", () => {
    const reasons: string[] = [];
    for (const move of ["the middle one", "the one climbed to"] as const) {
      const root = fixture();
      const inodeOfA = nodeFs.lstatSync(join(root, "a")).ino;
      const dirs = open(root);
      const cursor = dirs.cursor("");
      cursor.down("a");
      cursor.down("b");
      cursor.down("c");
      if (move === "the middle one") {
        // c's way up by handle now leads to the root, not to a.
        nodeFs.renameSync(join(root, "a", "b"), join(root, "b"));
      } else {
        // a's name now holds another directory; the one left lives on as a2.
        nodeFs.renameSync(join(root, "a"), join(root, "a2"));
        nodeFs.mkdirSync(join(root, "a"));
      }
      const reason = reasonOf(() => cursor.up(2));
      reasons.push(reason);
      // stat, not lstat: a handle's path is a link to the directory it holds.
      if (reason === "none") expect(nodeFs.statSync(cursor.here()).ino).toBe(inodeOfA);
      else expect(reason).toBe("Moved");
      cursor.close();
      dirs.close();
    }
    // By handle the middle move leads elsewhere, by path the other one: each is caught.
    expect(reasons).toContain("Moved");
  });
});
