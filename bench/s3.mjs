// Optional: the S3 adapter against a real S3-compatible server (the shared Ceph RGW),
// when its environment is present — run `bash scripts/with-s3.sh npm run bench -- s3`.
// Reports sequential round trips and wall time of a one-file commit and a warm pull,
// and 1 / 8 contended library writers. No added latency: the server's own.
import { mkdirSync, appendFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Context, Effect, Exit, Layer, Scope } from "effect";
import { instrument } from "./lib/instrumentedStore.mjs";
import { cleanup, expectOk, openNotebook, repoRoot, scratch } from "./lib/quire.mjs";
import { repeat, summarize } from "./lib/stats.mjs";
import { fmt, fmtSummary, row } from "./lib/report.mjs";
import { quireWriter, summarizeWriters } from "./lib/writers.mjs";

const S3 = await import(path.join(repoRoot, "dist/src/adapters/s3ObjectStore.js"));
const { ObjectStore } = await import(path.join(repoRoot, "dist/src/ports/ObjectStore.js"));

/** The S3 environment, or null when it is not set. */
const s3Env = () => {
  const endpoint = process.env.AWS_ENDPOINT_URL_S3;
  const bucket = process.env.S3_BUCKET;
  if (!endpoint || !bucket || !process.env.AWS_ACCESS_KEY_ID) return null;
  return { endpoint, bucket, region: process.env.AWS_REGION || "us-east-1" };
};

