/**
 * SPEC §4.1 through real `quire` processes: nothing is created outside the workspace root
 * while a path is resolved; an edit saved during a pull is neither overwritten nor lost;
 * a conflict on a long name leaves a name that fits and a copy that keeps working; a file
 * store inside a working copy is refused; files and paths that are not notebook state get
 * their documented reasons.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import * as path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  binPath,
  commit,
  errorHead,
  fileLines,
  makeWorld,
  pull,
  read,
  runCli,
  write,
  type World,
} from "../helpers/cli.js";
import { makeDeepChain, removeDeep } from "../helpers/deepChain.js";
import { keyDigest } from "../../src/app/keyDigest.js";

beforeAll(assertBuilt);

const worlds: World[] = [];
const world = (): World => {
  const made = makeWorld();
  worlds.push(made);
  return made;
};
afterEach(() => {
  for (const made of worlds.splice(0)) made.cleanup();
});

/** Every entry below `dir`, relative and sorted (links not followed). */
const listing = (dir: string): string[] =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: "utf8" }).map(String).sort() : [];

describe("resolving a path creates nothing outside the workspace root", () => {
  it("pull <root>/link/new/deeper through a symlink to outside: refused, nothing made there", async () => {
    const w = world();
    const outside = path.join(w.root, "outside");
    mkdirSync(outside);
    symlinkSync(outside, path.join(w.ws, "link"));
    const result = await pull(w, path.join(w.ws, "link", "new", "deeper"));
    expect(result.code).not.toBe(0);
    expect(errorHead(result.stderr)).toBe("INVALID_REQUEST · PATH_OUTSIDE_ROOT");
    // The message names the root and how to choose another.
    expect(result.stderr).toContain(w.ws);
    expect(result.stderr).toContain("--workspace-root");
    expect(listing(outside)).toEqual([]);
  });

  it("a dangling symlink, or a path below a regular file: PATH_NOT_DIRECTORY, nothing created", async () => {
    const w = world();
    symlinkSync(path.join(w.root, "nowhere"), path.join(w.ws, "dangling"));
    write(w.ws, "file.md", "a file\n");
    for (const target of ["dangling", "dangling/below", "file.md/below", "file.md"]) {
      const result = await pull(w, path.join(w.ws, target));
      expect(errorHead(result.stderr), target).toBe("INVALID_REQUEST · PATH_NOT_DIRECTORY");
    }
    expect(existsSync(path.join(w.root, "nowhere"))).toBe(false);
    expect(listing(w.ws)).toEqual(["dangling", "file.md"]);
  });

  it("a name in the path over 255 bytes is PATH_TOO_LONG; a refused first pull leaves no directory", async () => {
    const w = world();
    const result = await pull(w, path.join(w.ws, "new", "a".repeat(256)));
    expect(errorHead(result.stderr)).toBe("INVALID_REQUEST · PATH_TOO_LONG");
    await pull(w, path.join(w.ws, "outer", "inner"));
    const nested = await pull(w, path.join(w.ws, "outer"));
    expect(errorHead(nested.stderr)).toBe("INVALID_REQUEST · NESTED_WORKING_COPY");
    const deeper = await pull(w, path.join(w.ws, "outer", "inner", "x", "y"));
    expect(errorHead(deeper.stderr)).toBe("INVALID_REQUEST · NESTED_WORKING_COPY");
    expect(listing(w.ws)).toEqual(["outer", "outer/inner"]);
  });
});

