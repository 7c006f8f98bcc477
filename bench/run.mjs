#!/usr/bin/env node
// The benchmark suite (issue 6): quire and git on the same work, in the same run.
//
//   node bench/run.mjs [merge] [contended] [fleet] [tree] [roundtrips] [s3] [soak] [--quick] [--no-write] [--no-profile]
//
// No section names = all. `tree` is the cold pull and warm no-op workloads (they
// share the 10,000-file notebook). `s3` runs only with an S3 server's environment
// (`bash scripts/with-s3.sh npm run bench`) and is skipped otherwise. `--quick`
// shortens durations and sizes for development (results are marked partial). For
// every missed goal a section runs a short `node --cpu-prof` of the same work and
// appends the profile summary to its details (`--no-profile` skips that). Requires
// `npm run build` first (`npm run bench` does it). A run of some sections replaces
// only those sections in docs/benchmarks.json and regenerates docs/benchmarks.md.
// `soak` (50,000 commits through real serve processes, about an hour) also runs alone:
// `npm run bench:soak`.
// Scratch directories are set aside and deleted after the last section, never between
// measurements (see `cleanup` in lib/quire.mjs).
import { loadavg } from "node:os";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { machine, readPrevious, fmtSummary, writeDocs } from "./lib/report.mjs";
import { emptyTrash, repoRoot } from "./lib/quire.mjs";

const ORDER = ["merge", "contended", "fleet", "tree", "roundtrips", "s3", "soak"];
const ALIASES = {
  cold: "tree",
  warm: "tree",
  pull: "tree",
  writers: "contended",
  load: "roundtrips",
};

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const write = !args.includes("--no-write");
// Profiles of missed goals are on by default; --no-profile skips them (faster iteration).
const profile = !args.includes("--no-profile");
const named = args.filter((a) => !a.startsWith("--")).map((a) => ALIASES[a] ?? a);
for (const name of named) {
  if (!ORDER.includes(name)) {
    console.error(`unknown benchmark ${JSON.stringify(name)}; choose from ${ORDER.join(", ")}`);
    process.exit(2);
  }
}
const selected = named.length === 0 ? ORDER : ORDER.filter((n) => named.includes(n));

const log = (...parts) =>
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...parts);

const docsDir = path.join(repoRoot, "docs");
const jsonFile = path.join(docsDir, "benchmarks.json");
const previous = readPrevious(jsonFile);
const doc = {
  generatedAt: new Date().toISOString(),
  machine: machine(),
  gitVersion: execFileSync("git", ["--version"]).toString().trim(),
  sections: { ...(previous?.sections ?? {}) },
};

const started = performance.now();
for (const name of selected) {
  log(`== ${name}${quick ? " (quick)" : ""}`);
  const t0 = performance.now();
  const loadBefore = loadavg()[0];
  const module = await import(`./${name}.mjs`);
  const result = await module.run({ quick, log, profile });
  if (result === null) continue; // skipped (s3 without a server): keep the previous numbers
  const durationMs = performance.now() - t0;
  // The 1-minute load average before and after: other work on the machine skews both sides.
  const load = [loadBefore, loadavg()[0]];
  doc.sections[name] = {
    ranAt: new Date().toISOString(),
    durationMs,
    partial: quick,
    load,
    ...result,
  };
  for (const r of result.rows) {
    console.log(
      `${r.workload}: git ${fmtSummary(r.git, r.unit)} | quire ${fmtSummary(r.quire, r.unit)} | ratio ${r.ratio === null ? "—" : r.ratio.toFixed(2)} | goal ${r.goal} | met ${r.met === null ? "—" : r.met ? "yes" : "NO"}`,
    );
  }
  log(`== ${name} took ${(durationMs / 1000).toFixed(1)} s`);
  if (write) await writeDocs(docsDir, doc, ORDER, path.join(repoRoot, "bench/analysis.md"));
}
doc.totalMs = performance.now() - started;
log(`total ${(doc.totalMs / 1000).toFixed(1)} s`);
// Measured work is over: the scratch directories set aside so far can go now.
const deleting = performance.now();
emptyTrash();
log(`deleted the scratch directories in ${((performance.now() - deleting) / 1000).toFixed(1)} s`);
if (write) {
  await writeDocs(docsDir, doc, ORDER, path.join(repoRoot, "bench/analysis.md"));
  log(`wrote docs/benchmarks.md and docs/benchmarks.json`);
}
