// The quire side: the compiled library (run `npm run build` first) and file helpers.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
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

/** A fresh scratch directory under the temp dir (BENCH_TMP overrides the parent). */
export const scratch = (label) => {
  const parent = process.env.BENCH_TMP ?? tmpdir();
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(path.join(parent, `quire-bench-${label}-`));
};

/** Removes a scratch directory (best effort). */
export const cleanup = (dir) => rmSync(dir, { recursive: true, force: true, maxRetries: 3 });

/** Throws unless a library call returned OK. */
export const expectOk = (result, what) => {
  if (result.code !== "OK")
    throw new Error(`${what}: ${result.code}/${result.reason}: ${result.message}`);
  return result;
};
