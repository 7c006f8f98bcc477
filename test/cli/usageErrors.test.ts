/**
 * Usage errors as a person types them, through real `quire` processes: each is exit 2,
 * one line on stderr that names what to type instead, and nothing written. The
 * spellings other tools use for an option quire has (`git log -5`, `--limit 5`) are
 * refused with a pointer to quire's own, never ignored.
 */
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { binPath, makeSandbox, runQuire, type Sandbox } from "./quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

const quire = (args: ReadonlyArray<string>, cwd = box.workspace) =>
  runQuire(args, {
    cwd,
    env: { ...box.env, QUIRE_STORE: `file:${box.store}`, QUIRE_PRIVATE_ROOT: box.privateRoot },
  });

/** Exit 2, stdout empty, exactly one stderr line holding `expected`; the store untouched. */
const expectUsage = (
  result: { readonly code: number | null; readonly stdout: string; readonly stderr: string },
  expected: string,
) => {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe("");
  expect(result.stderr.split("\n")).toHaveLength(2);
  expect(result.stderr).toContain(expected);
  expect(existsSync(box.store) ? readdirSync(box.store) : []).toEqual([]);
};

describe("quire log's count, as a git user spells it", () => {
  it.each([
    [["-5"], 'unknown option "-5" (a count is written -n 5, for quire log)'],
    [["--limit", "5"], 'unknown option "--limit" (did you mean -n/--max-count?)'],
    [["--limit=5"], 'unknown option "--limit" (did you mean -n/--max-count?)'],
    [["--number", "5"], 'unknown option "--number" (did you mean -n/--max-count?)'],
    [["--max_count=5"], 'unknown option "--max_count" (did you mean -n/--max-count?)'],
  ])("log PATH %j is refused naming -n", async (flags, expected) => {
    expectUsage(
      await quire(["log", "copy", ...flags]),
      `quire: invalid configuration: ${expected}`,
    );
  });

  it.each([[["-n", "abc"]], [["-nabc"]], [["-n", "0"]], [["--max-count", "007"]]])(
    "log PATH %j with a bad count names -n as well as --max-count",
    async (flags) => {
      expectUsage(
        await quire(["log", "copy", ...flags]),
        "quire: invalid configuration: -n/--max-count must be a whole number from 1 to 1000000",
      );
    },
  );

  it("log PATH -n without a value names -n", async () => {
    expectUsage(
      await quire(["log", "copy", "-n"]),
      "quire: invalid configuration: option -n/--max-count needs a value",
    );
  });

  it("a near miss of any long option names the option meant", async () => {
    mkdirSync(path.join(box.workspace, "copy"));
    expectUsage(
      await quire(["restore", "copy", "a.md", "--from", "1", "--froce"]),
      'unknown option "--froce" (did you mean --force?)',
    );
    expectUsage(
      await quire(["pull", "copy", "--workspace_root", box.workspace]),
      'unknown option "--workspace_root" (did you mean --workspace-root?)',
    );
  });
});

describe("a PATH outside the workspace root", () => {
  it.each([
    ["pull", []],
    ["commit", ["-m", "m"]],
    ["status", []],
    ["diff", []],
    ["log", []],
  ])(
    "quire %s ../x from inside a copy: exit 2, naming the root, nothing made",
    async (cmd, more) => {
      const inside = path.join(box.workspace, "copy");
      mkdirSync(inside);
      const result = await quire([cmd, "../x", ...more], inside);
      expectUsage(
        result,
        `quire: invalid configuration: PATH ${path.join(box.workspace, "x")} is outside the workspace root ${inside} (the current directory, by default); PATH must be at or below it: run quire from a directory that holds PATH, or name one with --workspace-root DIR (or QUIRE_WORKSPACE_ROOT)`,
      );
      expect(existsSync(path.join(box.workspace, "x"))).toBe(false);
    },
  );

  it("--json: the usage error as one JSON line on stdout, exit 2", async () => {
    const inside = path.join(box.workspace, "copy");
    mkdirSync(inside);
    const result = await quire(["diff", "../x", "--json"], inside);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({
      code: "INVALID_REQUEST",
      reason: "INVALID_ARGUMENT",
    });
  });

  it.each(["pull", "status", "diff", "log"])(
    "quire %s through a symlink leading out: PATH_OUTSIDE_ROOT with the hint naming the root",
    async (cmd) => {
      const inside = path.join(box.workspace, "copy");
      mkdirSync(inside);
      mkdirSync(path.join(box.root, "out"));
      symlinkSync(path.join(box.root, "out"), path.join(inside, "sneaky"));
      const result = await quire([cmd, "sneaky"], inside);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("INVALID_REQUEST · PATH_OUTSIDE_ROOT");
      expect(result.stderr).toContain(
        `hint: the workspace root is ${inside} (the current directory, by default); PATH must be at or below it.`,
      );
      expect(readdirSync(path.join(box.root, "out"))).toEqual([]);
    },
  );

  it("a PATH spelt through a symlink to the root is inside it, not refused", async () => {
    const real = path.join(box.workspace, "real");
    mkdirSync(real);
    const alias = path.join(box.root, "alias");
    symlinkSync(real, alias);
    // --workspace-root spelt through the link, PATH below it.
    const explicit = await quire(["pull", path.join(alias, "a"), "--workspace-root", alias]);
    expect(explicit.code, explicit.stderr).toBe(0);
    expect(existsSync(path.join(real, "a"))).toBe(true);
    // The current directory reached through the link (as a shell's $PWD spells it).
    const logical = await quire(["pull", path.join(alias, "b")], real);
    expect(logical.code, logical.stderr).toBe(0);
    expect(existsSync(path.join(real, "b"))).toBe(true);
    expect((await quire(["status", path.join(alias, "b")], real)).code).toBe(0);
  });
});

