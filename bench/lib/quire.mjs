// The quire side: the compiled library (run `npm run build` first) and file helpers.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Effect } from "effect";

/** The repository root. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The CLI launcher (runs the bundled CLI, dist/cli/). */
export const quireBin = path.join(repoRoot, "bin/quire.js");
/**
 * The same CLI unbundled (dist/src/), for CPU profiles: its frames map back to the
 * TypeScript sources. It loads more slowly than the bundle, so never time it.
 */
export const quireUnbundled = path.join(repoRoot, "dist/src/app/cli/main.js");

const dist = (module) => import(path.join(repoRoot, "dist/src", module));

export const { openNotebook } = await dist("app/library.js");
export const FileObjectStore = await dist("adapters/fileObjectStore.js");
export const MemoryObjectStore = await dist("adapters/memoryObjectStore.js");
export const { mergeText } = await dist("domain/textMerge.js");

/** Opens (creating) a file object store at `root`. */
export const fileStore = (root) => Effect.runPromise(FileObjectStore.make({ root }));

const scratchParent = () => {
  const parent = process.env.BENCH_TMP ?? tmpdir();
  mkdirSync(parent, { recursive: true });
  return parent;
};

/** A fresh scratch directory under the temp dir (BENCH_TMP overrides the parent). */
export const scratch = (label) => mkdtempSync(path.join(scratchParent(), `quire-bench-${label}-`));

// Where finished scratch directories wait until the process exits. Deleting them at
// once made the next measurement pay for it: on ext4 without a journal (this machine's
// disk) every file creation skips, one by one, the free inodes of its group that were
// freed within the last minute or more (fs/ext4/ialloc.c, recently_deleted), so a
// workload run right after a 20,000-file deletion spent over a quarter of the machine's
// busy time there.
let trash;
let trashed = 0;

/** Deletes the scratch directories set aside by {@link cleanup} (best effort). */
export const emptyTrash = () => {
  if (trash === undefined) return;
  rmSync(trash, { recursive: true, force: true, maxRetries: 3 });
  trash = undefined;
};

/**
 * Sets a scratch directory (or any directory under the scratch parent) aside, to be
 * deleted when the process exits or {@link emptyTrash} runs: a rename, which frees no
 * inode, so that no measurement pays for another's deletions (see above).
 */
export const cleanup = (dir) => {
  if (trash === undefined) {
    trash = mkdtempSync(path.join(scratchParent(), "quire-bench-trash-"));
    process.once("exit", emptyTrash);
  }
  try {
    renameSync(dir, path.join(trash, `${trashed++}-${path.basename(dir)}`));
  } catch {
    // Not there, or on another file system: delete it now.
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
};

/** Throws unless a library call returned OK. */
export const expectOk = (result, what) => {
  if (result.code !== "OK")
    throw new Error(`${what}: ${result.code}/${result.reason}: ${result.message}`);
  return result;
};
