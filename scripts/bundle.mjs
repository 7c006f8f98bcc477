// Bundles the compiled CLI (dist/src/app/cli/main.js, written by tsc) into dist/cli/,
// which bin/quire.js loads. Why: unbundled, every CLI process spends most of its
// start-up resolving and loading ~300 ESM files of `effect`; one bundle loads in a
// fraction of that. Run by `npm run build` after tsc.
//
// - `splitting`: the S3 and MinIO adapters (and run.js, the MCP server) are loaded with
//   dynamic import() so that help, version and file-store runs never load them; code
//   splitting keeps each behind its own chunk instead of hoisting it into main.js.
// - The AWS SDK, @smithy and minio stay external: they are large, only needed for s3://
//   and minio:// stores, and are loaded lazily from node_modules by those chunks.
// - The banner gives bundled CommonJS dependencies a `require` (ESM has none).
//
// Fails (exit 1) if the build fails or if main.js would load an external store SDK
// eagerly, i.e. through static imports alone.
import { rmSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const entry = "dist/src/app/cli/main.js";
const outdir = "dist/cli";
const lazyExternals = ["@aws-sdk/*", "@smithy/*", "minio"];

// Chunk names carry content hashes: without this, stale chunks would pile up.
rmSync(path.join(repoRoot, outdir), { recursive: true, force: true });

const result = await build({
  absWorkingDir: repoRoot,
  entryPoints: [entry],
  outdir,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: lazyExternals,
  // Prefer a package's ES module build where it has one: jsonc-parser's CommonJS entry is
  // a UMD wrapper whose require() calls esbuild cannot follow. (Packages with an
  // `exports` map, like effect and the MCP SDK, are resolved through it either way.)
  mainFields: ["module", "main"],
  banner: {
    js: "import { createRequire as __quireCreateRequire } from 'module'; const require = __quireCreateRequire(import.meta.url);",
  },
  metafile: true,
  logLevel: "warning",
});

/** The external modules reachable from `output` through static imports only. */
const eagerExternals = (outputs, output, seen = new Set()) => {
  if (seen.has(output)) return [];
  seen.add(output);
  return (outputs[output]?.imports ?? [])
    .filter((edge) => edge.kind === "import-statement")
    .flatMap((edge) => (edge.external ? [edge.path] : eagerExternals(outputs, edge.path, seen)));
};

const outputs = result.metafile.outputs;
const mainOutput = Object.keys(outputs).find((output) => outputs[output].entryPoint === entry);
if (mainOutput === undefined) {
  throw new Error(`bundle: no output for ${entry}`);
}
const storeSdk = /^(@aws-sdk\/|@smithy\/|minio($|\/))/;
const eager = [...new Set(eagerExternals(outputs, mainOutput))].filter((name) =>
  storeSdk.test(name),
);
if (eager.length > 0) {
  throw new Error(
    `bundle: ${mainOutput} would load ${eager.join(", ")} at start-up; keep store SDKs behind dynamic import()`,
  );
}
