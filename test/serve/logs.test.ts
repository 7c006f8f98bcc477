/**
 * Logging, through real `quire serve` processes: exactly one start and one
 * completion record per tool call carrying the result's diagnosticId; LOG_LEVEL per
 * module and default (malformed → one warning, then info); and injected secrets — an
 * AWS secret key, an endpoint with user-info, 64-hex ids, the private root — in no
 * stderr line, no stdout message and no result.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertBuilt, findLeaks, makeWorld, runCli, type World, write } from "../helpers/cli.js";
import { call, fieldsOf, serve, type Served, type ToolResult } from "./serve.js";

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

/** A serve process on the world's file store with `env` on top of the world's (LOG_LEVEL included). */
const start = async (
  env: Readonly<Record<string, string>>,
  extra: ReadonlyArray<string> = [],
): Promise<Served> => {
  const served = await serve(
    ["--store", `file:${world.store}`, "--private-root", world.privateRoot, ...extra],
    { env: { ...world.env, ...env }, cwd: world.ws },
  );
  running.push(served);
  return served;
};

const records = (served: Served) =>
  served.stderrLines().map((line) => ({ line, fields: fieldsOf(line) }));

/** Waits until `count` completion records are on stderr. */
const completions = async (served: Served, count: number) => {
  await served.waitForLine(
    () =>
      served.stderrLines().filter((line) => line.includes('msg="tool call completed"')).length >=
      count,
  );
};

const hex64 = () => randomBytes(32).toString("hex");

describe("per-call records", () => {
  it("exactly one start and one completion record per call, with the result's diagnosticId, code and generation", async () => {
    const served = await start({ LOG_LEVEL: "debug" });
    const results: Array<ToolResult> = [];
    results.push(await call(served, "notes_pull"));
    const directory = results[0]?.text ?? "";
    write(directory, "a.md", "alpha\n");
    results.push(await call(served, "notes_commit", { message: "add a" }));
    results.push(await call(served, "notes_commit", { message: " " }));
    results.push(await call(served, "notes_pull", { path: "relative" }));
    results.push(await call(served, "notes_pull", { unknown: 1 }));
    write(directory, "a.md", "alpha\nbeta\n");
    results.push(await call(served, "notes_commit", { message: "edit a" }));
    await completions(served, results.length);

    const all = records(served);
    const started = all.filter((r) => r.fields["msg"] === "tool call started");
    const completed = all.filter((r) => r.fields["msg"] === "tool call completed");
    expect(started).toHaveLength(results.length);
    expect(completed).toHaveLength(results.length);
    const ids = started.map((r) => r.fields["diagnosticId"]);
    expect(new Set(ids).size).toBe(results.length);
    results.forEach((result, k) => {
      const start = started[k]?.fields ?? {};
      const done = completed[k]?.fields ?? {};
      expect(start).toMatchObject({ level: "info", module: "mcp" });
      expect(start["diagnosticId"]).toMatch(/^[0-9a-f]{16}$/);
      expect(done["diagnosticId"]).toBe(start["diagnosticId"]);
      expect(done["module"]).toBe("mcp");
      expect(done["durationMs"]).toMatch(/^\d+$/);
      expect(done["code"]).toBe(result.structured["code"]);
      if (result.isError) {
        expect(done["diagnosticId"]).toBe(result.structured["diagnosticId"]);
        expect(done["reason"]).toBe(result.structured["reason"]);
        expect(result.text).toContain(`diagnosticId: ${done["diagnosticId"]}`);
      } else {
        expect(done["generation"]).toBe(String(result.structured["generation"]));
      }
      // Every record naming this id is this call's; only one start and one completion among them.
      const mine = all.filter((r) => r.fields["diagnosticId"] === start["diagnosticId"]);
      expect(mine.filter((r) => r.fields["msg"] === "tool call started")).toHaveLength(1);
      expect(mine.filter((r) => r.fields["msg"] === "tool call completed")).toHaveLength(1);
    });
    expect(results.map((r) => r.structured["code"])).toEqual([
      "OK",
      "OK",
      "INVALID_REQUEST",
      "INVALID_REQUEST",
      "INVALID_REQUEST",
      "OK",
    ]);
    for (const { line } of all)
      expect(line).toMatch(/^ts=\S+ level=(trace|debug|info|warn|error|fatal) module=\w+ msg="/);
  });
});

describe("LOG_LEVEL", () => {
  const exercise = async (served: Served) => {
    await call(served, "notes_pull");
    await call(served, "notes_commit", { message: " " });
    await served.close();
    return records(served);
  };

  it("mcp=debug,warn: mcp records down to debug, other modules only warn and above", async () => {
    const all = await exercise(await start({ LOG_LEVEL: "mcp=debug,warn" }));
    expect(all.filter((r) => r.fields["msg"] === "tool call started")).toHaveLength(2);
    expect(all.filter((r) => r.fields["msg"] === "tool call completed")).toHaveLength(2);
    expect(all.some((r) => r.fields["msg"] === "serving MCP on stdio")).toBe(true);
    for (const { fields, line } of all) {
      if (fields["module"] !== "mcp")
        expect(["warn", "error", "fatal"], line).toContain(fields["level"]);
    }
    expect(all.some((r) => r.fields["msg"] === "quire serve starting")).toBe(false);
  });

  it("mcp=warn,info: no info records from mcp, info records from the others", async () => {
    const all = await exercise(await start({ LOG_LEVEL: "mcp=warn,info" }));
    expect(
      all.some((r) => r.fields["msg"] === "quire serve starting" && r.fields["module"] === "cli"),
    ).toBe(true);
    for (const { fields, line } of all) {
      if (fields["module"] === "mcp")
        expect(["warn", "error", "fatal"], line).toContain(fields["level"]);
      expect(fields["level"], line).not.toBe("debug");
    }
    expect(all.some((r) => r.fields["msg"] === "tool call started")).toBe(false);
  });

  it("malformed: one warning, then info everywhere", async () => {
    const all = await exercise(await start({ LOG_LEVEL: "mcp=loud,,=" }));
    const warnings = all.filter((r) => /malformed LOG_LEVEL/.test(r.line));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ level: "warn" });
    expect(all.some((r) => r.fields["msg"] === "quire serve starting")).toBe(true);
    expect(all.filter((r) => r.fields["msg"] === "tool call started")).toHaveLength(2);
    for (const { fields, line } of all)
      expect(fields["level"], line).not.toMatch(/^(debug|trace)$/);
  });
});

