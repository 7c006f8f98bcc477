// Profiling helper (not part of the suite): writes the tree workload's notebook
// (DIRS × 100 files of ~4 KB) into DIR/store once, via DIR/ws/source, and prints the
// paths to use with `node --cpu-prof bin/quire.js pull ...`.
//   node bench/profile/seedTree.mjs DIR [DIRS]
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { makeRng, words } from "../lib/rng.mjs";
import { expectOk, fileStore, openNotebook } from "../lib/quire.mjs";

const dir = path.resolve(process.argv[2]);
const dirs = Number(process.argv[3] ?? 100);
const workspace = path.join(dir, "ws");
const source = path.join(workspace, "source");
if (!existsSync(path.join(dir, "store"))) {
  const rng = makeRng(7);
  for (let d = 0; d < dirs; d++) {
    const sub = path.join(source, `d${String(d).padStart(2, "0")}`);
    mkdirSync(sub, { recursive: true });
    for (let f = 0; f < 100; f++) {
      let text = `# note ${d}/${f}\n\n`;
      while (text.length < 4000) text += words(rng, 60) + "\n";
      writeFileSync(path.join(sub, `f${String(f).padStart(3, "0")}.md`), text);
    }
  }
  const store = await fileStore(path.join(dir, "store"));
  const notebook = await openNotebook({
    store,
    workspaceRoot: workspace,
    privateRoot: path.join(dir, "private-seed"),
  });
  expectOk(await notebook.pull(source), "seed pull");
  const t = performance.now();
  expectOk(await notebook.commit("initial", source), "seed commit");
  console.error(`seed commit ${(performance.now() - t).toFixed(0)} ms`);
}
console.log(`store: file:${path.join(dir, "store")} workspace: ${workspace}`);
