// Profiling driver (not part of the suite): K library writers on one file store for S
// seconds, to run under `node --cpu-prof bench/profile/writers.mjs K S`.
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { instrument } from "../lib/instrumentedStore.mjs";
import { cleanup, expectOk, fileStore, openNotebook, scratch } from "../lib/quire.mjs";
import { quireWriter } from "../lib/writers.mjs";
import { instrumentFs } from "./instrumentedFs.mjs";
import { repoRoot } from "../lib/quire.mjs";

const NodeFs = await import(path.join(repoRoot, "dist/src/adapters/nodeFileSystem.js"));

// FS_STATS=1 also counts and times the file system port's calls (per accepted commit).
const fsStats = process.env.FS_STATS === "1" ? instrumentFs(NodeFs.make()) : null;
const k = Number(process.argv[2] ?? 1);
const seconds = Number(process.argv[3] ?? 10);
const dir = scratch("profile-writers");
try {
  const counted = instrument(await fileStore(path.join(dir, "store")));
  const workspace = path.join(dir, "ws");
  const writers = [];
  for (let w = 0; w < k; w++) {
    const copy = path.join(workspace, `w${w}`);
    mkdirSync(copy, { recursive: true });
    const notebook = await openNotebook({
      store: counted.store,
      workspaceRoot: workspace,
      privateRoot: path.join(dir, "private"),
      probe: false,
      ...(fsStats ? { fileSystem: fsStats.fs } : {}),
    });
    expectOk(await notebook.pull(copy), "pull");
    writers.push({ notebook, copy });
  }
  counted.reset();
  fsStats?.reset();
  const deadline = performance.now() + seconds * 1000;
  const outcomes = await Promise.all(
    writers.map(({ notebook, copy }, w) =>
      quireWriter(copy, w, deadline, (m) => notebook.commit(m, copy)),
    ),
  );
  const accepted = outcomes.reduce((s, o) => s + o.accepted.length, 0);
  console.log(
    JSON.stringify({
      k,
      seconds,
      accepted,
      perSecond: accepted / seconds,
      perWriter: outcomes.map((o) => o.accepted.length),
      busy: outcomes.reduce((s, o) => s + o.busy.length, 0),
      stats: counted.snapshot(),
      ...(fsStats ? { fs: fsStats.report() } : {}),
    }),
  );
} finally {
  // Removing the store is left out of the profile (rimraf would dominate it).
  if (!process.execArgv.some((a) => a.startsWith("--cpu-prof"))) cleanup(dir);
  else console.error(`left ${dir} for inspection; remove it when done`);
}
