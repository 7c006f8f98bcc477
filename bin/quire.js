#!/usr/bin/env node
// Thin launcher: `npm install` (the prepare script) compiles the CLI to dist/src/ and
// bundles it into dist/cli/ (scripts/bundle.mjs), which starts several times faster.
//
// Fallback: only when the bundle's entry file does not exist (say, after a bare
// `tsc -p tsconfig.build.json`) does the launcher run the unbundled tree, which is the
// same code, only slower to load. The check is on the file itself, before importing, so
// an error raised while loading or running the bundle is never masked by a second try.
import { existsSync } from "node:fs";

const bundle = new URL("../dist/cli/main.js", import.meta.url);
const entry = existsSync(bundle) ? bundle.href : "../dist/src/app/cli/main.js";
import(entry).catch((error) => {
  process.stderr.write(
    `quire: cannot start (${error instanceof Error ? error.message : String(error)}); run \`npm install\` to build it\n`,
  );
  process.exitCode = 70;
});