/** Opens the S3 store under a fresh prefix; `close()` releases its client. */
const openS3 = async (env, label) => {
  const scope = await Effect.runPromise(Scope.make());
  const options = {
    bucket: env.bucket,
    prefix: `quire-bench/${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    endpoint: env.endpoint,
    region: env.region,
    forcePathStyle: true,
  };
  const context = await Effect.runPromise(Layer.buildWithScope(S3.layer(options), scope));
  return {
    store: Context.get(context, ObjectStore),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void)),
  };
};

export const run = async ({ quick, log }) => {
  const env = s3Env();
  if (env === null) {
    log(
      "no S3 environment (AWS_ENDPOINT_URL_S3, S3_BUCKET, AWS_ACCESS_KEY_ID): skipped; run `bash scripts/with-s3.sh npm run bench -- s3`",
    );
    return null;
  }
  const dir = scratch("s3");
  const closers = [];
  try {
    // Round trips and wall time of single operations.
    const s3 = await openS3(env, "seq");
    closers.push(s3.close);
    const counted = instrument(s3.store);
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
    expectOk(await notebook.commit("seed", a), "seed");
    expectOk(await notebook.pull(b), "pull b");
    const measure = async (before, call) => {
      const walls = [];
      const rounds = await repeat(
        async (i) => {
          await before?.(i);
          counted.reset();
          const start = performance.now();
          expectOk(await call(i), "measured call");
          if (i >= 0) walls.push(performance.now() - start);
          return counted.stats.rounds;
        },
        { warmup: 1, runs: 7 },
      );
      return { rounds, wall: summarize(walls) };
    };
    const commit = await measure(
      (i) => appendFileSync(path.join(a, "note-1.md"), `line ${i}\n`),
      (i) => notebook.commit(`change ${i}`, a),
    );
    const noopPull = await measure(undefined, () => notebook.pull(a));
    const pullOne = await measure(
      async (i) => {
        appendFileSync(path.join(b, "note-2.md"), `from b ${i}\n`);
        expectOk(await notebook.commit(`b ${i}`, b), "b commit");
      },
      () => notebook.pull(a),
    );
    log(
      `s3: commit ${fmtSummary(commit.wall, "ms")} (${commit.rounds.median} rounds), no-op pull ${fmtSummary(noopPull.wall, "ms")}`,
    );

    // Contended library writers.
    const writers = [];
    for (const k of quick ? [1, 4] : [1, 8]) {
      const w = await openS3(env, `writers-${k}`);
      closers.push(w.close);
      const c = instrument(w.store);
      const ws = path.join(dir, `writers-${k}`);
      const copies = [];
      for (let i = 0; i < k; i++) {
        const copy = path.join(ws, `w${i}`);
        mkdirSync(copy, { recursive: true });
        const nb = await openNotebook({
          store: c.store,
          workspaceRoot: ws,
          privateRoot: path.join(dir, `writers-${k}-private`),
          probe: i === 0,
        });
        expectOk(await nb.pull(copy), "writer pull");
        copies.push({ nb, copy });
      }
      c.reset();
      const warmupMs = quick ? 1000 : 2000;
      const measureMs = quick ? 4000 : 8000;
      const t0 = performance.now();
      const to = t0 + warmupMs + measureMs;
      const outcomes = await Promise.all(
        copies.map(({ nb, copy }, i) => quireWriter(copy, i, to, (m) => nb.commit(m, copy))),
      );
      const summary = summarizeWriters(outcomes, t0 + warmupMs, to);
      const accepted = outcomes.reduce((s, o) => s + o.accepted.length, 0);
      writers.push({
        k,
        ...summary,
        attemptsPerAccepted: accepted ? c.stats.currentPuts / accepted : null,
        busy: outcomes.reduce((s, o) => s + o.busy.length, 0),
      });
      log(`s3: K=${k} ${summary.commitsPerSecond.median.toFixed(1)} commits/s`);
    }

    const rows = [
      row({
        id: "s3-rt-commit",
        workload: "S3 (RGW): store round trips per one-file commit",
        unit: "round trips",
        quire: commit.rounds,
        goal: "≤ 3",
        met: commit.rounds.median <= 3,
      }),
      row({
        id: "s3-rt-pull-one",
        workload: "S3 (RGW): store round trips per warm pull (one new commit)",
        unit: "round trips",
        quire: pullOne.rounds,
        goal: "≤ 2",
        met: pullOne.rounds.median <= 2,
      }),
      ...writers.map((w) =>
        row({
          id: `s3-writers-${w.k}`,
          workload: `S3 (RGW): ${w.k} library writer${w.k > 1 ? "s" : ""}, accepted commits/s`,
          unit: "commits/s",
          quire: w.commitsPerSecond,
          goal: "— (git: see contended writers)",
        }),
      ),
    ];
    const details = [
      "## S3 adapter (Ceph RGW on loopback)",
      "",
      "The same operations through `src/adapters/s3ObjectStore.ts` against the shared Ceph RADOS Gateway (`scripts/with-s3.sh`), wrapped only to count requests (no added latency). Informational: the goals are stated for the file store.",
      "",
      "| operation | sequential round trips | wall time |",
      "| --- | --- | --- |",
      `| one-file commit | ${fmtSummary(commit.rounds, "round trips")} | ${fmtSummary(commit.wall, "ms")} |`,
      `| warm pull, nothing new | ${fmtSummary(noopPull.rounds, "round trips")} | ${fmtSummary(noopPull.wall, "ms")} |`,
      `| warm pull, one new commit | ${fmtSummary(pullOne.rounds, "round trips")} | ${fmtSummary(pullOne.wall, "ms")} |`,
      "",
      "| K | commits/s | per writer max / min | CAS attempts / accepted | busy | commit latency p50 / p99 |",
      "| --- | --- | --- | --- | --- | --- |",
      ...writers.map(
        (w) =>
          `| ${w.k} | ${fmtSummary(w.commitsPerSecond, "commits/s")} | ${w.maxPerWriter} / ${w.minPerWriter} | ${w.attemptsPerAccepted?.toFixed(2) ?? "—"} | ${w.busy} | ${fmt(w.latencyP50, "ms")} / ${fmt(w.latencyP99, "ms")} |`,
      ),
    ];
    return { rows, details: details.join("\n"), data: { commit, noopPull, pullOne, writers } };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    cleanup(dir);
  }
};
