// Workloads 3 and 4 on one 10,000-file notebook (100 directories × 100 files, ~4 KB
// each): a cold pull into an empty directory (quire CLI process) against
// `git clone --no-local`, with peak RSS; then, on that working copy, no-op pull, no-op
// commit and a one-file commit (in process, as `quire serve` runs them) against
// `git status --porcelain`.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { makeRng, words } from "./lib/rng.mjs";
import { git, gitEnv, hasGnuTime, run as runProcess } from "./lib/proc.mjs";
import {
  cleanup,
  expectOk,
  fileStore,
  openNotebook,
  quireBin,
  quireUnbundled,
  repoRoot,
  scratch,
} from "./lib/quire.mjs";
import { repeat, summarize } from "./lib/stats.mjs";
import { fmt, fmtSummary, row } from "./lib/report.mjs";
import { profileMarkdown, profileNode } from "./lib/cpuProfile.mjs";

const COLD_GOAL = 0.5;
const RSS_FIXED_MB = 150;
const RSS_FACTOR = 3;
const NOOP_GOAL = 3;
const ONE_FILE_GOAL = 5;

/** Writes the notebook's files into each of `roots`; returns `{ files, bytes }`. */
const writeTree = (roots, dirs, filesPerDir, seed) => {
  const rng = makeRng(seed);
  let bytes = 0;
  for (let d = 0; d < dirs; d++) {
    const dir = `d${String(d).padStart(2, "0")}`;
    for (const root of roots) mkdirSync(path.join(root, dir), { recursive: true });
    for (let f = 0; f < filesPerDir; f++) {
      let text = `# note ${d}/${f}\n\n`;
      while (text.length < 4000) text += words(rng, 60) + "\n";
      const name = path.join(dir, `f${String(f).padStart(3, "0")}.md`);
      for (const root of roots) writeFileSync(path.join(root, name), text);
      bytes += Buffer.byteLength(text);
    }
  }
  return { files: dirs * filesPerDir, bytes };
};

