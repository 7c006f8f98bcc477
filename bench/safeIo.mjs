#!/usr/bin/env node
// What the race-safe working-copy I/O costs (SPEC §4.1): the cold pull of the tree
// workload's 10,000-file notebook into an empty directory and a warm no-op pull of it,
// through the library, for this build and another one (the code before the change), in
// the same run, alternating, each in a fresh Node process.
//
//   node bench/safeIo.mjs OTHER_REPO [ROUNDS] [--handles-too]
//
// OTHER_REPO is a built checkout (`npm run build`) of the code to compare with, e.g.
// `git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)`.
// `--handles-too` also measures this build with directory handles turned off (checked
// paths, the fallback of hosts without /proc/self/fd). Prints one JSON line per
// measurement and a summary (medians and spreads) at the end. Scratch directories are
// set aside and deleted at the end, never between measurements (see lib/quire.mjs).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const thisRepo = path.resolve(here, "..");
const [otherRepo, roundsArg] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const handlesToo = process.argv.includes("--handles-too");
if (otherRepo === undefined) {
  console.error("usage: node bench/safeIo.mjs OTHER_REPO [ROUNDS] [--handles-too]");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 5);
const base = mkdtempSync(path.join(tmpdir(), "quire-safeio-"));
const trash = path.join(base, "trash");
mkdirSync(trash);
let trashed = 0;
const setAside = (dir) => renameSync(dir, path.join(trash, String(trashed++)));

// The notebook, seeded once with this build (the store format is the same for both).
execFileSync(process.execPath, [path.join(here, "profile", "seedTree.mjs"), base], {
  stdio: ["ignore", "ignore", "inherit"],
});

// One measurement in a fresh process: a cold pull, then `warm` no-op pulls.
const child = `
const [repo, base, target, priv, handles] = process.argv.slice(1);
const { openNotebook } = await import(repo + "/dist/src/index.js");
const NodeFs = await import(repo + "/dist/src/adapters/nodeFileSystem.js");
const fileSystem = NodeFs.make(handles === "off" ? { directoryHandles: false } : {});
const notebook = await openNotebook({
  store: "file:" + base + "/store",
  workspaceRoot: base + "/ws",
  privateRoot: priv,
  probe: false,
  fileSystem,
});
const ok = (r) => { if (r.code !== "OK") throw new Error(JSON.stringify(r)); return r; };
let t = performance.now();
ok(await notebook.pull(target));
const cold = performance.now() - t;
const warm = [];
for (let i = 0; i < 7; i++) { t = performance.now(); ok(await notebook.pull(target)); warm.push(performance.now() - t); }
warm.sort((a, b) => a - b);
await notebook.close();
console.log(JSON.stringify({ cold, warm: warm[3] }));
`;

const builds = [
  { name: "before", repo: path.resolve(otherRepo), handles: "on" },
  { name: "after", repo: thisRepo, handles: "on" },
  ...(handlesToo ? [{ name: "after, checked paths", repo: thisRepo, handles: "off" }] : []),
];
const results = new Map(builds.map((b) => [b.name, { cold: [], warm: [] }]));
let n = 0;
for (let round = 0; round < rounds; round++) {
  // Alternate the order so neither build always goes first.
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const build of order) {
    const target = path.join(base, "ws", `copy-${n}`);
    const priv = path.join(base, `private-${n++}`);
    mkdirSync(target, { recursive: true });
    const out = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", child, build.repo, base, target, priv, build.handles],
      { encoding: "utf8" },
    );
    const measured = JSON.parse(out.trim().split("\n").pop());
    results.get(build.name).cold.push(measured.cold);
    results.get(build.name).warm.push(measured.warm);
    console.log(JSON.stringify({ build: build.name, round, ...measured }));
    setAside(target);
    setAside(priv);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) =>
  `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
console.log("\n| build | cold pull, 10,000 files | warm no-op pull |");
console.log("| --- | --- | --- |");
for (const [name, r] of results) console.log(`| ${name} | ${fmt(r.cold)} | ${fmt(r.warm)} |`);
const before = results.get("before");
const after = results.get("after");
console.log(
  `\nafter/before medians: cold ${(median(after.cold) / median(before.cold)).toFixed(2)}, warm ${(median(after.warm) / median(before.warm)).toFixed(2)}`,
);
rmSync(base, { recursive: true, force: true });
