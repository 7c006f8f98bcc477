// Summarises a .cpuprofile: self time per function and module, inclusive time of
// quire's functions.   node bench/profile/summarize.mjs FILE.cpuprofile [N]
import { readFileSync } from "node:fs";
import { summarizeProfile } from "../lib/cpuProfile.mjs";

const top = Number(process.argv[3] ?? 25);
const summary = summarizeProfile(JSON.parse(readFileSync(process.argv[2], "utf8")), top);
const print = (title, items) => {
  console.log(`-- ${title}`);
  for (const i of items) console.log(`${i.pct.toFixed(1).padStart(5)}% ${i.name}`);
};
console.log(`total sampled ${(summary.totalMs / 1000).toFixed(2)} s`);
print("self time by function", summary.functions);
print("self time by module", summary.modules);
print("inclusive time of quire functions (synchronous stacks)", summary.inclusive);
