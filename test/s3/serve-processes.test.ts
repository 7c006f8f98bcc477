/**
 * Real processes on the real server: two `quire serve` processes — one `--store s3://`,
 * one `--store minio://`, same bucket, prefix and endpoint, separate private roots and
 * session directories — exchange commits and conflicts through MCP over stdio. And
 * `quire serve` refuses s3rver (no conditional writes) before serving anything.
 * Needs the build (`npm run test:s3` builds first).
 */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Effect } from "effect";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import { ObjectStore } from "../../src/ports/ObjectStore.js";
import { type Sandbox, assertBuilt, binPath, makeSandbox, runQuire } from "../cli/quireProcess.js";
import { freshPrefix, s3TestEnv, storeOptions, withEnv } from "./env.js";
import { closedPort, s3rver, s3rverCredentials } from "./servers.js";

const env = s3TestEnv();

/** The S3 variables the sandbox strips, put back: credentials reach quire only this way. */
const s3Env = (overrides: Readonly<Record<string, string>> = {}) => ({
  AWS_ACCESS_KEY_ID: env.accessKeyId,
  AWS_SECRET_ACCESS_KEY: env.secretAccessKey,
  AWS_REGION: env.region,
  ...overrides,
});

let sandboxes: Array<Sandbox> = [];
let clients: Array<Client> = [];
beforeAll(assertBuilt);
afterEach(async () => {
  await Promise.all(clients.map((client) => client.close()));
  clients = [];
  for (const sandbox of sandboxes) sandbox.cleanup();
  sandboxes = [];
});

const sandbox = () => {
  const created = makeSandbox();
  sandboxes.push(created);
  return created;
};

type Structured = Record<string, unknown>;

/** Spawns `quire serve --store <store> --endpoint <endpoint>` in its own sandbox and connects. */
const serve = async (
  store: string,
  extraEnv: Readonly<Record<string, string>> = {},
  // Processes that may share one need one host environment (the sandbox's runtime and
  // temporary directories), each with its own private root.
  shared?: { readonly box: Sandbox; readonly privateRoot: string },
) => {
  const box = shared?.box ?? sandbox();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      binPath,
      "serve",
      "--store",
      store,
      "--endpoint",
      env.endpoint,
      "--private-root",
      shared?.privateRoot ?? box.privateRoot,
    ],
    env: { ...box.env, ...s3Env(), ...extraEnv },
    cwd: box.workspace,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: `serve-${store.split(":")[0]}`, version: "0.0.1" });
  await client.connect(transport);
  clients.push(client);
  const call = async (name: "notes_pull" | "notes_commit", args: Record<string, string> = {}) => {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError === true, structured: result.structuredContent as Structured };
  };
  const pulled = await call("notes_pull");
  expect(pulled.isError, JSON.stringify(pulled.structured)).toBe(false);
  const directory = String(pulled.structured["path"]);
  return {
    directory,
    stderr: () => stderr,
    pull: () => call("notes_pull"),
    commit: (message: string) => call("notes_commit", { message }),
    write: (file: string, text: string) => writeFileSync(path.join(directory, file), text),
    read: (file: string) => readFileSync(path.join(directory, file), "utf8"),
  };
};

