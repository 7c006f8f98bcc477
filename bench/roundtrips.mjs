// Workload 5: store round trips with 20 ms of latency added to every store request
// (a wrapping store over the in-memory store): sequential round trips per commit and
// per warm pull, then 100 simulated agents each committing 1 kB once a second for 60 s.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { instrument } from "./lib/instrumentedStore.mjs";
import { cleanup, expectOk, MemoryObjectStore, openNotebook, scratch } from "./lib/quire.mjs";
import { quantile, repeat, single, summarize } from "./lib/stats.mjs";
import { fmt, row } from "./lib/report.mjs";

const LATENCY_MS = 20;
const COMMIT_ROUNDS_GOAL = 3;
const PULL_ROUNDS_GOAL = 2;
const KB = "k".repeat(1023) + "\n";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Sequential round trips of single operations, nobody else writing. */
const sequential = async (dir, log) => {
  const counted = instrument(MemoryObjectStore.make(), { latencyMs: LATENCY_MS });
  const workspace = path.join(dir, "seq");
  const [a, b] = ["a", "b"].map((name) => path.join(workspace, name));
  for (const copy of [a, b]) mkdirSync(copy, { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(path.join(a, `note-${i}.md`), `note ${i}\n`);
  const notebook = await openNotebook({
    store: counted.store,
    workspaceRoot: workspace,
    privateRoot: path.join(dir, "seq-private"),
  });
  expectOk(await notebook.pull(a), "pull a");
  expectOk(await notebook.commit("seed", a), "seed a");
  expectOk(await notebook.pull(b), "pull b");
  // Each sample is the number of rounds one call needed (its wall time is kept too).
  const measure = async (fn) => {
    const walls = [];
    const requests = [];
    const rounds = await repeat(
      async (i) => {
        await fn.before?.(i);
        counted.reset();
        const start = performance.now();
        expectOk(await fn.call(i), "measured call");
        if (i >= 0) {
          walls.push(performance.now() - start);
          requests.push(counted.stats.requests);
        }
        return counted.stats.rounds;
      },
      { warmup: 1, runs: 7 },
    );
    return {
      rounds,
      wall: summarize(walls),
      requests: summarize(requests),
      byOp: { ...counted.stats.byOp },
    };
  };
  const commit = await measure({
    before: (i) => appendFileSync(path.join(a, "note-1.md"), `line ${i}\n`),
    call: (i) => notebook.commit(`change ${i}`, a),
  });
  const noopPull = await measure({ call: () => notebook.pull(a) });
  const pullOne = await measure({
    before: async (i) => {
      appendFileSync(path.join(b, "note-2.md"), `from b ${i}\n`);
      expectOk(await notebook.commit(`b ${i}`, b), "b commit");
    },
    call: () => notebook.pull(a),
  });
  log(
    `rounds: commit ${commit.rounds.median}, no-op pull ${noopPull.rounds.median}, pull of one commit ${pullOne.rounds.median}`,
  );
  return { commit, noopPull, pullOne };
};

/** `agents` copies, each committing 1 kB to its own file once a second for `seconds`. */
const load = async (dir, agents, seconds, log) => {
  const counted = instrument(MemoryObjectStore.make(), { latencyMs: LATENCY_MS });
  const workspace = path.join(dir, "load");
  const notebook = await openNotebook({
    store: counted.store,
    workspaceRoot: workspace,
    privateRoot: path.join(dir, "load-private"),
  });
  const copies = [];
  for (let i = 0; i < agents; i++) {
    const copy = path.join(workspace, `agent-${i}`);
    mkdirSync(copy, { recursive: true });
    expectOk(await notebook.pull(copy), "agent pull");
    copies.push(copy);
  }
  counted.reset();
  const latencies = [];
  let busy = 0;
  let late = 0;
  let started = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const agent = async (i) => {
    // Agents start at evenly spread phases within the first second.
    let tick = t0 + (i * 1000) / agents;
    for (let n = 0; tick < end && performance.now() < end; n++, tick += 1000) {
      const wait = tick - performance.now();
      if (wait > 0) await sleep(wait);
      else late++;
      started++;
      appendFileSync(path.join(copies[i], `agent-${i}.md`), KB);
      const start = performance.now();
      const result = await notebook.commit(`agent ${i} tick ${n}`, copies[i]);
      if (result.code === "OK") latencies.push(performance.now() - start);
      else if (result.code === "REMOTE_BUSY") busy++;
      else throw new Error(`agent ${i}: ${result.code}/${result.reason}: ${result.message}`);
    }
  };
  await Promise.all(copies.map((_, i) => agent(i)));
  const elapsed = performance.now() - t0;
  const stats = counted.stats;
  const accepted = latencies.length;
  const result = {
    agents,
    seconds,
    offered: agents * seconds,
    started,
    accepted,
    busy,
    late,
    elapsedMs: elapsed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: Math.max(...latencies),
    casAttempts: stats.currentPuts,
    casPerAccepted: accepted === 0 ? null : stats.currentPuts / accepted,
    requests: stats.requests,
    byOp: stats.byOp,
  };
  log(
    `load: ${accepted}/${result.offered} accepted, busy ${busy}, p50 ${result.p50?.toFixed(0)} ms, p99 ${result.p99?.toFixed(0)} ms, CAS/accepted ${result.casPerAccepted?.toFixed(2)}`,
  );
  return result;
};

export const run = async ({ quick, log }) => {
  const dir = scratch("roundtrips");
  const agents = quick ? 20 : 100;
  const seconds = quick ? 10 : 60;
  try {
    const seq = await sequential(dir, log);
    const heavy = await load(dir, agents, seconds, log);
    const rows = [
      row({
        id: "rt-commit",
        workload: `store round trips per one-file commit (${LATENCY_MS} ms/request)`,
        unit: "round trips",
        quire: seq.commit.rounds,
        goal: `≤ ${COMMIT_ROUNDS_GOAL}`,
        met: seq.commit.rounds.median <= COMMIT_ROUNDS_GOAL,
      }),
      row({
        id: "rt-pull-noop",
        workload: "store round trips per warm pull (nothing new)",
        unit: "round trips",
        quire: seq.noopPull.rounds,
        goal: `≤ ${PULL_ROUNDS_GOAL}`,
        met: seq.noopPull.rounds.median <= PULL_ROUNDS_GOAL,
      }),
      row({
        id: "rt-pull-one",
        workload: "store round trips per warm pull (one new commit)",
        unit: "round trips",
        quire: seq.pullOne.rounds,
        goal: `≤ ${PULL_ROUNDS_GOAL}`,
        met: seq.pullOne.rounds.median <= PULL_ROUNDS_GOAL,
      }),
      row({
        id: "load-p50",
        workload: `${agents} agents × 1 kB/s × ${seconds} s: commit latency p50`,
        unit: "ms",
        quire: single(heavy.p50),
        goal: "—",
      }),
      row({
        id: "load-p99",
        workload: `${agents} agents × 1 kB/s × ${seconds} s: commit latency p99`,
        unit: "ms",
        quire: single(heavy.p99),
        goal: "—",
      }),
      row({
        id: "load-cas",
        workload: `${agents} agents × 1 kB/s × ${seconds} s: CAS attempts per accepted commit`,
        unit: "ratio",
        quire: single(heavy.casPerAccepted),
        goal: "—",
      }),
    ];
    const ops = (byOp) =>
      Object.entries(byOp)
        .map(([op, n]) => `${op}: ${n}`)
        .join(", ");
    const details = [
      "## Store round trips",
      "",
      `A wrapping store (\`bench/lib/instrumentedStore.mjs\`) over the in-memory store adds ${LATENCY_MS} ms before every request and counts requests; a request that starts while none of the store's requests is in flight opens a new sequential round trip (requests issued in parallel share one). One long-lived process, working copies and private state on local disk; warm-up + 7 runs each.`,
      "",
      "| operation | sequential round trips | requests | wall time | requests of the last run |",
      "| --- | --- | --- | --- | --- |",
      ...[
        ["one-file commit", seq.commit],
        ["warm pull, nothing new", seq.noopPull],
        ["warm pull, one new commit", seq.pullOne],
      ].map(
        ([name, m]) =>
          `| ${name} | ${fmt(m.rounds.median, "round trips")} (${fmt(m.rounds.min, "round trips")}–${fmt(m.rounds.max, "round trips")}) | ${fmt(m.requests.median, "round trips")} | ${fmt(m.wall.median, "ms")} | ${ops(m.byOp)} |`,
      ),
      "",
      `Load: ${agents} agents (one working copy and file each, one process) each append 1 kB to their own file and commit once a second (evenly spread phases; a tick that is due while the previous commit is still running starts right after it) for ${seconds} s; no new commit starts after ${seconds} s, so an agent that falls behind simply offers fewer; ${LATENCY_MS} ms per store request.`,
      "",
      "| offered commits | started | accepted | REMOTE_BUSY | ticks started late | wall time | accepted/s | latency p50 / p99 / max | CAS attempts / accepted | store requests |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      `| ${heavy.offered} | ${heavy.started} | ${heavy.accepted} | ${heavy.busy} | ${heavy.late} | ${fmt(heavy.elapsedMs, "ms")} | ${(heavy.accepted / (heavy.elapsedMs / 1000)).toFixed(1)} | ${fmt(heavy.p50, "ms")} / ${fmt(heavy.p99, "ms")} / ${fmt(heavy.max, "ms")} | ${heavy.casPerAccepted?.toFixed(2) ?? "—"} | ${heavy.requests} (${ops(heavy.byOp)}) |`,
    ];
    return { rows, details: details.join("\n"), data: { sequential: seq, load: heavy } };
  } finally {
    cleanup(dir);
  }
};
