/**
 * A snapshot of a directory tree that must not change: every entry's type, mode, size,
 * mtime, inode and content (files) or target (symlinks), read without following links.
 * {@link treeDifferences} compares two snapshots and names each created, removed or
 * changed entry.
 */
import { createHash } from "node:crypto";
import { lstatSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import * as path from "node:path";

/** Relative path → a description of the entry. */
export type TreeSnapshot = ReadonlyMap<string, string>;

/**
 * Snapshots everything at and below `root` (the root's own entry is `.`). Entries named
 * in `opaque` (relative paths) are recorded only as present with their type: they are
 * expected to change (the workspace root, the server's own store and private state).
 */
export const snapshotTree = (root: string, opaque: ReadonlyArray<string> = []): TreeSnapshot => {
  const entries = new Map<string, string>();
  const visit = (relative: string) => {
    const absolute = relative === "." ? root : path.join(root, relative);
    const stats = lstatSync(absolute);
    if (opaque.includes(relative)) {
      entries.set(relative, stats.isDirectory() ? "opaque dir" : "opaque entry");
      return;
    }
    const common = `mode=${stats.mode.toString(8)} ino=${stats.ino} mtime=${stats.mtimeMs}`;
    if (stats.isSymbolicLink()) {
      entries.set(relative, `link → ${readlinkSync(absolute)} ${common}`);
    } else if (stats.isDirectory()) {
      entries.set(relative, `dir ${common}`);
      for (const name of readdirSync(absolute).sort()) {
        visit(relative === "." ? name : path.join(relative, name));
      }
    } else {
      const digest = createHash("sha256").update(readFileSync(absolute)).digest("hex");
      entries.set(relative, `file size=${stats.size} sha256=${digest} ${common}`);
    }
  };
  visit(".");
  return entries;
};

/** Every difference between `before` and `after`, one line each; `[]` when equal. */
export const treeDifferences = (before: TreeSnapshot, after: TreeSnapshot): Array<string> => {
  const differences: Array<string> = [];
  for (const [name, was] of before) {
    const now = after.get(name);
    if (now === undefined) differences.push(`removed ${name} (${was})`);
    else if (now !== was) differences.push(`changed ${name}: ${was} → ${now}`);
  }
  for (const [name, now] of after) {
    if (!before.has(name)) differences.push(`created ${name} (${now})`);
  }
  return differences;
};
