// Summarises a .cpuprofile: self time per function (top N) and total time per file.
//   node bench/profile/summarize.mjs FILE.cpuprofile [N]
import { readFileSync } from "node:fs";

const profile = JSON.parse(readFileSync(process.argv[2], "utf8"));
const top = Number(process.argv[3] ?? 25);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const label = (n) => {
  const f = n.callFrame;
  const file = f.url
    ? f.url.replace(/^file:\/\//, "").replace(/.*\/(node_modules|dist\/src)\//, "$1/")
    : "";
  return `${f.functionName || "(anonymous)"} ${file}${file ? `:${f.lineNumber + 1}` : ""}`;
};
const fn = new Map();
const files = new Map();
for (const [id, t] of self) {
  const n = byId.get(id);
  const key = label(n);
  fn.set(key, (fn.get(key) ?? 0) + t);
  const url = n.callFrame.url || n.callFrame.functionName;
  const file = url
    .replace(/^file:\/\//, "")
    .replace(/.*\/(node_modules\/[^/]+|dist\/src\/[^:]+)/, "$1");
  files.set(file, (files.get(file) ?? 0) + t);
}
const pct = (t) => ((100 * t) / total).toFixed(1).padStart(5) + "%";
console.log(`total sampled ${(total / 1e6).toFixed(2)} s`);
console.log("-- self time by function");
for (const [k, t] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(pct(t), k);
console.log("-- self time by file/module");
for (const [k, t] of [...files].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(pct(t), k);

// Inclusive time of project functions (synchronous call stacks only: Effect fibers
// resume generators from the runtime, so time after a yield is not attributed).
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map();
for (const [id, t] of self) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur);
    if (!n.callFrame.url.includes("dist/src")) continue;
    const key = label(n);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + t);
  }
}
console.log("-- inclusive time of project functions");
for (const [k, t] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(pct(t), k);
