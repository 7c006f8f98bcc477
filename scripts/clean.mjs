// Removes the compiled output (dist/) before `npm run build` compiles it again. Why: tsc
// only writes, so a source file that was moved or deleted would leave its old .js behind
// in dist/src, and `npm pack` (which ships dist/src) would publish it.
import { rmSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
rmSync(path.join(repoRoot, "dist"), { recursive: true, force: true });
