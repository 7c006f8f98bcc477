// Profiling driver: repeats one warm operation on an already pulled working copy.
//   node --cpu-prof bench/profile/warm.mjs STORE_DIR WORKSPACE PRIVATE_ROOT COPY pull|commit|onefile N
// `onefile` appends a line to COPY/d07/f042.md before each commit. Prints the median ms.
import { appendFileSync } from "node:fs";
import * as path from "node:path";
import { expectOk, fileStore, openNotebook } from "../lib/quire.mjs";
import { median } from "../lib/stats.mjs";

const [storeDir, workspace, privateRoot, copy, op, count] = process.argv.slice(2);
const notebook = await openNotebook({
  store: await fileStore(storeDir),
  workspaceRoot: workspace,
  privateRoot,
  probe: false,
});
const times = [];
for (let i = 0; i < Number(count ?? 10); i++) {
  if (op === "onefile") appendFileSync(path.join(copy, "d07", "f042.md"), `profiled line ${i}\n`);
  const start = performance.now();
  expectOk(
    op === "pull" ? await notebook.pull(copy) : await notebook.commit(`profiled ${op} ${i}`, copy),
    op,
  );
  times.push(performance.now() - start);
}
console.log(JSON.stringify({ op, medianMs: median(times), times }));
