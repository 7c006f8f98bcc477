// Workload 6 (issue 26): runs for months. Real `quire serve` processes commit back to
// back for tens of thousands of commits, and what a server keeps is sampled every 1,000
// commits: the JS heap after a full garbage collection and RSS (both from the server's
// opt-in memory probe, QUIRE_MEMORY_SAMPLES=1 + SIGUSR2 → a `memory after gc` debug
// record, src/app/memorySamples.ts) and its open file descriptors (/proc/<pid>/fd).
//
//   single: one `serve`, one MCP client committing one line to one of 50 notes.
//   shared: one `serve` that runs the calls of 8 other `serve` processes (the sharing
//           process, app/share), the 8 clients committing concurrently; the sharing
//           process is the one sampled.
//
// Every sample is taken with every writer paused and nothing in flight. Runs alone as
// `npm run bench:soak` (`--quick`: 3,000 commits per side; SOAK_COMMITS overrides).
import { appendFileSync, mkdirSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { cleanup, expectOk, quireBin, scratch } from "./lib/quire.mjs";
import { single } from "./lib/stats.mjs";
import { row } from "./lib/report.mjs";

const EVERY = 1000;
const HEAP_GOAL_MB = 2;
const RSS_GOAL_RATIO = 1.25;
const SHARED_WRITERS = 8;
const NOTES = 50;

const MB = 2 ** 20;

/** Open file descriptors of `pid` (Linux), or null. */
const openFds = (pid) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
};

/**
 * One `quire serve` (a session directory under `tmp`) with an MCP client; `memory()`
 * asks it for a sample and resolves with the record's numbers.
 */
const startServe = async (dir, w) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      quireBin,
      "serve",
      "--store",
      `file:${path.join(dir, "store")}`,
      "--private-root",
      path.join(dir, "private"),
    ],
    env: {
      ...process.env,
      TMPDIR: path.join(dir, "tmp"),
      QUIRE_MEMORY_SAMPLES: "1",
      LOG_LEVEL: "memory=debug,warn",
    },
    stderr: "pipe",
  });
  let tail = "";
  const samples = [];
  const waiting = [];
  transport.stderr?.on("data", (chunk) => {
    const lines = (tail + chunk.toString("utf8")).split("\n");
    tail = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.includes('msg="memory after gc"')) {
        if (/level=(warn|error)/.test(line)) process.stderr.write(`[serve ${w}] ${line}\n`);
        continue;
      }
      const field = (name) => Number(new RegExp(` ${name}=(\\d+)`).exec(line)?.[1]);
      samples.push({
        heap: field("heapUsedBytes"),
        code: field("codeBytes"),
        rss: field("rssBytes"),
      });
      waiting.shift()?.();
    }
  });
  const client = new Client({ name: `soak-${w}`, version: "1.0.0" });
  await client.connect(transport);
  const call = async (name, args) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }))
      .structuredContent;
  const pulled = await call("notes_pull", {});
  expectOk(pulled, `serve ${w}: first pull`);
  const pid = transport.pid;
  const memory = async () => {
    const seen = new Promise((resolve) => waiting.push(resolve));
    process.kill(pid, "SIGUSR2");
    await seen;
    const sample = samples.at(-1);
    return { heap: sample.heap, code: sample.code, rss: sample.rss, fds: openFds(pid) };
  };
  return { notebook: pulled.path, call, client, pid, memory };
};

/** The least-squares slope of `ys` over `xs`. */
const slope = (xs, ys) => {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
};

/**
 * Drives `writers` (each a function committing once, resolving when answered) back to
 * back until `total` commits; every {@link EVERY} commits it pauses them all, waits for
 * every call in flight, and takes `sample()`.
 */
const driveAndSample = async (writers, total, sample, log, label) => {
  const samples = [];
  let done = 0;
  let nextSample = EVERY;
  let paused = null;
  let inFlight = 0;
  let idle = null;
  const t0 = performance.now();
  const takeSample = async () => {
    let resume;
    paused = new Promise((resolve) => (resume = resolve));
    if (inFlight > 0) await new Promise((resolve) => (idle = resolve));
    const at = done;
    const measured = await sample();
    samples.push({ commits: at, ...measured });
    const rate = at / ((performance.now() - t0) / 1000);
    log(
      `${label}: ${at} commits, heap ${(measured.heap / MB).toFixed(2)} MB (code ${(measured.code / MB).toFixed(2)} MB), RSS ${(measured.rss / MB).toFixed(1)} MB, ${measured.fds} fds (${rate.toFixed(1)} commits/s)`,
    );
    while (nextSample <= done) nextSample += EVERY;
    paused = null;
    resume();
  };
  await Promise.all(
    writers.map(async (commitOnce) => {
      for (;;) {
        while (paused !== null) await paused;
        if (done >= total) return;
        inFlight += 1;
        await commitOnce();
        inFlight -= 1;
        done += 1;
        if (paused !== null) {
          if (inFlight === 0) idle?.();
        } else if (done >= nextSample) {
          await takeSample();
        }
      }
    }),
  );
  return { samples, seconds: (performance.now() - t0) / 1000 };
};

