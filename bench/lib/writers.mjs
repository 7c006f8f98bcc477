// Contended-writer loops shared by the workloads: each writer appends a line to its own
// file and commits, as fast as it can, until a deadline; the loops record when each
// commit was accepted so throughput can be measured in windows after a warm-up.
import { appendFileSync } from "node:fs";
import * as path from "node:path";
import { git } from "./proc.mjs";
import { quantile, summarize } from "./stats.mjs";

/** A line of ~60 bytes for writer `w`'s `n`-th commit. */
export const lineFor = (w, n) => `writer ${w} commit ${n} ${"x".repeat(40)}\n`;

/**
 * The git equivalent of one writer: append, `git add`, `git commit`, `git push`; on a
 * rejected push `git pull --rebase` and push again. Returns `{ accepted, rejected,
 * latencies }` (accepted = push-success timestamps; rejected = rejected-push timestamps).
 */
export const gitWriter = async (clone, w, deadline) => {
  const file = `w${w}.txt`;
  const accepted = [];
  const rejected = [];
  const latencies = [];
  for (let n = 0; performance.now() < deadline; n++) {
    const start = performance.now();
    appendFileSync(path.join(clone, file), lineFor(w, n));
    await git(clone, ["add", file]);
    await git(clone, ["commit", "-q", "-m", `writer ${w} commit ${n}`]);
    for (;;) {
      const push = await git(clone, ["push", "-q", "origin", "HEAD:main"], { allowFailure: true });
      if (push.code === 0) {
        accepted.push(performance.now());
        latencies.push(performance.now() - start);
        break;
      }
      if (
        !/rejected|fetch first|non-fast-forward|failed to update ref|cannot lock ref/i.test(
          push.stderr,
        )
      ) {
        throw new Error(`git push failed: ${push.stderr}`);
      }
      rejected.push(performance.now());
      if (performance.now() >= deadline) return { accepted, rejected, latencies };
      await git(clone, ["pull", "-q", "--rebase", "origin", "main"]);
    }
  }
  return { accepted, rejected, latencies };
};

/**
 * One quire writer through a `commit(message)` function resolving to the MCP-shaped
 * result (library facade or an MCP client). REMOTE_BUSY counts as not accepted.
 */
export const quireWriter = async (copyDir, w, deadline, commit) => {
  const file = path.join(copyDir, `w${w}.md`);
  const accepted = [];
  const busy = [];
  const latencies = [];
  for (let n = 0; performance.now() < deadline; n++) {
    const start = performance.now();
    appendFileSync(file, lineFor(w, n));
    const result = await commit(`writer ${w} commit ${n}`);
    if (result.code === "OK") {
      accepted.push(performance.now());
      latencies.push(performance.now() - start);
    } else if (result.code === "REMOTE_BUSY") {
      busy.push(performance.now());
    } else {
      throw new Error(
        `writer ${w}: commit ${n}: ${result.code}/${result.reason}: ${result.message}`,
      );
    }
  }
  return { accepted, busy, latencies };
};

const inWindow = (stamps, from, to) => stamps.filter((t) => t >= from && t < to).length;

/**
 * Summarises writer outcomes over the measurement window [from, to): accepted commits
 * per second in `windows` equal sub-windows (median/min/max), per-writer counts,
 * max/min fairness, commit latency quantiles.
 */
export const summarizeWriters = (outcomes, from, to, windows = 5) => {
  const span = (to - from) / windows;
  const rates = [];
  for (let i = 0; i < windows; i++) {
    const a = from + i * span;
    const b = a + span;
    const count = outcomes.reduce((sum, o) => sum + inWindow(o.accepted, a, b), 0);
    rates.push(count / (span / 1000));
  }
  const perWriter = outcomes.map((o) => inWindow(o.accepted, from, to));
  const maxW = Math.max(...perWriter);
  const minW = Math.min(...perWriter);
  const latencies = outcomes.flatMap((o) => o.latencies);
  return {
    commitsPerSecond: summarize(rates),
    acceptedInWindow: perWriter.reduce((a, b) => a + b, 0),
    perWriter,
    maxPerWriter: maxW,
    minPerWriter: minW,
    fairness: minW === 0 ? Infinity : maxW / minW,
    latencyP50: latencies.length ? quantile(latencies, 0.5) : null,
    latencyP99: latencies.length ? quantile(latencies, 0.99) : null,
  };
};
