import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type Sandbox,
  assertBuilt,
  makeSandbox,
  packageVersion,
  runQuire,
} from "./quireProcess.js";

let sandbox: Sandbox;
beforeAll(assertBuilt);
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

const quire = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runQuire(args, { cwd: sandbox.workspace, env: { ...sandbox.env, ...env } });

/** Store flags that keep every test inside its sandbox. */
const storeFlags = () => [
  "--store",
  `file:${sandbox.store}`,
  "--private-root",
  sandbox.privateRoot,
];

const expectOneConfigLine = (result: { code: number | null; stdout: string; stderr: string }) => {
  expect(result.code).toBe(2);
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^quire: invalid configuration: [^\n]+\n$/);
};

describe("quire version and help", () => {
  it("prints the version, touching no configuration", async () => {
    const result = await quire(["version"], { QUIRE_STORE: "bogus", QUIRE_COMMIT_RETRIES: "x" });
    expect(result).toMatchObject({ code: 0, stdout: `quire ${packageVersion}\n`, stderr: "" });
    expect((await quire(["--version"])).stdout).toBe(`quire ${packageVersion}\n`);
  });

  it("prints help on stdout with status 0", async () => {
    const general = await quire(["-h"]);
    expect(general).toMatchObject({ code: 0, stderr: "" });
    expect(general.stdout).toMatch(/^quire — /);
    expect(general.stdout).toContain("quire commit PATH -m MESSAGE");
    const pull = await quire(["pull", "--help"]);
    expect(pull.code).toBe(0);
    expect(pull.stdout).toMatch(/^Usage: quire pull PATH/);
    expect((await quire(["commit", "-h"])).stdout).toContain("-m, --message");
  });
});

describe("invalid configuration", () => {
  it("is one line on stderr and status 2", async () => {
    expectOneConfigLine(await quire(["serve", "--store", "bogus"]));
    expectOneConfigLine(await quire(["pull"]));
    expectOneConfigLine(await quire([]));
    expectOneConfigLine(await quire(["frobnicate"]));
    expectOneConfigLine(await quire(["serve", "--commit-retries", "500"]));
    expectOneConfigLine(await quire(["serve"], { QUIRE_RETAINED_CHECKPOINTS: "65" }));
  });

  it("never echoes credentials", async () => {
    const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCY";
    const result = await quire([
      "serve",
      "--bucket",
      "bkt",
      "--endpoint",
      `https://id:${secret}@h.example`,
    ]);
    expectOneConfigLine(result);
    expect(result.stderr).not.toContain(secret);
  });

  it("refuses a workspace root that does not exist, or a private root inside it", async () => {
    const missing = await quire([
      "pull",
      "n",
      ...storeFlags(),
      "--workspace-root",
      path.join(sandbox.root, "nope"),
    ]);
    expectOneConfigLine(missing);
    expect(missing.stderr).toContain("is not an existing directory");
    expectOneConfigLine(
      await quire([
        "pull",
        "n",
        "--store",
        `file:${sandbox.store}`,
        "--workspace-root",
        ".",
        "--private-root",
        "state",
      ]),
    );
  });
});

