// The measured side of retainedHeap.test.ts, in a process of its own so that only quire's
// memory is measured (not the test runner's, which keeps what it captures). Run as
//   node --expose-gc retainedHeap.child.mjs <dist/src/index.js> <scratch dir> <warm-up> <measured> <every>
// and prints one line `RESULT {"at": [...commits], "heap": [...bytes]}` on stdout (the
// library's own log lines go there too).
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [library, root, warmUpArg, measuredArg, everyArg] = process.argv.slice(2);
const [warmUp, measured, every] = [warmUpArg, measuredArg, everyArg].map(Number);
const { openNotebook } = await import(pathToFileURL(library).href);
const collect = () => {
  globalThis.gc();
  globalThis.gc();
};

const workspace = join(root, "ws");
mkdirSync(workspace, { recursive: true });
const notebook = await openNotebook({
  store: `file:${join(root, "store")}`,
  workspaceRoot: workspace,
  privateRoot: join(root, "private"),
  // Checkpoints this often keep the manifest, which legitimately grows between two of
  // them, from looking like growth, and each commit cheap.
  checkpointPacks: 256,
  probe: false,
});
const ok = (result, what) => {
  if (result.code !== "OK") throw new Error(`${what}: ${JSON.stringify(result)}`);
};
ok(await notebook.pull(), "pull");
for (let f = 0; f < 50; f++) writeFileSync(join(workspace, `note-${f}.md`), `note ${f}\n`);
ok(await notebook.commit("fifty notes"), "seed");
const at = [];
const heap = [];
for (let n = 1; n <= warmUp + measured; n++) {
  appendFileSync(join(workspace, `note-${n % 50}.md`), `line ${n}\n`);
  ok(await notebook.commit(`commit ${n}`), `commit ${n}`);
  if (n >= warmUp && n % every === 0) {
    await notebook.close(); // the housekeeping of the last call has ended
    collect();
    at.push(n);
    heap.push(process.memoryUsage().heapUsed);
  }
}
await notebook.close();
console.log(`RESULT ${JSON.stringify({ at, heap })}`);