describe("injected secrets appear nowhere", () => {
  const secretKey = randomBytes(30).toString("base64url").slice(0, 40);
  const accessKeyId = `AKIA${randomBytes(8).toString("hex").toUpperCase()}`;
  const userInfoPassword = randomBytes(12).toString("base64url");
  const endpointWithUserInfo = `http://quire-user:${userInfoPassword}@127.0.0.1:1`;
  const secretEnv = {
    LOG_LEVEL: "debug",
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretKey,
  };

  /** Every needle that must not appear, and where it was found. */
  const leaksIn = (text: string, needles: ReadonlyArray<string>): ReadonlyArray<string> => [
    ...needles.filter((needle) => text.includes(needle)),
    ...findLeaks(text, { store: world.store, privateRoot: world.privateRoot }),
  ];

  it("a serve process's stderr, stdout and results", async () => {
    const ids = [hex64(), hex64(), hex64(), hex64()] as const;
    const served = await start(secretEnv);
    const results: Array<ToolResult> = [];
    results.push(await call(served, "notes_pull"));
    const directory = results[0]?.text ?? "";
    write(directory, "notes/a.md", `id ${ids[0]}\n`);
    results.push(
      await call(served, "notes_commit", { message: `commit ${ids[1]} ${endpointWithUserInfo}` }),
    );
    // Ids, URL user-info and the private root in arguments that error messages may echo.
    results.push(await call(served, "notes_pull", { path: `/nowhere/${ids[2]}` }));
    results.push(await call(served, "notes_pull", { path: `${ids[3]}/relative` }));
    results.push(await call(served, "notes_pull", { path: endpointWithUserInfo }));
    results.push(await call(served, "notes_pull", { path: world.privateRoot }));
    mkdirSync(path.join(world.privateRoot, "inside"), { recursive: true });
    results.push(
      await call(served, "notes_pull", { path: path.join(world.privateRoot, "inside") }),
    );
    results.push(
      await call(served, "notes_commit", {
        message: `${secretKey} ${accessKeyId}`,
        path: `/x/${ids[2]}`,
      }),
    );
    results.push(await call(served, "notes_pull", { path: `/${secretKey}` }));
    // Unknown tool names and field names are echoed in messages and log fields: the scrubber must catch them.
    // otherKeyId is in no environment variable: only the AKIA pattern can catch it.
    const otherKeyId = `ASIA${randomBytes(8).toString("hex").toUpperCase()}`;
    const echoed = [
      ids[0],
      secretKey,
      accessKeyId,
      otherKeyId,
      endpointWithUserInfo,
      world.privateRoot,
    ];
    for (const text of echoed) results.push(await call(served, text, {}));
    for (const text of echoed) results.push(await call(served, "notes_pull", { [text]: 1 }));
    await completions(served, results.length);
    await served.close();

    expect(results.map((r) => r.structured["code"])).toEqual([
      "OK",
      "OK",
      ...Array.from({ length: results.length - 2 }, () => "INVALID_REQUEST"),
    ]);
    // The echoes happened, scrubbed: each kind of secret left its redaction token behind.
    const shown = results.map((r) => r.text).join("\n");
    for (const token of ["<hex>", "<secret>", "<aws-key-id>", "://***@", "<private>"]) {
      expect(shown).toContain(token);
      expect(served.stderr()).toContain(token);
    }
    const needles = [
      secretKey,
      accessKeyId,
      otherKeyId,
      userInfoPassword,
      "quire-user:",
      ...ids,
      world.privateRoot,
    ];
    expect(leaksIn(served.stderr(), needles)).toEqual([]);
    expect(leaksIn(JSON.stringify(served.received), needles)).toEqual([]);
    for (const result of results) {
      expect(leaksIn(`${result.text}\n${JSON.stringify(result.structured)}`, needles)).toEqual([]);
    }
    // The log did see the calls (debug records included), so the check covered something.
    expect(served.stderrLines().length).toBeGreaterThan(2 * results.length);
  });

  it("an endpoint with user-info is refused in one scrubbed line", async () => {
    const run = await runCli(
      world,
      ["serve", "--store", "s3://bucket/prefix", "--endpoint", endpointWithUserInfo],
      { env: secretEnv },
    );
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr.split("\n").filter((line) => line !== "")).toHaveLength(1);
    expect(run.stderr).toMatch(/^quire: invalid configuration: /);
    expect(leaksIn(run.stderr, [secretKey, accessKeyId, userInfoPassword, "quire-user"])).toEqual(
      [],
    );
  });

  it("an s3 store at a closed loopback port: the startup failure names none of the credentials", async () => {
    const run = await runCli(
      world,
      [
        "serve",
        "--store",
        "s3://bucket/prefix",
        "--endpoint",
        "http://127.0.0.1:1",
        "--private-root",
        world.privateRoot,
      ],
      { env: { ...secretEnv, AWS_SESSION_TOKEN: `token-${secretKey}` } },
    );
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe("");
    const startupLines = run.stderr.split("\n").filter((line) => line.startsWith("quire: "));
    expect(startupLines).toHaveLength(1);
    expect(leaksIn(run.stderr, [secretKey, accessKeyId, world.privateRoot])).toEqual([]);
  });
});

describe("the CLI's records", () => {
  it("carry the diagnosticId the candid error text reports", async () => {
    const copy = world.copy("a");
    const run = await runCli(world, ["commit", copy, "-m", " "], { env: { LOG_LEVEL: "debug" } });
    expect(run.code).toBe(1);
    const id = /^diagnosticId: ([0-9a-f]{16})$/m.exec(run.stderr)?.[1];
    expect(id).toBeDefined();
    const lines = run.stderr.split("\n").filter((line) => line.startsWith("ts="));
    const mine = lines.filter((line) => fieldsOf(line)["diagnosticId"] === id);
    expect(mine.map((line) => fieldsOf(line)["msg"])).toEqual([
      "commit started",
      "commit completed",
    ]);
    expect(fieldsOf(mine[1] ?? "")).toMatchObject({
      module: "cli",
      code: "INVALID_REQUEST",
      reason: "MESSAGE_BLANK",
    });
  });
});
