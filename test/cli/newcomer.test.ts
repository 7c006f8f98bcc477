/**
 * What a newcomer trips over, each through real `quire` processes: the README's shell
 * example prints exactly what the README shows on a fresh store; `-v` works like
 * `--version`; `serve -h` lists `--no-share` with the other options; a mistyped command
 * suggests the nearest one; a PATH outside the workspace root names the root and how to
 * change it; a commit that merged in others' publications says what came into the copy.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  binPath,
  makeSandbox,
  packageVersion,
  repoRoot,
  runQuire,
  type Sandbox,
} from "./quireProcess.js";
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

/** The fenced block of `language` that contains `needle`, and the block right after it. */
const readmeBlocks = (needle: string): { readonly script: string; readonly output: string } => {
  const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
    language: m[1],
    body: m[2] ?? "",
  }));
  const index = blocks.findIndex(
    (block) => block.language === "bash" && block.body.includes(needle),
  );
  const output = blocks[index + 1];
  if (index === -1 || output?.language !== "text")
    throw new Error(`README has no bash block with ${needle} followed by a text block`);
  return { script: blocks[index]?.body ?? "", output: output.body };
};

describe("the README", () => {
  it("its shell example prints exactly the README's output on a fresh store", () => {
    const { script, output } = readmeBlocks("quire pull ./notes");
    // `quire` on PATH is this build, as after `npm install -g .`.
    const bin = path.join(box.root, "bin");
    mkdirSync(bin);
    writeFileSync(
      path.join(bin, "quire"),
      `#!/bin/sh\nexec "${process.execPath}" "${binPath}" "$@"\n`,
    );
    chmodSync(path.join(bin, "quire"), 0o755);
    const run = spawnSync("bash", ["-e", "-c", script], {
      cwd: box.workspace,
      env: {
        ...box.env,
        PATH: `${bin}:${process.env["PATH"] ?? ""}`,
        QUIRE_PRIVATE_ROOT: box.privateRoot,
      },
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(output);
  });
});

describe("first steps", () => {
  it("-v prints the version like --version and version", async () => {
    const expected = `quire ${packageVersion}\n`;
    for (const spelling of [["-v"], ["--version"], ["version"]]) {
      const result = await quire(spelling);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(expected);
    }
  });

  it("serve -h lists --no-share with the other options, before the closing notes", async () => {
    const { stdout, code } = await quire(["serve", "-h"]);
    expect(code).toBe(0);
    const noShare = stdout.indexOf("  --no-share ");
    expect(noShare).toBeGreaterThan(stdout.indexOf("  --allow-mass-delete "));
    expect(noShare).toBeLessThan(stdout.indexOf("Logs go to stderr"));
    expect(stdout.endsWith("Colour only on a terminal, never when NO_COLOR is set.\n")).toBe(true);
  });

  it.each([
    ["pul", "pull"],
    ["comit", "commit"],
    ["serv", "serve"],
    ["mpc", "mcp"],
    ["verison", "version"],
    ["Pull", "pull"],
  ])("a mistyped %s suggests quire %s", async (typo, meant) => {
    const result = await quire([typo]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `quire: invalid configuration: unknown command "${typo}" (did you mean quire ${meant}? try quire -h)\n`,
    );
  });

  it("a word like no command suggests nothing", async () => {
    const result = await quire(["frobnicate"]);
    expect(result.stderr).toBe(
      'quire: invalid configuration: unknown command "frobnicate" (try quire -h)\n',
    );
  });

  it("a PATH outside the workspace root names the root and how to change it", async () => {
    const inside = path.join(box.workspace, "project");
    mkdirSync(inside);
    const result = await quire(["pull", "../elsewhere"], inside);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `quire: invalid configuration: PATH ${path.join(box.workspace, "elsewhere")} is outside the workspace root ${inside} (the current directory, by default); PATH must be at or below it: run quire from a directory that holds PATH, or name one with --workspace-root DIR (or QUIRE_WORKSPACE_ROOT)\n`,
    );
    const explicit = await quire(["pull", "/", "--workspace-root", inside]);
    expect(explicit.code).toBe(2);
    expect(explicit.stderr).toContain(
      `PATH / is outside the workspace root ${inside}; PATH must be at or below it:`,
    );
  });

  it("names each file another participant added, changed or deleted", async () => {
    expect((await quire(["pull", "a"])).code).toBe(0);
    writeFileSync(path.join(box.workspace, "a", "old.md"), "old\n");
    writeFileSync(path.join(box.workspace, "a", "shared.md"), "one\n");
    expect((await quire(["commit", "a", "-m", "seed"])).code).toBe(0);
    expect((await quire(["pull", "b"])).code).toBe(0);
    // a: adds new.md, changes shared.md, deletes old.md.
    writeFileSync(path.join(box.workspace, "a", "new.md"), "new\n");
    writeFileSync(path.join(box.workspace, "a", "shared.md"), "one\ntwo\n");
    spawnSync("rm", [path.join(box.workspace, "a", "old.md")]);
    expect((await quire(["commit", "a", "-m", "changes"])).code).toBe(0);
    // b publishes its own note and gets a's three changes in the same commit.
    writeFileSync(path.join(box.workspace, "b", "mine.md"), "mine\n");
    const result = await quire(["commit", "b", "-m", "mine"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      "OK  generation 3\n  mine.md  +1\n1 file changed, 1 insertion(+)\n" +
        "merged in from others (now in the working copy): 3 files\n" +
        "  added    new.md\n  deleted  old.md\n  changed  shared.md\n",
    );
    expect(readFileSync(path.join(box.workspace, "b", "new.md"), "utf8")).toBe("new\n");
    // A commit with nothing from others adds no such lines.
    writeFileSync(path.join(box.workspace, "b", "mine.md"), "mine\nmore\n");
    const plain = await quire(["commit", "b", "-m", "more"]);
    expect(plain.stdout).toBe("OK  generation 4\n  mine.md  +1\n1 file changed, 1 insertion(+)\n");
  });
});