/** Runs `quire pull` and resolves once its scan is done (its first store read of the call). */
const pullWatched = (w: World, copy: string, env: Record<string, string>) => {
  const child = spawn(process.execPath, [binPath, "pull", copy], {
    cwd: w.ws,
    env: { ...w.env, ...env, LOG_LEVEL: "debug" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  let scanned: () => void = () => undefined;
  const afterScan = new Promise<void>((resolve) => (scanned = resolve));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    if (/msg="store request".*diagnosticId=.*op=get/.test(stderr)) scanned();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { afterScan, done };
};

describe("an edit saved while a pull runs", () => {
  it("is merged with the remote change in the same call, and published by the next commit", async () => {
    const w = world();
    const [a, b] = [w.copy("a"), w.copy("b")];
    await pull(w, a);
    write(a, "note.md", "one\ntwo\nthree\nfour\nfive\n");
    expect((await commit(w, a, "first")).code).toBe(0);
    await pull(w, b);
    write(a, "note.md", "ONE\ntwo\nthree\nfour\nfive\n");
    expect((await commit(w, a, "line 1")).code).toBe(0);
    // b's pull fetches the new pack slowly; the person saves line 3 meanwhile.
    const running = pullWatched(w, b, { QUIRE_FAULT_INJECTION: "get:packs/:delay-2500:1" });
    await running.afterScan;
    writeFileSync(path.join(b, "note.md"), "one\ntwo\nTHREE\nfour\nfive\n");
    const result = await running.done;
    expect(result.code, result.stderr).toBe(0);
    expect(read(b, "note.md")).toBe("ONE\ntwo\nTHREE\nfour\nfive\n");
    const committed = await commit(w, b, "line 3");
    expect(committed.code, committed.stderr).toBe(0);
    expect(committed.stdout).toContain("note.md  +1 -1");
    await pull(w, a);
    expect(read(a, "note.md")).toBe("ONE\ntwo\nTHREE\nfour\nfive\n");
  });

  it("that overlaps the remote change is left as saved; the next call merges it (conflict), nothing lost", async () => {
    const w = world();
    const [a, b] = [w.copy("a"), w.copy("b")];
    await pull(w, a);
    write(a, "note.md", "one\ntwo\nthree\n");
    await commit(w, a, "first");
    await pull(w, b);
    write(a, "note.md", "one\nTWO from a\nthree\n");
    await commit(w, a, "a's line 2");
    const running = pullWatched(w, b, { QUIRE_FAULT_INJECTION: "get:packs/:delay-2500:1" });
    await running.afterScan;
    writeFileSync(path.join(b, "note.md"), "one\nTWO from b\nthree\n");
    const result = await running.done;
    expect(result.code, result.stderr).toBe(0);
    // The person's file, exactly as saved: the rewrite did not overwrite it.
    expect(read(b, "note.md")).toBe("one\nTWO from b\nthree\n");
    expect(result.stderr).toContain("the next call merges them");
    // The next call merges it: both lines survive, in a conflict block.
    const again = await pull(w, b);
    expect(errorHead(again.stderr)).toBe("CONTENT_CONFLICT · MERGE_CONFLICT");
    const text = read(b, "note.md");
    expect(text).toContain("TWO from a");
    expect(text).toContain("TWO from b");
  });
});

describe("a conflict on a long name", () => {
  it("moves the file aside under a name that fits; the copy keeps working, nothing lost", async () => {
    const w = world();
    const [a, b] = [w.copy("a"), w.copy("b")];
    await pull(w, a);
    await pull(w, b);
    const long = `${"n".repeat(250)}.md`; // 253 bytes
    write(a, long, "from a\n");
    write(a, "other.md", "another note\n");
    expect((await commit(w, a, "a's long name")).code).toBe(0);
    // b made a directory of the same name: a file/directory conflict.
    write(b, `${long}/inside.md`, "from b\n");
    const committed = await commit(w, b, "b's directory");
    expect(errorHead(committed.stderr)).toBe("CONTENT_CONFLICT · MERGE_CONFLICT");
    expect(fileLines(committed.stderr).join("\n")).toContain("FILE_DIRECTORY");
    const names = readdirSync(b);
    const aside = names.find((name) => name.includes("~remote"));
    expect(aside, names.join(", ")).toBeDefined();
    expect(Buffer.byteLength(aside ?? "")).toBeLessThanOrEqual(255);
    expect(read(b, `${long}/inside.md`)).toBe("from b\n");
    expect(read(b, aside ?? "")).toBe("from a\n");
    // The error says where the notebook's note went, in its file line and its message.
    expect(fileLines(committed.stderr)).toContain(
      `file: ${long} · FILE_DIRECTORY · side remote · movedTo ${aside} · keptAs ${long}`,
    );
    expect(committed.stderr).toContain(
      `The notebook's note ${long} was written as ${aside} because your copy has a folder ${long}.`,
    );
    expect(committed.stderr).toContain("Then call quire commit again.");
    // No recovery pending: the next calls work.
    const next = await commit(w, b, "both kept");
    expect(next.code, next.stderr).toBe(0);
    expect((await pull(w, b)).code).toBe(0);
  });
});

describe("stores and state never alias notes", () => {
  it("a file store inside the working copy is refused before anything is written", async () => {
    const w = world();
    const copy = w.copy("notes");
    const store = path.join(copy, ".store");
    const result = await runCli(w, ["pull", copy], { env: { QUIRE_STORE: `file:${store}` } });
    expect(errorHead(result.stderr)).toBe("INVALID_REQUEST · PATH_OVERLAPS_STATE");
    expect(existsSync(store)).toBe(false);
    expect(existsSync(copy)).toBe(false);
    const serve = await runCli(w, ["serve", "--workspace-root", w.ws], {
      env: { QUIRE_STORE: `file:${path.join(w.ws, "store")}` },
    });
    expect(serve.code).not.toBe(0);
    expect(serve.stderr).toContain("overlap");
    expect(existsSync(path.join(w.ws, "store"))).toBe(false);
  });
});

const ok = async (run: Promise<{ code: number | null; stdout: string; stderr: string }>) => {
  const result = await run;
  expect(result.code, result.stderr).toBe(0);
  return result;
};

describe("a working copy used with another store", () => {
  it("status, commit, log and pull with another --store are refused naming the copy's store; nothing is published there", async () => {
    const w = world();
    const copy = w.copy("notes");
    await ok(pull(w, copy));
    write(copy, "mine.md", "only in the first store\n");
    await ok(commit(w, copy, "first"));
    const other = path.join(w.root, "other-store");
    const env = { env: { QUIRE_STORE: `file:${other}` } };
    for (const args of [
      ["status", copy],
      ["log", copy],
      ["commit", copy, "-m", "into the other"],
      ["pull", copy],
    ]) {
      const result = await runCli(w, args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
      expect(errorHead(result.stderr), args.join(" ")).toBe(
        "INVALID_REQUEST · NESTED_WORKING_COPY",
      );
      expect(result.stderr).not.toContain("never pulled");
      expect(result.stderr).toContain(
        "last pulled from another store (a file store in another directory)",
      );
      expect(result.stderr).toContain("move the directory aside");
    }
    // Nothing of the copy reached the other store, and the copy works with its own.
    const fresh = w.copy("fresh");
    await ok(pull(w, fresh, env));
    expect(existsSync(path.join(fresh, "mine.md"))).toBe(false);
    await ok(runCli(w, ["status", copy]));
    // The way out the refusal gives: the directory moved aside (here: emptied and made
    // again by hand, which holds nothing to take), the pull from the other store works.
    rmSync(copy, { recursive: true });
    mkdirSync(copy);
    await ok(pull(w, copy, env));
    await ok(runCli(w, ["status", copy], env));
  });

  it("a copy moved aside and pulled afresh from another store is refused to the first store; neither store gets the other's notes", async () => {
    const w = world();
    const copy = w.copy("notes");
    await ok(pull(w, copy));
    write(copy, "first.md", "only in the first store\n");
    await ok(commit(w, copy, "first"));
    renameSync(copy, `${copy}.first`);
    const other = path.join(w.root, "other-store");
    const env = { env: { QUIRE_STORE: `file:${other}` } };
    await ok(pull(w, copy, env));
    write(copy, "second.md", "only in the other store\n");
    await ok(commit(w, copy, "second", env));
    // The first store still has private state for this path; calling it with that store
    // read the other store's notes as additions and first.md as deleted.
    for (const args of [
      ["status", copy],
      ["commit", copy, "-m", "into the first"],
      ["pull", copy],
    ]) {
      const result = await runCli(w, args);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
      expect(errorHead(result.stderr), args.join(" ")).toBe(
        "INVALID_REQUEST · NESTED_WORKING_COPY",
      );
      expect(result.stderr).toContain("last pulled from another store");
    }
    const fresh = w.copy("fresh");
    await ok(pull(w, fresh));
    expect(read(fresh, "first.md")).toBe("only in the first store\n");
    expect(existsSync(path.join(fresh, "second.md"))).toBe(false);
    await ok(runCli(w, ["status", copy], env));
    // The way back that works for a directory that cannot be moved (a workspace root):
    // emptied, it is pulled afresh from the first store, not read against its old state.
    for (const name of readdirSync(copy)) rmSync(path.join(copy, name), { recursive: true });
    await ok(pull(w, copy));
    expect(read(copy, "first.md")).toBe("only in the first store\n");
    expect(existsSync(path.join(copy, "second.md"))).toBe(false);
    await ok(runCli(w, ["status", copy]));
    const refusedNow = await runCli(w, ["status", copy], env);
    expect(errorHead(refusedNow.stderr)).toBe("INVALID_REQUEST · NESTED_WORKING_COPY");
  });
});

describe("a working copy pulled before the record of its store was kept", () => {
  const refusedWith = async (w: World, copy: string, env: { env: Record<string, string> }) => {
    for (const args of [
      ["status", copy],
      ["commit", copy, "-m", "into the other"],
      ["pull", copy],
    ]) {
      const result = await runCli(w, args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
      expect(errorHead(result.stderr), args.join(" ")).toBe(
        "INVALID_REQUEST · NESTED_WORKING_COPY",
      );
      expect(result.stderr).toContain("last pulled from another store");
    }
  };

  it("is refused to another store once its own store is known from any other copy's record", async () => {
    const w = world();
    const copy = w.copy("notes");
    await ok(pull(w, copy));
    write(copy, "mine.md", "only in the first store\n");
    await ok(commit(w, copy, "first"));
    // As a copy pulled before records were kept: no record of its store.
    rmSync(path.join(w.privateRoot, "owners"), { recursive: true });
    // Another copy of the same store, pulled since: its record names the store.
    await ok(pull(w, w.copy("later")));
    const other = path.join(w.root, "other-store");
    const env = { env: { QUIRE_STORE: `file:${other}` } };
    await refusedWith(w, copy, env);
    const fresh = w.copy("fresh");
    await ok(pull(w, fresh, env));
    expect(readdirSync(fresh)).toEqual([]);
    await ok(runCli(w, ["status", copy]));
  });

  it("gets its record at its next call with its own store, and is refused to another store after", async () => {
    const w = world();
    const copy = w.copy("notes");
    await ok(pull(w, copy));
    write(copy, "mine.md", "only in the first store\n");
    await ok(commit(w, copy, "first"));
    rmSync(path.join(w.privateRoot, "owners"), { recursive: true });
    await ok(runCli(w, ["status", copy]));
    const other = path.join(w.root, "other-store");
    const env = { env: { QUIRE_STORE: `file:${other}` } };
    await refusedWith(w, copy, env);
    const fresh = w.copy("fresh");
    await ok(pull(w, fresh, env));
    expect(readdirSync(fresh)).toEqual([]);
  });
});

describe("a first pull waiting for the record of a directory's store", () => {
  it("whose lock a live-looking process holds answers BUSY naming that process and the lock file", async () => {
    const w = world();
    const copy = w.copy("notes");
    mkdirSync(copy);
    // The record's lock, as a process still running (this test's own) would have left it.
    const owners = path.join(w.privateRoot, "owners");
    mkdirSync(owners, { recursive: true });
    const lock = `${keyDigest(["store of", copy])}.lock`;
    writeFileSync(
      path.join(owners, lock),
      JSON.stringify({ pid: process.pid, host: hostname(), token: "held" }),
    );
    const result = await pull(w, copy);
    expect(result.code, result.stderr).toBe(1);
    expect(errorHead(result.stderr)).toBe("ENGINE_FAILED · BUSY");
    expect(result.stderr).toContain(`pid ${process.pid} on ${hostname()}`);
    // The file by its place and name (its digest is redacted from every answer).
    expect(result.stderr).toContain(
      "holds the lock file owners/<digest of this directory's path>.lock in the private root",
    );
    expect(readdirSync(copy)).toEqual([]);
  });
});

describe("files that are not notebook state get their reasons", () => {
  it("a file whose name is not UTF-8 is INVALID_CONTENT/INVALID_NAME, named, not retryable", async () => {
    const w = world();
    const copy = w.copy("a");
    await pull(w, copy);
    writeFileSync(
      Buffer.concat([Buffer.from(`${copy}/bad`), Buffer.from([0xff]), Buffer.from(".md")]),
      "x\n",
    );
    const result = await commit(w, copy, "bad name");
    expect(errorHead(result.stderr)).toBe("INVALID_CONTENT · INVALID_FILES");
    expect(fileLines(result.stderr)).toEqual(["file: bad\uFFFD.md · INVALID_NAME"]);
    expect(result.stderr).toContain("retryable: false");
  });
});

describe("names that would drive or fool a terminal are shown with U+FFFD", () => {
  it("a tab, newline, escape or invisible character in an INVALID_NAME is shown as U+FFFD by commit and status; --json keeps the exact name", async () => {
    const w = world();
    const copy = w.copy("a");
    await pull(w, copy);
    for (const name of ["t\tab.md", "n\nl.md", "e\u001b[31m.md", "z\u200bw\u200f.md"])
      writeFileSync(path.join(copy, name), "x\n");
    const refused = await commit(w, copy, "bad names");
    expect(errorHead(refused.stderr)).toBe("INVALID_CONTENT · INVALID_FILES");
    expect(fileLines(refused.stderr)).toEqual([
      "file: e\uFFFD[31m.md · INVALID_NAME",
      "file: n\uFFFDl.md · INVALID_NAME",
      "file: t\uFFFDab.md · INVALID_NAME",
    ]);
    expect(refused.stderr).not.toMatch(/[\t\u200b\u200f]/);
    const shown = await runCli(w, ["status", copy]);
    expect(shown.stdout).toContain("  t\uFFFDab.md  INVALID_NAME\n");
    expect(shown.stdout).toContain("  A z\uFFFDw\uFFFD.md\n");
    expect(shown.stdout).not.toMatch(/[\t\u200b\u200f]/);
    const json = await runCli(w, ["status", copy, "--json"]);
    const parsed = JSON.parse(json.stdout) as { invalid: ReadonlyArray<{ path: string }> };
    expect(parsed.invalid.map((i) => i.path)).toEqual(["e\u001b[31m.md", "n\nl.md", "t\tab.md"]);
  });

  it("a committed note whose name holds bidi or zero-width characters is listed with U+FFFD by commit and log", async () => {
    const w = world();
    const copy = w.copy("a");
    await pull(w, copy);
    write(copy, "lrm\u200e\u2060x.md", "x\n");
    const committed = await commit(w, copy, "named");
    expect(committed.code, committed.stderr).toBe(0);
    expect(committed.stdout).toContain("  lrm\uFFFD\uFFFDx.md  +1\n");
    const log = await runCli(w, ["log", copy]);
    expect(log.stdout).toContain("A lrm\uFFFD\uFFFDx.md");
    expect(committed.stdout + log.stdout).not.toMatch(/[\u200e\u2060]/);
  });
});

describe("a tree deeper than the process may hold descriptors", () => {
  /** One run under `ulimit -n 400`: fewer descriptors than the notes below are levels deep. */
  const limited = (w: World, args: ReadonlyArray<string>) =>
    spawnSync("sh", ["-c", 'ulimit -n 400 && exec "$0" "$@"', process.execPath, binPath, ...args], {
      cwd: w.ws,
      env: w.env,
      encoding: "utf8",
    });

  it("notes 600 levels down (legal paths) are committed, pulled and scanned, not EMFILE", async () => {
    const w = world();
    const a = w.copy("a");
    const b = w.copy("b");
    expect((await pull(w, a)).code).toBe(0);
    const deep = `${"d/".repeat(600)}deep.md`;
    const other = `${"d/".repeat(300)}${"e/".repeat(400)}other.md`;
    write(a, deep, "deep\n");
    write(a, other, "other\n");
    const committed = limited(w, ["commit", a, "-m", "deep"]);
    expect(committed.status, committed.stderr).toBe(0);
    expect(committed.stdout).toContain("2 files changed");
    const pulled = limited(w, ["pull", b]);
    expect(pulled.status, pulled.stderr).toBe(0);
    expect(read(b, deep)).toBe("deep\n");
    expect(read(b, other)).toBe("other\n");
    const status = limited(w, ["status", b]);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toContain("nothing to commit");
  });
});

describe("a chain of directories deeper than any note may lie", () => {
  /**
   * One run with a 64 MB heap (and 400 descriptors): a walk that named every level of the
   * chain below kept ~1 GB of path strings (cost quadratic in depth) and died of it.
   */
  const bounded = (w: World, args: ReadonlyArray<string>) =>
    spawnSync(
      "sh",
      [
        "-c",
        'ulimit -n 400 && exec "$0" --max-old-space-size=64 "$@"',
        process.execPath,
        binPath,
        ...args,
      ],
      { cwd: w.ws, env: w.env, encoding: "utf8" },
    );

  // 5,000 levels of 40-byte names: a path of ~200 KB at the bottom. The first 99 levels
  // (4,058 bytes) are nameable; the 4,901 below them are not.
  const segment = "d".repeat(40);
  const chain = Array.from({ length: 5000 }, () => segment);
  const named = chain.slice(0, 99).join("/");

  it("is scanned in bounded memory: empty, it is no state; a file at its bottom is reported, shortened", async () => {
    const w = world();
    const a = w.copy("a");
    expect((await pull(w, a)).code).toBe(0);
    makeDeepChain(a, chain);
    try {
      const empty = bounded(w, ["status", a]);
      expect(empty.status, empty.stderr).toBe(0);
      expect(empty.stdout).toContain("nothing to commit");
      write(a, "n.md", "note\n");
      const committed = bounded(w, ["commit", a, "-m", "a note beside the chain"]);
      expect(committed.status, committed.stderr).toBe(0);
      expect(committed.stdout).toContain("1 file changed");
      const pulled = bounded(w, ["pull", a]);
      expect(pulled.status, pulled.stderr).toBe(0);

      // A file 5,000 levels down: never hidden, reported as an over-long path is.
      makeDeepChain(a, chain, "deep.md");
      const line = `${named}/<4,901 more directories>/deep.md`;
      const seen = bounded(w, ["status", a]);
      expect(seen.status, seen.stderr).toBe(0);
      expect(seen.stdout).toContain(`  ${line}  INVALID_NAME`);
      const refused = bounded(w, ["commit", a, "-m", "deep"]);
      expect(refused.status).toBe(1);
      expect(errorHead(refused.stderr)).toBe("INVALID_CONTENT · INVALID_FILES");
      expect(fileLines(refused.stderr)).toEqual([`file: ${line} · INVALID_NAME`]);
    } finally {
      // Deeper than node's rm can name (the world's cleanup would fail on it).
      removeDeep(path.join(a, segment));
    }
  });
});

/** `quire status <copy>`. */
const status = (w: World, copy: string) => runCli(w, ["status", copy]);

describe("what a killed replace left behind is tidied by the next call", () => {
  const seeded = async () => {
    const w = world();
    const a = path.join(w.ws, "a");
    expect((await pull(w, a)).code).toBe(0);
    write(a, "sub/kept.md", "kept, new\n");
    write(a, "sub/alone.md", "alone\n");
    expect((await commit(w, a, "seed")).code).toBe(0);
    return { w, a };
  };

  it("a set-aside file beside its name (killed after linking the new one) stays, reported, until the person removes it", async () => {
    const { w, a } = await seeded();
    // Most likely the old version of a finished replace, but quire cannot prove that it
    // took no write, or that it is not a file of the person's named like one.
    write(a, "sub/.kept.md.quire-0123456789ab1.aside", "kept, old\n");
    await status(w, a);
    expect(read(a, "sub/.kept.md.quire-0123456789ab1.aside")).toBe("kept, old\n");
    const refused = await commit(w, a, "after the kill");
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain("INVALID_NAME");
    expect(read(a, "sub/.kept.md.quire-0123456789ab1.aside")).toBe("kept, old\n");
    rmSync(path.join(a, "sub", ".kept.md.quire-0123456789ab1.aside"));
    const committed = await commit(w, a, "after the kill");
    expect(committed.code, committed.stderr).toBe(0);
    expect(listing(path.join(a, "sub"))).toEqual(["alone.md", "kept.md"]);
    expect(read(a, "sub/kept.md")).toBe("kept, new\n");
  });

  it("a set-aside file beside its name holding the note's published version, all still in the note, is removed; the commit goes on", async () => {
    const { w, a } = await seeded();
    // The published version (kept by quire), and the note holds all of it: nothing of it
    // can be lost, so it goes.
    write(a, "sub/.kept.md.quire-0123456789ab3.aside", "kept, new\n");
    write(a, "sub/kept.md", "before\nkept, new\nafter\n");
    const committed = await commit(w, a, "after the kill");
    expect(committed.code, committed.stderr).toBe(0);
    expect(listing(path.join(a, "sub"))).toEqual(["alone.md", "kept.md"]);
    expect(read(a, "sub/kept.md")).toBe("before\nkept, new\nafter\n");
  });

  it("a set-aside file beside its name holding the published version stays when the note lacks some of it", async () => {
    const { w, a } = await seeded();
    // The note may be a newcomer made after a kill before the link (`>>` creates it).
    write(a, "sub/.kept.md.quire-0123456789ab4.aside", "kept, new\n");
    write(a, "sub/kept.md", "appended\n");
    const refused = await commit(w, a, "after the kill");
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain("INVALID_NAME");
    expect(read(a, "sub/.kept.md.quire-0123456789ab4.aside")).toBe("kept, new\n");
  });

  it("a person's files named loosely like quire's own are notes like any other, never removed", async () => {
    const { w, a } = await seeded();
    const theirs = [
      "sub/.kept.md.quire-1.aside",
      "sub/.notes.quire-draft.tmp",
      "sub/.x.quire-0123456789abX.tmp",
    ];
    for (const name of theirs) write(a, name, `mine: ${name}\n`);
    await status(w, a);
    for (const name of theirs) expect(read(a, name)).toBe(`mine: ${name}\n`);
    const committed = await commit(w, a, "their files");
    expect(committed.code, committed.stderr).toBe(0);
    for (const name of theirs) expect(read(a, name)).toBe(`mine: ${name}\n`);
  });

  it("a set-aside file alone (killed right after setting it aside) goes back under its name", async () => {
    const { w, a } = await seeded();
    renameSync(
      path.join(a, "sub", "alone.md"),
      path.join(a, "sub", ".alone.md.quire-0123456789ab2.aside"),
    );
    const committed = await commit(w, a, "after the kill");
    expect(committed.code, committed.stderr).toBe(0);
    expect(listing(path.join(a, "sub"))).toEqual(["alone.md", "kept.md"]);
    expect(read(a, "sub/alone.md")).toBe("alone\n");
  });
});

describe("first pulls of nested directories by two processes at once", () => {
  it("one becomes the copy, the other is NESTED_WORKING_COPY; nothing is made outside the root", async () => {
    const made = world();
    // A notebook with some notes, so that a pull has work between its check and its state.
    await pull(made, "seed");
    for (let i = 0; i < 20; i++) write(made.copy("seed"), `n${i}.md`, `${i}\n`);
    await commit(made, "seed", "notes");
    const outside = path.join(made.root, "outside");
    mkdirSync(outside);
    for (let round = 0; round < 4; round++) {
      const outer = `r${round}/c`;
      const inner = `r${round}/c/sub`;
      const runs = [runCli(made, ["pull", outer]), runCli(made, ["pull", inner])];
      const results = round % 2 === 0 ? await Promise.all(runs) : await Promise.all(runs.reverse());
      const shapes = results
        .map((result) =>
          result.code === 0
            ? "OK"
            : `${String(result.code)} ${/NESTED_WORKING_COPY/.test(result.stderr) ? "NESTED_WORKING_COPY" : result.stderr}`,
        )
        .sort();
      expect(shapes, `round ${round}`).toEqual(["1 NESTED_WORKING_COPY", "OK"]);
      // Whichever won, the other is refused by every later call too: never two copies.
      const status = [await runCli(made, ["status", outer]), await runCli(made, ["status", inner])];
      expect(status.map((result) => result.code).sort(), `round ${round}`).toEqual([0, 1]);
    }
    expect(listing(outside)).toEqual([]);
    expect(readdirSync(made.ws).sort()).toEqual(["r0", "r1", "r2", "r3", "seed"]);
  }, 120_000);
});
