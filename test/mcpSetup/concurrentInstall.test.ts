/**
 * Two real `quire mcp install` processes started together on one file: Cursor's
 * `~/.cursor/mcp.json` a symlink to VS Code's `~/.config/Code/User/mcp.json`, so both edit
 * the same file through two names. Each must find the other's entry kept: quire
 * processes take turns on a file (its lock file beside the real target), and the one
 * that comes second reads the file again. Without that, one rename overwrote the other
 * in a few rounds of a hundred while both reported "registered".
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readJsonEntry } from "../../src/app/mcpSetup/jsonEntry.js";
import { makeSandbox, runQuire, type Sandbox } from "../cli/quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

/**
 * Rounds of the race, one after another, as the reviewer's loop. With a small file the
 * lost edit needed one quire's rename to land between the other's last check and its
 * rename, two system calls apart, and happened in a few rounds of a hundred; a large
 * value in the file (two megabytes, as a client's settings could hold) makes that last
 * check a longer read, and without the lock an entry was lost in 1 to 8 rounds of 40
 * (measured: five runs of this test on a loaded two-core machine, 30 to 50 s each). A
 * deterministic test of the race is in test/adapters/nodeConfigFiles.test.ts.
 */
const rounds = 40;
const padding = "x".repeat(2 * 1024 * 1024);

/** One round in a fresh HOME: the two installs at once; what is wrong afterwards. */
const race = async (home: string, env: Record<string, string>): Promise<ReadonlyArray<string>> => {
  const shared = path.join(home, ".config", "Code", "User", "mcp.json");
  mkdirSync(path.dirname(shared), { recursive: true });
  mkdirSync(path.join(home, ".cursor"));
  writeFileSync(shared, `${JSON.stringify({ padding })}\n`);
  symlinkSync(shared, path.join(home, ".cursor", "mcp.json"));
  const clients = ["cursor", "vscode"];
  const ran = await Promise.all(
    clients.map((client) =>
      runQuire(["mcp", "install", client], { cwd: home, env: { ...env, HOME: home } }),
    ),
  );
  const problems = ran.flatMap((result, index) =>
    result.code === 0 && result.stderr === ""
      ? []
      : [`${clients[index]}: exit ${result.code}, ${result.stderr}`],
  );
  const text = readFileSync(shared, "utf8");
  for (const entryPath of [["mcpServers", "quire"], ["servers", "quire"], ["padding"]]) {
    const entry = readJsonEntry(text, entryPath);
    if (!(entry._tag === "Right" && entry.right !== undefined))
      problems.push(`${entryPath.join(".")} missing`);
  }
  // Nothing of quire's is left beside the file: no temporary file, no lock.
  for (const name of readdirSync(path.dirname(shared)))
    if (name.includes(".quire-")) problems.push(`${name} left`);
  rmSync(home, { recursive: true, force: true });
  return problems;
};

describe("two quire mcp install processes on one file at once", () => {
  it("keep both entries, every round", async () => {
    const scratch = mkdtempSync(path.join(box.root, "rounds-"));
    const problems: Array<string> = [];
    for (let round = 0; round < rounds; round += 1) {
      const found = await race(path.join(scratch, `home-${round}`), box.env);
      problems.push(...found.map((problem) => `round ${round}: ${problem}`));
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