describe("two quire serve processes, s3:// and minio://, on one bucket and prefix", () => {
  it("exchange commits, merge disjoint edits, and report and resolve a conflict", async () => {
    const prefix = freshPrefix("serve");
    const viaS3 = await serve(`s3://${env.bucket}/${prefix}`);
    const viaMinio = await serve(`minio://${env.bucket}/${prefix}`);

    // A commit through S3 reaches the MinIO process.
    viaS3.write("shared.md", "line 1\nline 2\nline 3\n");
    const first = await viaS3.commit("add shared");
    expect(first.structured).toMatchObject({ code: "OK", generation: 1 });
    expect((await viaMinio.pull()).structured).toMatchObject({ code: "OK", generation: 1 });
    expect(viaMinio.read("shared.md")).toBe("line 1\nline 2\nline 3\n");

    // Disjoint concurrent edits merge (the second commit rebases on the first).
    viaS3.write("shared.md", "line 1 (s3)\nline 2\nline 3\n");
    viaMinio.write("shared.md", "line 1\nline 2\nline 3 (minio)\n");
    expect((await viaS3.commit("s3 edits line 1")).structured).toMatchObject({
      code: "OK",
      generation: 2,
    });
    expect((await viaMinio.commit("minio edits line 3")).structured).toMatchObject({
      code: "OK",
      generation: 3,
    });
    expect(viaMinio.read("shared.md")).toBe("line 1 (s3)\nline 2\nline 3 (minio)\n");
    await viaS3.pull();
    expect(viaS3.read("shared.md")).toBe("line 1 (s3)\nline 2\nline 3 (minio)\n");

    // Overlapping edits: the second committer gets CONTENT_CONFLICT and markers; nothing is published.
    viaS3.write("shared.md", "line 1 (s3)\nline 2 from s3\nline 3 (minio)\n");
    viaMinio.write("shared.md", "line 1 (s3)\nline 2 from minio\nline 3 (minio)\n");
    expect((await viaS3.commit("s3 rewrites line 2")).structured).toMatchObject({
      code: "OK",
      generation: 4,
    });
    const conflict = await viaMinio.commit("minio rewrites line 2");
    expect(conflict.isError).toBe(true);
    expect(conflict.structured).toMatchObject({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
    });
    const marked = viaMinio.read("shared.md");
    expect(marked).toContain("<<<<<<<");
    expect(marked).toContain("line 2 from s3");
    expect(marked).toContain("line 2 from minio");

    // Resolving and committing again publishes the resolution, which the S3 process pulls.
    viaMinio.write("shared.md", "line 1 (s3)\nline 2 from both\nline 3 (minio)\n");
    expect((await viaMinio.commit("resolve line 2")).structured).toMatchObject({
      code: "OK",
      generation: 5,
    });
    expect((await viaS3.pull()).structured).toMatchObject({ code: "OK", generation: 5 });
    expect(viaS3.read("shared.md")).toBe("line 1 (s3)\nline 2 from both\nline 3 (minio)\n");

    for (const text of [viaS3.stderr(), viaMinio.stderr()]) {
      expect(text).not.toContain(env.secretAccessKey);
    }
  });
});

describe("serve processes of one bucket store on one host", () => {
  const shareLog = { LOG_LEVEL: "share=debug,mcp=info,warn" };
  const ranForOthers = (stderr: string) =>
    stderr.match(/msg="running a call for another process"/g)?.length ?? 0;

  it("share one process, as on a file store; the calls run there publish as their own", async () => {
    const prefix = freshPrefix("share");
    const box = sandbox();
    const first = await serve(`s3://${env.bucket}/${prefix}`, shareLog, {
      box,
      privateRoot: path.join(box.root, "private-first"),
    });
    const second = await serve(`s3://${env.bucket}/${prefix}`, shareLog, {
      box,
      privateRoot: path.join(box.root, "private-second"),
    });
    second.write("from-second.md", "second\n");
    expect((await second.commit("from the second process")).structured).toMatchObject({
      code: "OK",
    });
    first.write("from-first.md", "first\n");
    expect((await first.commit("from the first process")).structured).toMatchObject({
      code: "OK",
    });
    expect((await second.pull()).structured).toMatchObject({ code: "OK" });
    expect(second.read("from-first.md")).toBe("first\n");
    // The first process ran the second's calls (its first pull too).
    expect(ranForOthers(first.stderr())).toBeGreaterThanOrEqual(2);
    expect(ranForOthers(second.stderr())).toBe(0);
  });

  it("never share between processes whose credentials come from different settings", async () => {
    const prefix = freshPrefix("share-credentials");
    const box = sandbox();
    const first = await serve(`s3://${env.bucket}/${prefix}`, shareLog, {
      box,
      privateRoot: path.join(box.root, "private-first"),
    });
    // Another profile (a credentials file naming the same keys, which the environment's
    // keys override anyway): another channel, so its calls run in its own process.
    const credentials = path.join(box.root, "credentials");
    writeFileSync(
      credentials,
      `[another-agent]\naws_access_key_id = ${env.accessKeyId}\naws_secret_access_key = ${env.secretAccessKey}\n`,
      { mode: 0o600 },
    );
    const other = await serve(
      `s3://${env.bucket}/${prefix}`,
      { ...shareLog, AWS_PROFILE: "another-agent", AWS_SHARED_CREDENTIALS_FILE: credentials },
      { box, privateRoot: path.join(box.root, "private-other") },
    );
    other.write("other.md", "other\n");
    expect((await other.commit("from another agent")).structured).toMatchObject({ code: "OK" });
    expect(ranForOthers(first.stderr())).toBe(0);
  });
});

