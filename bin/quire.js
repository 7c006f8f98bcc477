#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm install` (the prepare script).
import("../dist/src/app/cli/main.js").catch((error) => {
  process.stderr.write(
    `quire: cannot start (${error instanceof Error ? error.message : String(error)}); run \`npm install\` to build it\n`,
  );
  process.exitCode = 70;
});
