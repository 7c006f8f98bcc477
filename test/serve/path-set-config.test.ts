/**
 * Path sets at startup through real processes: `--writable`/`--read-only`
 * (repeatable, comma-separated) and `QUIRE_WRITABLE`/`QUIRE_READ_ONLY` are normalised
 * (NFC, no `./`, no trailing `/`), de-duplicated and sorted before being advertised;
 * flags override the environment; a bad entry refuses startup with one redacted line.
 */
import { randomBytes } from "node:crypto";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertBuilt, makeWorld, runCli, type World } from "../helpers/cli.js";
import { call, serve, type Served } from "./serve.js";

let world: World;
let running: Array<Served> = [];
beforeAll(assertBuilt);
beforeEach(() => {
  world = makeWorld();
});
afterEach(async () => {
  await Promise.all(running.map((served) => served.close()));
  running = [];
  world.cleanup();
});

const start = async (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) => {
  const served = await serve(["--workspace-root", world.ws, ...args], {
    env: { ...world.env, ...env },
    cwd: world.ws,
  });
  running.push(served);
  return served;
};

describe("configured path sets", () => {
  it("environment lists are normalised, de-duplicated and sorted, and advertised on all four surfaces", async () => {
    const served = await start([], {
      QUIRE_WRITABLE: "./notes/,cafe\u0301,notes,b",
      QUIRE_READ_ONLY: "notes/fixed/,notes/fixed",
    });
    const pulled = await call(served, "notes_pull");
    expect(pulled.structured).toMatchObject({
      code: "OK",
      writable: ["b", "café", "notes"],
      readOnly: ["notes/fixed"],
    });
    expect(pulled.text).toBe(
      `${world.ws} (writable: b, café, notes; read-only: notes/fixed; longest match decides)`,
    );
    const writableSentence =
      "Writable paths: `b`, `café`, `notes`. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.";
    const readOnlySentence =
      "Read-only paths: `notes/fixed`. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; where the two sets nest, the longest matching entry decides.";
    const suffix = ` ${writableSentence} ${readOnlySentence}`;
    expect(served.client.getInstructions()?.endsWith(suffix)).toBe(true);
    const { tools } = await served.client.listTools();
    for (const tool of tools) expect(tool.description?.endsWith(suffix)).toBe(true);
    const refused = await call(served, "notes_commit", { message: "" });
    expect(refused.structured).toMatchObject({
      code: "INVALID_REQUEST",
      writable: ["b", "café", "notes"],
      readOnly: ["notes/fixed"],
    });
    expect(refused.text.split("\n").slice(-2)).toEqual([
      "readOnly: notes/fixed",
      "writable: b, café, notes",
    ]);
  });

  it("flags (repeatable and comma-separated) override the environment, set by set", async () => {
    const served = await start(["--writable", "z,y", "--writable", "x"], {
      QUIRE_WRITABLE: "env-only",
      QUIRE_READ_ONLY: "docs",
    });
    const pulled = await call(served, "notes_pull");
    expect(pulled.structured).toMatchObject({ writable: ["x", "y", "z"], readOnly: ["docs"] });
  });

  const secret = randomBytes(24).toString("base64url");
  const bad: ReadonlyArray<readonly [string, ReadonlyArray<string>, Record<string, string>]> = [
    ["a parent segment", ["--writable", "notes/../x"], {}],
    ["an absolute entry", ["--read-only", "/etc"], {}],
    ["the notebook root", ["--writable", "./"], {}],
    ["a reserved name", ["--read-only", "docs/CON"], {}],
    ["an empty segment", ["--writable", "a//b"], {}],
    ["an entry in both sets", ["--writable", "Docs", "--read-only", "docs"], {}],
    ["a bad environment entry", [], { QUIRE_READ_ONLY: "ok,../up" }],
    [
      "an entry spelling a secret",
      ["--writable", `${secret}/..`],
      { AWS_SECRET_ACCESS_KEY: secret },
    ],
  ];
  for (const [what, args, env] of bad) {
    it(`refuses to start with ${what}: one redacted line, exit 2, nothing served`, async () => {
      const run = await runCli(world, ["serve", "--workspace-root", world.ws, ...args], { env });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      const lines = run.stderr.split("\n").filter((line) => line !== "");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^quire: invalid configuration: invalid path set: /);
      expect(run.stderr).not.toContain(secret);
    });
  }
});
