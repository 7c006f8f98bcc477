// Profiling driver: one library pull of the seeded notebook (bench/profile/seedTree.mjs)
// into an empty directory, with per-call counts and timings of the file system and store.
//   [PROFILE_DIR=dir] [REUSE=1] node bench/profile/coldPull.mjs DIR [noop|commit1]
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import * as inspector from "node:inspector";
import * as path from "node:path";
import { instrument } from "../lib/instrumentedStore.mjs";
import { cleanup, expectOk, fileStore, openNotebook, repoRoot } from "../lib/quire.mjs";
import { instrumentFs } from "./instrumentedFs.mjs";

const NodeFs = await import(path.join(repoRoot, "dist/src/adapters/nodeFileSystem.js"));
const dir = path.resolve(process.argv[2]);
const then = process.argv[3];
const workspace = path.join(dir, "ws");
const target = path.join(workspace, "profiled");
const privateRoot = path.join(dir, "private-profiled");
// REUSE=1 keeps an already pulled copy (to profile only the warm calls with --cpu-prof).
const reuse = process.env.REUSE === "1" && existsSync(privateRoot);
if (!reuse) {
  // Set aside, not deleted: a deletion just before would make the pull pay for it.
  cleanup(target);
  cleanup(privateRoot);
  mkdirSync(target);
}
const counted = instrument(await fileStore(path.join(dir, "store")));
const fsi = instrumentFs(NodeFs.make());
const notebook = await openNotebook({
  store: counted.store,
  fileSystem: fsi.fs,
  workspaceRoot: workspace,
  privateRoot,
  probe: false,
});
// With PROFILE_DIR set, each measured call is CPU-profiled into PROFILE_DIR/<n>-<label>.cpuprofile.
const profileDir = process.env.PROFILE_DIR;
const session = profileDir ? new inspector.Session() : null;
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
  );
if (session) {
  session.connect();
  await post("Profiler.enable");
  await post("Profiler.setSamplingInterval", { interval: 200 });
  mkdirSync(profileDir, { recursive: true });
}
let serial = 0;
const measure = async (label, fn) => {
  fsi.reset();
  counted.reset();
  if (session) await post("Profiler.start");
  const t = performance.now();
  const result = expectOk(await fn(), label);
  if (session) {
    const { profile } = await post("Profiler.stop");
    writeFileSync(
      path.join(profileDir, `${serial++}-${label.replace(/ /g, "-")}.cpuprofile`),
      JSON.stringify(profile),
    );
  }
  console.log(
    JSON.stringify(
      {
        label,
        ms: Math.round(performance.now() - t),
        files: result.files.length,
        fs: fsi.report(),
        store: counted.snapshot(),
      },
      null,
      1,
    ),
  );
};
if (!reuse) await measure("cold pull", () => notebook.pull(target));
if (then === "noop" || then === "commit1") {
  await measure("noop pull", () => notebook.pull(target));
  await measure("noop pull 2", () => notebook.pull(target));
  await measure("noop commit", () => notebook.commit("nothing", target));
}
if (then === "commit1") {
  for (let i = 0; i < 3; i++) {
    appendFileSync(path.join(target, "d07", "f042.md"), `line ${i}\n`);
    await measure("one-file commit", () => notebook.commit(`one ${i}`, target));
  }
}