/** Heap/RSS/fds at the first sample and the last, and the slopes after the first. */
const analyse = (samples) => {
  const first = samples[0];
  const last = samples.at(-1);
  const xs = samples.map((s) => s.commits / EVERY);
  return {
    first,
    last,
    heapGrowthMb: (last.heap - first.heap) / MB,
    codeGrowthMb: (last.code - first.code) / MB,
    dataGrowthMb: (last.heap - last.code - (first.heap - first.code)) / MB,
    rssRatio: last.rss / first.rss,
    heapSlopeKb:
      slope(
        xs,
        samples.map((s) => s.heap),
      ) / 1024,
    dataSlopeKb:
      slope(
        xs,
        samples.map((s) => s.heap - s.code),
      ) / 1024,
    rssSlopeKb:
      slope(
        xs,
        samples.map((s) => s.rss),
      ) / 1024,
    fdSlope: slope(
      xs,
      samples.map((s) => s.fds ?? 0),
    ),
  };
};

const singleServe = async (total, log) => {
  const dir = scratch("soak-single");
  mkdirSync(path.join(dir, "tmp"));
  let server;
  try {
    server = await startServe(dir, 0);
    for (let f = 0; f < NOTES; f++)
      appendFileSync(path.join(server.notebook, `note-${f}.md`), `note ${f}\n`);
    expectOk(await server.call("notes_commit", { message: "fifty notes" }), "seed");
    let n = 0;
    const commitOnce = async () => {
      n += 1;
      appendFileSync(path.join(server.notebook, `note-${n % NOTES}.md`), `line ${n}\n`);
      expectOk(await server.call("notes_commit", { message: `commit ${n}` }), `commit ${n}`);
    };
    return await driveAndSample([commitOnce], total, server.memory, log, "single serve");
  } finally {
    await server?.client.close().catch(() => undefined);
    cleanup(dir);
  }
};

const sharedServe = async (total, log) => {
  const dir = scratch("soak-shared");
  mkdirSync(path.join(dir, "tmp"));
  const servers = [];
  try {
    // The first serve of the store is the one the others send their calls to.
    const sharing = await startServe(dir, 0);
    servers.push(sharing);
    for (let w = 1; w <= SHARED_WRITERS; w++) servers.push(await startServe(dir, w));
    const writers = servers.slice(1).map((server, i) => {
      let n = 0;
      return async () => {
        n += 1;
        const file = `w${i}-${n % Math.ceil(NOTES / SHARED_WRITERS)}.md`;
        appendFileSync(path.join(server.notebook, file), `line ${n}\n`);
        const result = await server.call("notes_commit", { message: `writer ${i} commit ${n}` });
        expectOk(result, `writer ${i} commit ${n}`);
      };
    });
    return await driveAndSample(writers, total, sharing.memory, log, "sharing serve");
  } finally {
    await Promise.all(servers.map((s) => s.client.close().catch(() => undefined)));
    cleanup(dir);
  }
};

const fmtMb = (bytes) => `${(bytes / MB).toFixed(2)} MB`;