describe("numeric options", () => {
  it("take only canonical decimal integers: a leading zero, a sign or spaces is a usage error (exit 2) naming the option", async () => {
    const copy = path.join(sandbox.workspace, "a");
    expect((await quire(["pull", copy, ...storeFlags()])).code).toBe(0);
    const refusals: ReadonlyArray<[ReadonlyArray<string>, string]> = [
      [["log", copy, "-n", "007"], "--max-count must be a whole number from 1 to 1000000"],
      [["log", copy, "--max-count", "00"], "--max-count must be a whole number from 1 to 1000000"],
      [["log", copy, "-n", "+5"], "--max-count must be"],
      [["log", copy, "-n", " 5"], "--max-count must be"],
      [["show", copy, "01"], "GEN must be a whole number from 1 to 999999999"],
      [["revert", copy, "0x1"], "GEN must be"],
      [
        ["pull", copy, "--commit-retries", "08"],
        "--commit-retries must be a whole number from 0 to 100",
      ],
      [["pull", copy, "--commit-retries", "00"], "--commit-retries must be"],
      [["pull", copy, "--checkpoint-packs", "0010"], "--checkpoint-packs must be"],
      [["pull", copy, "--retained-checkpoints", "01"], "--retained-checkpoints must be"],
      [["pull", copy, "--checkpoint-bytes", "064"], "--checkpoint-bytes must be"],
    ];
    for (const [args, message] of refusals) {
      const result = await quire([...args, ...storeFlags()]);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).toContain("written without leading zeros");
    }
    const env = await quire(["pull", copy, ...storeFlags()], { QUIRE_COMMIT_RETRIES: "07" });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain("QUIRE_COMMIT_RETRIES must be a whole number from 0 to 100");
    // Canonical numbers, 0 included where the range has it, are taken.
    for (const args of [
      ["log", copy, "-n", "7"],
      ["pull", copy, "--commit-retries", "0"],
      ["pull", copy, "--retained-checkpoints", "10"],
    ]) {
      const result = await quire([...args, ...storeFlags()]);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
    }
  });
});

describe("pull and commit", () => {
  it("round-trips a change and prints the diffstat report", async () => {
    const first = await quire(["pull", "notes", ...storeFlags()]);
    expect(first).toMatchObject({ code: 0, stdout: "OK  generation 0\n0 files changed\n" });
    writeFileSync(path.join(sandbox.workspace, "notes", "a.md"), "one\ntwo\n");

    // Flags after PATH or before it mean the same.
    const commit = await quire([...storeFlags(), "commit", "notes", "-m", "add a"]);
    expect(commit.code).toBe(0);
    expect(commit.stdout).toBe("OK  generation 1\n  a.md  +2\n1 file changed, 2 insertions(+)\n");
    expect(commit.stdout).not.toContain("\u001b[");

    const elsewhere = await quire(["pull", "copy", ...storeFlags()]);
    expect(elsewhere.stdout).toBe(
      "OK  generation 1\n  a.md  +2\n1 file changed, 2 insertions(+)\n",
    );
    expect(readFileSync(path.join(sandbox.workspace, "copy", "a.md"), "utf8")).toBe("one\ntwo\n");
  });

  it("reports a domain error on stderr with the candid text and status 1", async () => {
    await quire(["pull", "notes", ...storeFlags()]);
    const blank = await quire(["commit", "notes", "-m", " \t", ...storeFlags()]);
    expect(blank.code).toBe(1);
    expect(blank.stdout).toBe("");
    expect(blank.stderr).toMatch(/^INVALID_REQUEST · MESSAGE_BLANK\n/m);
    expect(blank.stderr).toMatch(
      /^action: FIX_REQUEST\nretryable: false\ndiagnosticId: [0-9a-f]{16}\n/m,
    );
    expect(blank.stderr).not.toContain("\u001b[");
  });

  it("commit before any pull is NOT_PULLED", async () => {
    const result = await quire(["commit", "fresh", "-m", "m", ...storeFlags()]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("INVALID_REQUEST · NOT_PULLED");
  });
});

describe("store probe", () => {
  it("an unreachable store is one redacted stderr line, status 1, nothing done", async () => {
    const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCY";
    const result = await quire(
      [
        "pull",
        "notes",
        "--store",
        "s3://bkt/p",
        "--endpoint",
        "http://127.0.0.1:1",
        "--private-root",
        sandbox.privateRoot,
      ],
      { AWS_ACCESS_KEY_ID: "AKIAABCDEFGHIJKLMNOP", AWS_SECRET_ACCESS_KEY: secret },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(
      /^quire: store unavailable: STORAGE_FAILURE · [A-Z_]+: [^\n]*\n$/,
    );
    expect(result.stderr).not.toContain(secret);
    expect(result.stderr).not.toContain("AKIAABCDEFGHIJKLMNOP");
  });
});
