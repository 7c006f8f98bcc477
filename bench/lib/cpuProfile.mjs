// Summaries of V8 .cpuprofile files (from `node --cpu-prof`), as text and markdown.
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { run } from "./proc.mjs";
import { cleanup, scratch } from "./quire.mjs";
import { originalPosition } from "./sourceMap.mjs";

const shortUrl = (url) =>
  url
    .replace(/^file:\/\//, "")
    .replace(/.*\/(node_modules\/)/, "$1")
    .replace(/.*\/dist\/src\//, "src/")
    .replace(/^\/.*?\/src\//, "src/")
    .replace(/.*\/bench\//, "bench/");

const labelOf = (node) => {
  const f = node.callFrame;
  if (f.url.includes("/dist/src/")) {
    // Name the TypeScript source line rather than the compiled one.
    const original = originalPosition(f.url.replace(/^file:\/\//, ""), f.lineNumber);
    if (original)
      return `${f.functionName || "(anonymous)"} (${shortUrl(original.file)}:${original.line})`;
  }
  const file = f.url ? shortUrl(f.url) : "";
  return `${f.functionName || "(anonymous)"}${file ? ` (${file}:${f.lineNumber + 1})` : ""}`;
};

const moduleOf = (node) => {
  const url = node.callFrame.url;
  if (!url)
    return node.callFrame.functionName.startsWith("(")
      ? node.callFrame.functionName
      : "(native fs/crypto calls)";
  const short = shortUrl(url);
  if (short.startsWith("src/")) return short.replace(/\.js$/, ".ts");
  return short.startsWith("node_modules/")
    ? short.split("/").slice(0, 2).join("/")
    : short.startsWith("node:")
      ? "(node internals)"
      : short;
};

/**
 * Self time per function, per module, and inclusive time of the project's functions
 * (src/). Inclusive time follows synchronous stacks only: an Effect fiber resumes its
 * generator from the runtime, so time after a `yield*` is not attributed to the caller.
 */
export const summarizeProfile = (profile, top = 15) => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  profile.samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map();
  const mod = new Map();
  const inclusive = new Map();
  for (const [id, t] of self) {
    const node = byId.get(id);
    fn.set(labelOf(node), (fn.get(labelOf(node)) ?? 0) + t);
    mod.set(moduleOf(node), (mod.get(moduleOf(node)) ?? 0) + t);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur);
      if (!n.callFrame.url.includes("/dist/src/")) continue;
      const key = labelOf(n);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + t);
    }
  }
  const ranked = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, t]) => ({ name, pct: (100 * t) / total }));
  return {
    totalMs: total / 1000,
    functions: ranked(fn),
    modules: ranked(mod),
    inclusive: ranked(inclusive),
  };
};

/** A markdown rendering of {@link summarizeProfile}. */
export const profileMarkdown = (title, summary, top = 12) => {
  const list = (items) =>
    items
      .slice(0, top)
      .map((i) => `${i.pct.toFixed(1).padStart(5)}%  ${i.name}`)
      .join("\n");
  return [
    `<details><summary>${title} — ${(summary.totalMs / 1000).toFixed(1)} s sampled</summary>`,
    "",
    "Self time by function:",
    "",
    "```text",
    list(summary.functions),
    "```",
    "",
    "Self time by module:",
    "",
    "```text",
    list(summary.modules),
    "```",
    "",
    "Inclusive time of quire functions (synchronous stacks):",
    "",
    "```text",
    list(summary.inclusive),
    "```",
    "",
    "</details>",
  ].join("\n");
};

/**
 * Runs `node --cpu-prof <args>` and summarises the profile it writes. Resolves
 * `{ stdout, stderr, ms, summary }`.
 */
export const profileNode = async (args, options = {}) => {
  const dir = scratch("cpuprof");
  try {
    mkdirSync(dir, { recursive: true });
    // The child's scratch directories (BENCH_TMP) live in ours, so they go with it.
    const env = { ...(options.env ?? process.env), BENCH_TMP: path.join(dir, "tmp") };
    const result = await run(
      process.execPath,
      ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--cpu-prof-interval=500", ...args],
      { ...options, env },
    );
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
    if (!file) throw new Error(`no profile written for ${args.join(" ")}`);
    const summary = summarizeProfile(
      JSON.parse(readFileSync(path.join(dir, file), "utf8")),
      options.top ?? 15,
    );
    return { ...result, summary };
  } finally {
    cleanup(dir);
  }
};