export const run = async ({ quick, log }) => {
  if (process.platform !== "linux") {
    log("soak: needs /proc (Linux); skipped");
    return null;
  }
  const total = Number(process.env.SOAK_COMMITS ?? (quick ? 3_000 : 50_000));
  const sides = [
    ["single serve", "single", await singleServe(total, log)],
    ["sharing serve (8 others)", "shared", await sharedServe(total, log)],
  ];
  const rows = [];
  const details = [
    "## Soak: a long-lived server's memory and descriptors",
    "",
    `Real \`quire serve\` processes on one file store, each in its own session directory, commit back to back for ${total.toLocaleString("en")} commits per side: **single serve** — one server, its MCP client appending one line to one of ${NOTES} notes per commit; **sharing serve** — one server running the calls of ${SHARED_WRITERS} other \`serve\` processes (app/share), their ${SHARED_WRITERS} clients committing concurrently (lines to notes of their own), the sharing one sampled. ` +
      `Every ${EVERY.toLocaleString("en")} commits every writer pauses, the calls in flight end, and the server is sampled: the JS heap used right after a full garbage collection (and the part of it that is compiled code and bytecode, which grows while V8 compiles and optimises more of quire over the first few thousand commits, then stays) and RSS, from the server's own opt-in probe (\`QUIRE_MEMORY_SAMPLES=1\`, then SIGUSR2: a \`memory after gc\` debug record — no \`--inspect\`; [logging.md](logging.md#memory-samples)), and its open file descriptors (\`/proc/<pid>/fd\`). ` +
      `Slopes are least-squares fits over the samples from ${EVERY.toLocaleString("en")} commits on, per ${EVERY.toLocaleString("en")} commits. ` +
      `Goals (issue 26): heap growth from the first sample to the last ≤ ${HEAP_GOAL_MB} MB; RSS at the last ≤ ${RSS_GOAL_RATIO}× RSS at the first; open descriptors equal at both. "Data" is the heap less its code: what the server keeps. The CI check of the same kind is test/app/retainedHeap.test.ts (in-process, on the file store).`,
    "",
    "| side | commits | commits/s | heap at first → last | of which code | data growth | heap slope per 1,000 | data slope per 1,000 | RSS at first → last | RSS slope per 1,000 | fds first → last |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [label, id, result] of sides) {
    const a = analyse(result.samples);
    log(
      `${label}: heap ${fmtMb(a.first.heap)} → ${fmtMb(a.last.heap)} (${a.heapSlopeKb.toFixed(1)} KB per 1,000; code ${fmtMb(a.first.code)} → ${fmtMb(a.last.code)}, data ${a.dataSlopeKb.toFixed(1)} KB per 1,000), RSS ${fmtMb(a.first.rss)} → ${fmtMb(a.last.rss)} (${a.rssSlopeKb.toFixed(0)} KB per 1,000), fds ${a.first.fds} → ${a.last.fds}`,
    );
    const last = a.last.commits.toLocaleString("en");
    const first = a.first.commits.toLocaleString("en");
    rows.push(
      row({
        id: `soak-${id}-heap`,
        workload: `soak, ${label}: heap after GC, growth ${first} → ${last} commits`,
        unit: "MiB",
        quire: single(a.heapGrowthMb),
        goal: `≤ ${HEAP_GOAL_MB} MB`,
        met: a.heapGrowthMb <= HEAP_GOAL_MB,
      }),
      row({
        id: `soak-${id}-data`,
        workload: `soak, ${label}: heap after GC less compiled code, growth ${first} → ${last} commits`,
        unit: "MiB",
        quire: single(a.dataGrowthMb),
      }),
      row({
        id: `soak-${id}-rss`,
        workload: `soak, ${label}: RSS at ${last} / at ${first} commits`,
        unit: "×",
        quire: single(a.rssRatio),
        goal: `≤ ${RSS_GOAL_RATIO}×`,
        met: a.rssRatio <= RSS_GOAL_RATIO,
      }),
      row({
        id: `soak-${id}-fds`,
        workload: `soak, ${label}: open descriptors at ${first} → ${last} commits`,
        unit: "count",
        quire: single(a.last.fds - a.first.fds),
        goal: "equal (difference 0)",
        met: a.first.fds !== null && a.last.fds === a.first.fds,
      }),
    );
    details.push(
      `| ${label} | ${last} | ${(a.last.commits / result.seconds).toFixed(1)} | ${fmtMb(a.first.heap)} → ${fmtMb(a.last.heap)} | ${fmtMb(a.first.code)} → ${fmtMb(a.last.code)} | ${a.dataGrowthMb.toFixed(2)} MB | ${a.heapSlopeKb.toFixed(1)} KB | ${a.dataSlopeKb.toFixed(1)} KB | ${fmtMb(a.first.rss)} → ${fmtMb(a.last.rss)} | ${a.rssSlopeKb.toFixed(0)} KB | ${a.first.fds} → ${a.last.fds} |`,
    );
  }
  details.push("");
  details.push("Samples (every 5,000 commits, and the last):");
  details.push("");
  details.push("| commits | single: heap (code) / RSS / fds | sharing: heap (code) / RSS / fds |");
  details.push("| --- | --- | --- |");
  const pick = (samples) =>
    samples.filter((s, i) => i === samples.length - 1 || i === 0 || s.commits % 5000 < EVERY);
  const [single_, shared_] = sides.map(([, , r]) => pick(r.samples));
  for (let i = 0; i < Math.max(single_.length, shared_.length); i++) {
    const cell = (s) =>
      s === undefined ? "—" : `${fmtMb(s.heap)} (${fmtMb(s.code)}) / ${fmtMb(s.rss)} / ${s.fds}`;
    const commits = single_[i]?.commits ?? shared_[i]?.commits;
    details.push(
      `| ${commits?.toLocaleString("en")} | ${cell(single_[i])} | ${cell(shared_[i])} |`,
    );
  }
  return { rows, details: details.join("\n") };
};
