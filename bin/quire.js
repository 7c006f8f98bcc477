#!/usr/bin/env node
// Thin launcher: `npm install` (the prepare script) compiles the CLI to dist/src/ and
// bundles it into dist/cli/ (scripts/bundle.mjs), which starts several times faster.
//
// Fallback: only when the bundle's entry file does not exist (say, after a bare
// `tsc -p tsconfig.build.json`) does the launcher run the unbundled tree, which is the
// same code, only slower to load. The check is on the file itself, before importing, so
// an error raised while loading or running the bundle is never masked by a second try.
import { existsSync, mkdirSync } from "node:fs";
import * as nodeModule from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Most of a CLI call's start-up is V8 compiling the ~1 MB bundle. Node 22.8 and later
// can keep the compiled code on disk (in the OS temporary directory, or where
// NODE_COMPILE_CACHE says; NODE_DISABLE_COMPILE_CACHE=1 turns it off), which saves
// ~50 ms of every later call (a one-file commit: 0.35 s → 0.30 s on the 2-core test
// machine). Older Node has no such function, and a cache that cannot be used
// (unwritable directory, another Node version) only costs the compilation it would
// have saved: Node reports that in the returned status rather than throwing.
//
// Its default directory is `node-compile-cache` in the temporary directory, made with a
// recursive mkdir, which retries forever a name the system refuses under an existing
// directory: with TMPDIR=/proc every command hung, spinning, before printing anything.
// So the launcher makes that directory itself, one level, and enables the cache only
// when it is there. NODE_COMPILE_CACHE (a directory of the user's choice) Node has
// already applied at start-up; this call then changes nothing.
const defaultCompileCache = () => {
  const directory = join(tmpdir(), "node-compile-cache");
  try {
    mkdirSync(directory);
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) return undefined;
  }
  return directory;
};
if (
  typeof nodeModule.enableCompileCache === "function" &&
  process.env.NODE_DISABLE_COMPILE_CACHE === undefined &&
  process.env.NODE_COMPILE_CACHE === undefined
) {
  const directory = defaultCompileCache();
  if (directory !== undefined) nodeModule.enableCompileCache(directory);
}

const bundle = new URL("../dist/cli/main.js", import.meta.url);
const entry = existsSync(bundle) ? bundle.href : "../dist/src/app/cli/main.js";
import(entry).catch((error) => {
  process.stderr.write(
    `quire: cannot start (${error instanceof Error ? error.message : String(error)}); run \`npm install\` to build it\n`,
  );
  process.exitCode = 70;
});
