/**
 * A `quire` started in a directory that has since been removed (a terminal left in a
 * deleted checkout, a client started from a vanished session directory): `process.cwd()`
 * throws there, and every command, `quire version` included, ended with exit 70 and
 * "internal error: ENOENT … uv_cwd". Version and help need no directory; the others say
 * what happened and what to do, as invalid configuration.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { binPath, makeSandbox, type Sandbox } from "./quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

/** Runs quire in a directory removed just before it starts. */
const inRemovedDirectory = (...args: ReadonlyArray<string>) => {
  const gone = path.join(box.root, "gone");
  mkdirSync(gone);
  return spawnSync(
    "/bin/sh",
    [
      "-c",
      'cd "$1" && rmdir "$1" && shift && exec "$@"',
      "sh",
      gone,
      process.execPath,
      binPath,
      ...args,
    ],
    { env: box.env, encoding: "utf8", input: "" },
  );
};

const advice =
  "the current directory no longer exists (it was removed or moved); cd to an existing directory and run it again";

it("version and help work without a current directory", () => {
  const version = inRemovedDirectory("version");
  expect(version.stderr).toBe("");
  expect(version.status).toBe(0);
  expect(version.stdout).toMatch(/^quire \d/);
  expect(inRemovedDirectory("mcp", "-h").status).toBe(0);
});

it.each([
  ["serve", ["serve"], "quire: invalid configuration: "],
  ["pull", ["pull", "notes"], "quire: invalid configuration: "],
  // Parsed against a stand-in directory, this said the private root was below it.
  [
    "pull --workspace-root .",
    ["pull", "notes", "--workspace-root", "."],
    "quire: invalid configuration: ",
  ],
  ["mcp status", ["mcp", "status"], "quire mcp: "],
])("%s says the directory is gone, exit 2, no internal error", (_, args, prefix) => {
  const run = inRemovedDirectory(...args);
  expect(run.stderr).toBe(`${prefix}${advice}\n`);
  expect(run.status).toBe(2);
});
