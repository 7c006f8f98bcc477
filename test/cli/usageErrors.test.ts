/**
 * Usage errors as a person types them, through real `quire` processes: each is exit 2,
 * one line on stderr that names what to type instead, and nothing written. The
 * spellings other tools use for an option quire has (`git log -5`, `--limit 5`) are
 * refused with a pointer to quire's own, never ignored.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeSandbox, runQuire, type Sandbox } from "./quireProcess.js";
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
