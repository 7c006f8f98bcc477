/**
 * The old files a rooted tree replaced or removed, kept open for a while after their
 * last check (rootedTree.ts). A process that opened one of them before it was replaced
 * — a shell appending with `>>`, an editor writing in place — may write into it after
 * that check: nothing tells when, and preempted between its `open` and its `write` it
 * can be milliseconds late, long after the replace ended. Checked again when the caller
 * asks (`RootedTree.lateWrites`, once its rewrite is over), those writes are handed back
 * too instead of vanishing with the unlinked file.
 *
 * At most {@link maxWatched} stay open (descriptors are a bounded resource): one more
 * has the oldest checked at once, and a write that had reached it is kept for the next
 * answer. Whatever is still open is closed with the tree.
 */
import type { StatsLike } from "./fsStats.js";

/** A write that reached a file after it was replaced or removed. */
export interface LateWrite {
  /** The file's path, relative to the tree that asks (see {@link ReplacedFiles.late}). */
  readonly path: string;
  /** What the old file holds now. */
  readonly bytes: Uint8Array;
}

/** The watch list of one tree. */
export interface ReplacedFiles {
  /** Keeps `descriptor` (the old file at `path`, as `stats` last saw it) open to check later. */
  readonly watch: (path: string, descriptor: number, stats: StatsLike) => void;
  /**
   * Checks the watched files below `prefix` (a tree's own path from the root; `""`: all),
   * closes them, and returns the ones written since, with paths relative to `prefix`.
   */
  readonly late: (prefix: string) => ReadonlyArray<LateWrite>;
  /** Closes every watched file without checking (the tree's end). Never throws. */
  readonly close: () => void;
}

/** How many replaced files one tree keeps open at most. */
export const maxWatched = 64;

/**
 * A watch list whose checks use `fstat`, `close` and `readAll` (the content of an open
 * file from its start, read to its end once it stops growing: rootedTree.ts readSettled).
 */
export const makeReplacedFiles = (calls: {
  readonly fstat: (descriptor: number) => StatsLike;
  readonly close: (descriptor: number) => void;
  readonly readAll: (descriptor: number) => Uint8Array;
}): ReplacedFiles => {
  const watched: Array<{ path: string; descriptor: number; size: number; mtimeMs: number }> = [];
  const found: LateWrite[] = [];

  const check = (entry: (typeof watched)[number]): void => {
    try {
      const now = calls.fstat(entry.descriptor);
      if (now.size !== entry.size || now.mtimeMs !== entry.mtimeMs)
        found.push({ path: entry.path, bytes: calls.readAll(entry.descriptor) });
    } finally {
      calls.close(entry.descriptor);
    }
  };

  return {
    watch: (path, descriptor, stats) => {
      while (watched.length >= maxWatched) {
        const oldest = watched.shift();
        if (oldest !== undefined) check(oldest);
      }
      watched.push({ path, descriptor, size: stats.size, mtimeMs: stats.mtimeMs });
    },
    late: (prefix) => {
      const below = (path: string) => prefix === "" || path.startsWith(`${prefix}/`);
      const relative = (path: string) => (prefix === "" ? path : path.slice(prefix.length + 1));
      let failure: unknown;
      const mine = watched.filter((entry) => below(entry.path));
      for (let i = watched.length - 1; i >= 0; i--) {
        const entry = watched[i];
        if (entry !== undefined && below(entry.path)) watched.splice(i, 1);
      }
      // Each check closes its file, even when it throws: every file gets its check.
      for (const entry of mine)
        try {
          check(entry);
        } catch (error) {
          failure ??= error;
        }
      if (failure !== undefined) throw failure;
      const answered = found.filter((write) => below(write.path));
      for (let i = found.length - 1; i >= 0; i--) {
        const write = found[i];
        if (write !== undefined && below(write.path)) found.splice(i, 1);
      }
      return answered.map((write) => ({ path: relative(write.path), bytes: write.bytes }));
    },
    close: () => {
      for (const entry of watched.splice(0))
        try {
          calls.close(entry.descriptor);
        } catch {
          // Nothing to do at the tree's end.
        }
      found.length = 0;
    },
  };
};