describe("from a subdirectory of a working copy", () => {
  it("pull . is refused as inside that copy, not a second copy of the notebook in it", async () => {
    const copy = path.join(box.workspace, "copy");
    expect((await quire(["pull", "copy"])).code).toBe(0);
    mkdirSync(path.join(copy, "sub"));
    writeFileSync(path.join(copy, "sub", "a.md"), "a\n");
    expect((await quire(["commit", "copy", "-m", "a"])).code).toBe(0);
    const sub = path.join(copy, "sub");
    for (const args of [
      ["pull", "."],
      ["status", "."],
      ["commit", ".", "-m", "m"],
    ]) {
      const result = await quire(args, sub);
      expect(result.code, args.join(" ")).toBe(1);
      expect(result.stderr).toContain("INVALID_REQUEST · NESTED_WORKING_COPY");
      expect(result.stderr).toContain(`inside the working copy ${copy}`);
    }
    // Nothing was written into the subdirectory: the copy still holds one note.
    expect(readdirSync(sub)).toEqual(["a.md"]);
    const status = await quire(["status", "copy"]);
    expect(status.stdout).toContain("nothing to commit");
  });
});

describe("help", () => {
  it("quire help on an unknown command is a usage error naming the nearest", async () => {
    expectUsage(
      await quire(["help", "stauts"]),
      'quire: invalid configuration: unknown command "stauts" (did you mean quire status? try quire -h)',
    );
    const known = await quire(["help", "status"]);
    expect(known.code).toBe(0);
    expect(known.stdout).toMatch(/^Usage: quire status PATH/);
  });
});

describe("--version beside other arguments", () => {
  it.each([[["--version", "--json"]], [["pull", "copy", "-v"]]])(
    "%j: a usage error saying --version stands alone",
    async (args) => {
      expectUsage(
        await quire(args),
        "quire: invalid configuration: --version (-v) takes no other arguments; run quire --version alone",
      );
    },
  );
});

describe("a usage error whose --json report cannot be written", () => {
  /** `quire args` with stdout on /dev/full (every write fails with ENOSPC). */
  const toFullDisk = (args: ReadonlyArray<string>) => {
    const full = openSync("/dev/full", "w");
    return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [binPath, ...args], {
        cwd: box.workspace,
        env: { ...box.env, QUIRE_STORE: `file:${box.store}`, QUIRE_PRIVATE_ROOT: box.privateRoot },
        stdio: ["ignore", full, "pipe"],
      });
      let stderr = "";
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stderr }));
    }).finally(() => closeSync(full));
  };

  it.runIf(existsSync("/dev/full"))(
    "log -n x --json > /dev/full keeps exit 2 and says on stderr that the report was lost",
    async () => {
      const result = await toFullDisk(["log", "copy", "-n", "x", "--json"]);
      expect(result.code, result.stderr).toBe(2);
      const lines = result.stderr.split("\n").filter((line) => line.startsWith("quire:"));
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toContain("cannot write the output (ENOSPC)");
      expect(lines[0]).toContain("exit status 2");
      expect(result.stderr).not.toContain("internal error");
    },
  );
});
