/**
 * SPEC §9 command-line behaviour through real `quire` processes: flags before or after
 * PATH mean the same, flags beat the environment, a relative PATH resolves against the
 * current directory (the default workspace root), a PATH outside it is a usage error
 * (through a symlink, PATH_OUTSIDE_ROOT), and colour appears only on a TTY without NO_COLOR.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  type World,
  assertBuilt,
  commit,
  errorHead,
  expectedReport,
  makeWorld,
  pull,
  read,
  runCli,
  treeDigest,
  write,
} from "../helpers/cli.js";

beforeAll(assertBuilt);

const ansi = /\u001b\[[0-9;]*m/;

describe("flags, paths and colour", () => {
  let world: World;
  /** Store flags naming the world's store, with the env pointing at decoys instead. */
  let storeFlags: ReadonlyArray<string>;
  let decoys: { readonly store: string; readonly privateRoot: string };
  let decoyEnv: Readonly<Record<string, string>>;
  beforeAll(async () => {
    world = makeWorld();
    storeFlags = ["--store", `file:${world.store}`, "--private-root", world.privateRoot];
    decoys = {
      store: path.join(world.root, "decoy-store"),
      privateRoot: path.join(world.root, "decoy-private"),
    };
    decoyEnv = { QUIRE_STORE: `file:${decoys.store}`, QUIRE_PRIVATE_ROOT: decoys.privateRoot };
    // One publication through the environment settings.
    await pull(world, "origin");
    write(world.copy("origin"), "notes/a.md", "one\ntwo\n");
    const first = await commit(world, "origin", "first");
    if (first.code !== 0) throw new Error(`setup commit failed: ${first.stderr}`);
  });
  afterAll(() => world.cleanup());

  it("`pull PATH --flags` ≡ `pull --flags PATH`, and flags beat QUIRE_* variables", async () => {
    const [after, before] = await Promise.all([
      runCli(world, ["pull", "one", ...storeFlags], { env: decoyEnv }),
      runCli(world, ["pull", ...storeFlags, "two"], { env: decoyEnv }),
    ]);
    const expected = expectedReport(1, [{ path: "notes/a.md", insertions: 2, deletions: 0 }]);
    expect(after).toMatchObject({ code: 0, stdout: expected });
    expect(before).toMatchObject({ code: 0, stdout: expected });
    expect(treeDigest(world.copy("one"))).toBe(treeDigest(world.copy("origin")));
    expect(treeDigest(world.copy("two"))).toBe(treeDigest(world.copy("origin")));
    // The environment's store and private root were never used.
    expect(existsSync(decoys.store)).toBe(false);
    expect(existsSync(decoys.privateRoot)).toBe(false);

    // Commit with flags, -m and PATH interleaved.
    write(world.copy("one"), "notes/a.md", "one\ntwo\nthree\n");
    const committed = await runCli(
      world,
      [
        "commit",
        "--store",
        `file:${world.store}`,
        "-m",
        "via flags",
        "one",
        "--private-root",
        world.privateRoot,
      ],
      { env: decoyEnv },
    );
    expect(committed).toMatchObject({
      code: 0,
      stdout: expectedReport(2, [{ path: "notes/a.md", insertions: 1, deletions: 0 }]),
    });
    expect(existsSync(decoys.store)).toBe(false);
  });

  it("a relative PATH resolves against the current directory, the default workspace root", async () => {
    const cwd = world.copy("team");
    mkdirSync(cwd);
    // `.` is the current directory itself.
    const here = world.copy("here");
    mkdirSync(here);
    const [nested, dot] = await Promise.all([
      pull(world, "./nested/../deeper/copy", { cwd }),
      pull(world, ".", { cwd: here }),
    ]);
    expect(nested.code, nested.stderr).toBe(0);
    expect(read(path.join(cwd, "deeper", "copy"), "notes/a.md")).toBe("one\ntwo\nthree\n");
    expect(existsSync(path.join(cwd, "nested"))).toBe(false);
    expect(dot.code, dot.stderr).toBe(0);
    expect(read(here, "notes/a.md")).toBe("one\ntwo\nthree\n");
  });

  it("a PATH outside the workspace root is a usage error (exit 2), through a symlink PATH_OUTSIDE_ROOT (exit 1); nothing created", async () => {
    const cwd = world.copy("inner");
    mkdirSync(cwd);
    const expectOutside = (result: CliResult) => {
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toBe("");
      expect(errorHead(result.stderr)).toBe("INVALID_REQUEST · PATH_OUTSIDE_ROOT");
      expect(result.stderr).toContain("\naction: FIX_REQUEST\nretryable: false\n");
    };
    const expectUsage = (result: CliResult) => {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(
        /^quire: invalid configuration: PATH \S+ is outside the workspace root \S+ \(the current directory, by default\)/,
      );
    };

    const elsewhere = path.join(world.root, "elsewhere");
    // A symlink inside the root that leads outside it.
    mkdirSync(path.join(world.root, "outside"));
    symlinkSync(path.join(world.root, "outside"), path.join(cwd, "sneaky"));
    const [escape, absolute, sneaky] = await Promise.all([
      pull(world, "../escape", { cwd }),
      runCli(world, ["commit", elsewhere, "-m", "m"], { cwd }),
      pull(world, "sneaky", { cwd }),
    ]);
    expectUsage(escape);
    expectUsage(absolute);
    expectOutside(sneaky);
    expect(existsSync(world.copy("escape"))).toBe(false);
    expect(existsSync(elsewhere)).toBe(false);
    expect(treeDigest(path.join(world.root, "outside"))).toBe("");
  });

  it("output off a TTY has no ANSI escapes; on a TTY it is coloured unless NO_COLOR is set", async () => {
    // Every run through the helper already fails on an escape off a TTY; these show the
    // check is meaningful: the same commands do colour on a terminal.
    const hasScript = spawnSync("script", ["--version"]).status === 0;
    expect(hasScript, "util-linux `script` is needed to give the CLI a terminal").toBe(true);

    const [coloured, noColor, error] = await Promise.all([
      runCli(world, ["pull", "tty"], { tty: true, env: { NO_COLOR: "" } }),
      runCli(world, ["pull", "tty-no-color"], { tty: true, env: { NO_COLOR: "1" } }),
      // An error on a terminal with NO_COLOR: the candid text, uncoloured.
      runCli(world, ["commit", "one", "-m", " "], { tty: true, env: { NO_COLOR: "1" } }),
    ]);
    expect(coloured.stdout).toMatch(/^\u001b\[32mOK\u001b\[0m {2}generation 2\r?$/m);
    expect(noColor.stdout).toMatch(/^OK {2}generation 2\r?$/m);
    expect(noColor.stdout).not.toMatch(ansi);
    expect(error.stdout).toContain("INVALID_REQUEST · MESSAGE_BLANK");
    expect(error.stdout).not.toMatch(ansi);
  });
});