export const run = async ({ quick, log, profile = true }) => {
  const dirs = quick ? 20 : 100;
  const filesPerDir = 100;
  const runs = 5;
  const dir = scratch("tree");
  const rows = [];
  const details = ["## Cold pull and warm no-op", ""];
  const data = {};
  try {
    const workspace = path.join(dir, "ws");
    const source = path.join(workspace, "source");
    const gitSource = path.join(dir, "git-source");
    // Both sides' cold copies go into this one directory (quire's private state stays
    // outside it). The file system places a new directory's files near its parent: with
    // quire's copies beside the 10,000-file source in `ws` and git's in `dir`, quire's
    // pulls paid up to 4× git's kernel time for creating the same files (the same pull
    // placed beside git's clones did not).
    const copies = path.join(dir, "copies");
    mkdirSync(copies);
    mkdirSync(source, { recursive: true });
    log(`writing ${dirs * filesPerDir} files twice`);
    const tree = writeTree([source, gitSource], dirs, filesPerDir, 7);
    const notebookMb = tree.bytes / 2 ** 20;
    data.tree = tree;

    log("git: init + commit the tree");
    await git(dir, ["init", "-q", "-b", "main", gitSource]);
    await git(gitSource, ["add", "-A"]);
    const gitCommitStart = performance.now();
    // gc.auto=0: `git commit` would otherwise start a background `gc --auto` (10,000
    // loose objects), which raced with the first clones. The repository is packed
    // explicitly instead, as a shared repository's server keeps it with `gc`.
    await git(gitSource, ["-c", "gc.auto=0", "commit", "-q", "-m", "initial"]);
    data.gitInitialCommitMs = performance.now() - gitCommitStart;
    const gcStart = performance.now();
    await git(gitSource, ["gc", "-q"]);
    data.gitGcMs = performance.now() - gcStart;
    // The same commit with its objects left loose, as right after `git commit` and before
    // any gc: the reference clone (5.05 s) matches cloning such a repository, so
    // it is measured too, as information beside the goal's (packed) baseline.
    const gitLoose = path.join(dir, "git-loose.git");
    await git(dir, ["init", "-q", "--bare", gitLoose]);
    const looseArgs = ["--git-dir", gitLoose, "--work-tree", gitSource, "-c", "gc.auto=0"];
    await git(dir, [...looseArgs, "add", "-A"]);
    await git(dir, [...looseArgs, "commit", "-q", "-m", "initial"]);

    log("quire: pull + commit the tree (creates the first checkpoint)");
    const storeDir = path.join(dir, "store");
    // The CLI pull of `target` on the notebook's store (argv after `node`).
    const cliPull = (entry, target, privateRoot) => [
      entry,
      "pull",
      target,
      "--store",
      `file:${storeDir}`,
      "--workspace-root",
      copies,
      "--private-root",
      privateRoot,
    ];
    const store = await fileStore(storeDir);
    const seeding = await openNotebook({
      store,
      workspaceRoot: workspace,
      privateRoot: path.join(dir, "private-seed"),
    });
    expectOk(await seeding.pull(source), "seed pull");
    const seedStart = performance.now();
    expectOk(await seeding.commit("initial", source), "seed commit");
    data.quireInitialCommitMs = performance.now() - seedStart;

    // Cold pull: whole processes, fresh target and (for quire) fresh private state each run.
    let serial = 0;
    const gitRss = [];
    const gitClone = async (from = gitSource) => {
      const target = path.join(copies, `git-clone-${serial++}`);
      const result = await runProcess("git", ["clone", "-q", "--no-local", from, target], {
        env: gitEnv,
        measureRss: true,
      });
      if (result.maxRssKb !== null && from === gitSource) gitRss.push(result.maxRssKb / 1024);
      return { ms: result.ms, target };
    };
    const quireRss = [];
    const quirePull = async () => {
      const n = serial++;
      const target = path.join(copies, `cold-${n}`);
      const privateRoot = path.join(dir, `private-cold-${n}`);
      mkdirSync(target);
      const result = await runProcess(process.execPath, cliPull(quireBin, target, privateRoot), {
        measureRss: true,
      });
      if (result.maxRssKb !== null) quireRss.push(result.maxRssKb / 1024);
      return { ms: result.ms, target, privateRoot };
    };
    // Information beside the goal: cloning the unpacked repository (see gitLoose), before
    // the interleaved runs.
    const looseSamples = [];
    let lastLoose;
    for (let i = -1; i < runs; i++) {
      if (lastLoose) cleanup(lastLoose.target);
      execFileSync("sync");
      lastLoose = await gitClone(gitLoose);
      if (i >= 0) looseSamples.push(lastLoose.ms);
    }
    cleanup(lastLoose.target);
    const coldGitLoose = summarize(looseSamples);
    log(`cold: git clone of the unpacked repository ${fmtSummary(coldGitLoose, "ms")}`);

    // Interleaved, with the page cache flushed before every run: both sides then see the
    // same states of the disk, and neither pays for the other's (or the seeding's)
    // writeback. In separate blocks the first block ran while the seed's 80 MB were
    // still being written back.
    let lastGit;
    let lastQuire;
    const coldGitSamples = [];
    const coldQuireSamples = [];
    // An even number of measured runs: each order is measured equally often.
    const coldRuns = runs + (runs % 2);
    for (let i = -1; i < coldRuns; i++) {
      if (lastGit) cleanup(lastGit.target);
      if (lastQuire) {
        cleanup(lastQuire.target);
        cleanup(lastQuire.privateRoot);
      }
      // Which side runs first alternates too. When the previous copies were deleted
      // here, the first process after the deletion paid for it (cleanup in
      // lib/quire.mjs); they are now only set aside, and the order still alternates so
      // that whatever else favours one position favours both tools equally.
      for (const side of i % 2 === 0 ? ["git", "quire"] : ["quire", "git"]) {
        execFileSync("sync");
        if (side === "git") lastGit = await gitClone();
        else lastQuire = await quirePull();
      }
      if (i < 0) {
        gitRss.length = 0;
        quireRss.length = 0;
        continue;
      }
      coldGitSamples.push(lastGit.ms);
      coldQuireSamples.push(lastQuire.ms);
    }
    const coldGit = summarize(coldGitSamples);
    const coldQuire = summarize(coldQuireSamples);
    log(`cold: git clone ${fmtSummary(coldGit, "ms")}`);
    log(`cold: quire pull ${fmtSummary(coldQuire, "ms")}`);
    const coldRatio = coldQuire.median / coldGit.median;
    rows.push(
      row({
        id: "cold-pull",
        workload: `cold pull of ${tree.files.toLocaleString("en-US")} files (${notebookMb.toFixed(0)} MB)`,
        unit: "ms",
        git: coldGit,
        quire: coldQuire,
        goal: `≤ ${COLD_GOAL}× git clone`,
        met: coldRatio <= COLD_GOAL,
      }),
    );
    rows.push(
      row({
        id: "cold-pull-unpacked-git",
        workload: "cold pull vs clone of the commit unpacked (information)",
        unit: "ms",
        git: coldGitLoose,
        quire: coldQuire,
      }),
    );
    const rssLimit = RSS_FACTOR * notebookMb + RSS_FIXED_MB;
    if (hasGnuTime && quireRss.length > 0) {
      const rss = summarize(quireRss);
      rows.push(
        row({
          id: "cold-pull-rss",
          workload: "cold pull peak RSS",
          unit: "MB",
          git: gitRss.length ? summarize(gitRss) : null,
          quire: rss,
          ratio: null,
          goal: `≤ ${RSS_FACTOR} × ${notebookMb.toFixed(0)} MB + ${RSS_FIXED_MB} MB = ${rssLimit.toFixed(0)} MB`,
          met: rss.max <= rssLimit,
        }),
      );
    }

    // Warm no-op and one-file commit on the last cold-pulled copy, in process.
    const copy = lastQuire.target;
    const clone = lastGit.target;
    const notebook = await openNotebook({
      store,
      workspaceRoot: copies,
      privateRoot: lastQuire.privateRoot,
      probe: false,
    });
    // Interleaved rounds (git status, quire pull, quire commit) after flushing the cold
    // pulls' writeback: a burst of background work then hits all three alike instead of
    // one block of runs.
    // git in its steady state: an index written after the files' last change (right
    // after a clone every file is "racily clean" and status re-reads them).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await git(clone, ["update-index", "-q", "--really-refresh"]);
    execFileSync("sync");
    const statusSamples = [];
    const pullSamples = [];
    const commitSamples = [];
    const timed = async (what) => {
      const start = performance.now();
      expectOk(await what(), "warm call");
      return performance.now() - start;
    };
    for (let i = -1; i < 7; i++) {
      const status = (await git(clone, ["status", "--porcelain"])).ms;
      const pulled = await timed(() => notebook.pull(copy));
      const committed = await timed(() => notebook.commit("nothing changed", copy));
      if (i < 0) continue;
      statusSamples.push(status);
      pullSamples.push(pulled);
      commitSamples.push(committed);
    }
    const gitStatus = summarize(statusSamples);
    const noopPull = summarize(pullSamples);
    const noopCommit = summarize(commitSamples);
    log(`warm: git status ${fmtSummary(gitStatus, "ms")}`);
    const changedFile = path.join(copy, "d07", "f042.md");
    const oneFile = await repeat(
      async (i) => {
        appendFileSync(changedFile, `one more line ${i}\n`);
        const start = performance.now();
        const result = expectOk(
          await notebook.commit(`one-file change ${i}`, copy),
          "one-file commit",
        );
        if (result.files.length !== 1)
          throw new Error(`one-file commit published ${result.files.length} files`);
        return performance.now() - start;
      },
      { warmup: 1, runs: 7 },
    );
    const gitOneFile = await repeat(
      async (i) => {
        appendFileSync(path.join(clone, "d07", "f042.md"), `one more line ${i}\n`);
        const start = performance.now();
        await git(clone, ["commit", "-q", "-am", `one-file change ${i}`]);
        return performance.now() - start;
      },
      { warmup: 1, runs: 7 },
    );
    const cliNoop = await repeat(
      async () =>
        (await runProcess(process.execPath, cliPull(quireBin, copy, lastQuire.privateRoot))).ms,
      { warmup: 1, runs: 5 },
    );
    log(
      `warm: pull ${fmtSummary(noopPull, "ms")}, commit ${fmtSummary(noopCommit, "ms")}, one-file ${fmtSummary(oneFile, "ms")}`,
    );
    const noopRow = (id, workload, summary, goal) =>
      row({
        id,
        workload,
        unit: "ms",
        git: gitStatus,
        quire: summary,
        goal: `≤ ${goal}× git status`,
        met: summary.median / gitStatus.median <= goal,
      });
    rows.push(
      noopRow("warm-noop-pull", "warm no-op pull (10k files) vs git status", noopPull, NOOP_GOAL),
    );
    rows.push(
      noopRow(
        "warm-noop-commit",
        "warm no-op commit (10k files) vs git status",
        noopCommit,
        NOOP_GOAL,
      ),
    );
    rows.push(
      noopRow(
        "warm-one-file-commit",
        "one-file commit (10k files) vs git status",
        oneFile,
        ONE_FILE_GOAL,
      ),
    );

    Object.assign(data, {
      coldGit,
      coldGitLoose,
      coldQuire,
      gitRss,
      quireRss,
      gitStatus,
      noopPull,
      noopCommit,
      oneFile,
      gitOneFile,
      cliNoop,
    });
    details.push(
      `The notebook: ${tree.files.toLocaleString("en-US")} files in ${dirs} directories, ${tree.bytes.toLocaleString("en-US")} bytes of text (${notebookMb.toFixed(1)} MiB). ` +
        `Creating it: quire's first commit (one checkpoint pack) took ${fmt(data.quireInitialCommitMs, "ms")}, git's \`git commit\` ${fmt(data.gitInitialCommitMs, "ms")} (after \`git add\`), then \`git gc\` ${fmt(data.gitGcMs, "ms")}.`,
      "",
      "Cold pull: `node bin/quire.js pull <empty dir> --store file:<dir>` as a whole process with a fresh private root each run, against `git clone -q --no-local` of a repository holding the same tree in one commit, packed by `git gc` (the goal's baseline), both creating their copies in one directory (the previous runs' copies are set aside, not deleted, until the bench ends: a deletion of 10,000 files made the next 10,000 creations several times slower on this file system); both timed spawn to exit, peak RSS from `/usr/bin/time -f %M`. Runs are interleaved (git then quire, then quire then git, and so on) and `sync` flushes the page cache before each. Beside it, as information, the same clone of that commit with its objects still loose (before any gc), where `git clone` must build a pack first: that is what the issue's reference clone time (5.05 s) matches.",
      "Warm: on the last cold-pulled copy, the library's `pull`/`commit` in one long-lived process (as `quire serve` runs them), against `git status --porcelain` (whole process) in the last clone, measured in interleaved rounds (status, pull, commit) after a `sync`. One-file commit: append a line to one file, commit (publishes one increment).",
      "",
      "| measurement | git | quire |",
      "| --- | --- | --- |",
      `| cold pull wall time (git: packed repository) | ${fmtSummary(coldGit, "ms")} | ${fmtSummary(coldQuire, "ms")} |`,
      `| cold pull wall time (git: loose objects; information) | ${fmtSummary(coldGitLoose, "ms")} | ${fmtSummary(coldQuire, "ms")} |`,
      `| cold pull peak RSS | ${gitRss.length ? fmtSummary(summarize(gitRss), "MB") : "—"} | ${quireRss.length ? fmtSummary(summarize(quireRss), "MB") : "—"} (limit ${rssLimit.toFixed(0)} MB) |`,
      `| warm no-op: git status / quire pull | ${fmtSummary(gitStatus, "ms")} | ${fmtSummary(noopPull, "ms")} |`,
      `| warm no-op: git status / quire commit | ${fmtSummary(gitStatus, "ms")} | ${fmtSummary(noopCommit, "ms")} |`,
      `| one-file commit: \`git commit -am\` (no push) / quire commit (published) | ${fmtSummary(gitOneFile, "ms")} | ${fmtSummary(oneFile, "ms")} |`,
      `| warm no-op pull as a CLI process (startup + probe included; informational) | — | ${fmtSummary(cliNoop, "ms")} |`,
    );
    if (profile) {
      const missed = (id) => rows.find((r) => r.id === id)?.met === false;
      const profiles = [];
      if (missed("cold-pull")) {
        log("profiling a cold pull");
        const target = path.join(copies, "cold-profiled");
        mkdirSync(target);
        const result = await profileNode(
          cliPull(quireUnbundled, target, path.join(dir, "private-cold-profiled")),
        );
        profiles.push(
          profileMarkdown(
            `Profile: cold pull CLI process, unbundled so that frames map to the sources (${fmt(result.ms, "ms")} under the profiler)`,
            result.summary,
          ),
        );
      }
      const warmDriver = path.join(repoRoot, "bench/profile/warm.mjs");
      for (const [id, op, what] of [
        ["warm-noop-pull", "pull", "warm no-op pull"],
        ["warm-noop-commit", "commit", "warm no-op commit"],
        ["warm-one-file-commit", "onefile", "one-file commit"],
      ]) {
        if (!missed(id)) continue;
        log(`profiling ${what}`);
        const result = await profileNode([
          warmDriver,
          storeDir,
          copies,
          lastQuire.privateRoot,
          copy,
          op,
          op === "onefile" ? "10" : "15",
        ]);
        const median = JSON.parse(result.stdout).medianMs;
        profiles.push(
          profileMarkdown(
            `Profile: ${op === "onefile" ? 10 : 15} × ${what} in one process (median ${fmt(median, "ms")} under the profiler; includes module loading)`,
            result.summary,
          ),
        );
      }
      if (profiles.length > 0)
        details.push(
          "",
          "CPU profiles of the missed goals (`node --cpu-prof`; quire lines mapped to the TypeScript sources):",
          "",
          ...profiles.flatMap((p) => [p, ""]),
        );
    }
  } finally {
    cleanup(dir);
  }
  return { rows, details: details.join("\n"), data };
};