describe("quire serve against s3rver (ignores conditional headers)", () => {
  it("exits non-zero with INCOMPATIBLE_STORE before serving, leaving no probe key", async () => {
    const box = sandbox();
    const prefix = freshPrefix("serve-s3rver");
    const { code, stdout, stderr, left } = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const endpoint = yield* s3rver("fake-bucket");
          const initialize = {
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: {
              protocolVersion: "2025-06-18",
              capabilities: {},
              clientInfo: { name: "t", version: "1" },
            },
          };
          const result = yield* Effect.promise(() =>
            runQuire(
              [
                "serve",
                "--store",
                `s3://fake-bucket/${prefix}`,
                "--endpoint",
                endpoint,
                "--private-root",
                box.privateRoot,
              ],
              {
                cwd: box.workspace,
                env: { ...box.env, ...s3Env(s3rverCredentials) },
                input: `${JSON.stringify(initialize)}\n`,
              },
            ),
          );
          // Listed in-process with s3rver's credentials: no probe key may be left behind.
          const left = yield* withEnv(
            s3rverCredentials,
            Effect.flatMap(ObjectStore, (store) => store.list("probe/")).pipe(
              Effect.provide(
                S3Store.layer({ ...storeOptions(env, prefix), bucket: "fake-bucket", endpoint }),
              ),
            ),
          );
          return { ...result, left };
        }),
      ),
    );
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(stdout).toBe("");
    expect(stderr).toContain("INCOMPATIBLE_STORE");
    expect(stderr).toContain("NO_CONDITIONAL_CREATE");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(left).toEqual([]);
  });
});

describe("quire pull/commit with a broken store configuration", () => {
  it("wrong credentials: ACCESS_DENIED on one stderr line, secrets nowhere", async () => {
    const box = sandbox();
    const secret = `wrongSecret${Math.random().toString(36).slice(2)}`;
    const result = await runQuire(
      [
        "pull",
        "notes",
        "--store",
        `s3://${env.bucket}/${freshPrefix("cli")}`,
        "--endpoint",
        env.endpoint,
        "--private-root",
        box.privateRoot,
      ],
      { cwd: box.workspace, env: { ...box.env, ...s3Env({ AWS_SECRET_ACCESS_KEY: secret }) } },
    );
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("ACCESS_DENIED");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    expect(`${result.stdout}${result.stderr}`).not.toContain(env.secretAccessKey);
  });

  it("an unreachable endpoint: a commit fails promptly and leaves the working copy untouched", async () => {
    const box = sandbox();
    const prefix = freshPrefix("cli");
    const args = (endpoint: string) => [
      "--store",
      `minio://${env.bucket}/${prefix}`,
      "--endpoint",
      endpoint,
      "--private-root",
      box.privateRoot,
    ];
    const options = { cwd: box.workspace, env: { ...box.env, ...s3Env() } };
    const pulled = await runQuire(["pull", "notes", ...args(env.endpoint)], options);
    expect(pulled.code, pulled.stderr).toBe(0);
    const file = path.join(box.workspace, "notes", "a.md");
    writeFileSync(file, "draft\n");
    const closed = await Effect.runPromise(closedPort);
    const result = await runQuire(["commit", "notes", "-m", "draft", ...args(closed)], options);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/STORE_UNAVAILABLE/);
    expect(readFileSync(file, "utf8")).toBe("draft\n");
    expect(readdirSync(path.join(box.workspace, "notes"))).toEqual(["a.md"]);
  });
});
