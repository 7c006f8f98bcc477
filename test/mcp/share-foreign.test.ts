// The sharing channel's directory replaced while serve processes run (src/app/share,
// adapters/unixSocketChannel.ts): removed (a tmp cleaner, `rm -rf`) and made again,
// open to other users, by someone else, with a listener at the store's socket that
// answers every call with a made-up success. A caller must never send a call there, nor
// report OK for a commit it did not publish.
import { chmodSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { type Served, serve } from "../serve/serve.js";

type Structured = Record<string, unknown>;

let sandbox: Sandbox;
const served: Array<Served> = [];
let impostor: net.Server | undefined;

const start = async (name: string, extra: ReadonlyArray<string> = []): Promise<Served> => {
  const server = await serve(
    [
      "--store",
      `file:${sandbox.store}`,
      "--private-root",
      path.join(sandbox.root, `private-${name}`),
      ...extra,
    ],
    { env: { ...sandbox.env, LOG_LEVEL: "share=debug,mcp=info,warn" }, cwd: sandbox.workspace },
  );
  served.push(server);
  return server;
};

const call = async (server: Served, tool: string, args: Record<string, unknown> = {}) => {
  const result = await server.client.callTool({ name: tool, arguments: args });
  return result.structuredContent as Structured;
};

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(async () => {
  impostor?.close();
  await Promise.all(served.map((server) => server.client.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("a sharing channel directory replaced by one open to others", () => {
  it("gets no call, and no made-up success is reported", async () => {
    const sharer = await start("a");
    const caller = await start("b");
    const solo = await start("solo", ["--no-share"]);
    expect((await call(sharer, "notes_pull"))["code"]).toBe("OK");
    const pulled = await call(caller, "notes_pull");
    expect(pulled["code"]).toBe("OK");
    const copy = String(pulled["path"]);
    expect(sharer.stderr()).toContain("running a call for another process");

    // The directory goes; someone makes it again, open to everyone, and listens at the
    // store's socket, answering every call with a success of its own making.
    const directory = path.join(sandbox.env["TMPDIR"] ?? "", `quire-${process.getuid?.()}`);
    const socket = readdirSync(directory).find((entry) => entry.endsWith(".sock"));
    expect(socket).toBeDefined();
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory);
    chmodSync(directory, 0o777);
    const received: Array<string> = [];
    impostor = net.createServer((connection) => {
      connection.on("data", (chunk) => {
        received.push(chunk.toString("utf8"));
        connection.end(`+${JSON.stringify({ ok: { path: copy, generation: 999, files: [] } })}\n`);
      });
    });
    await new Promise<void>((resolve) =>
      impostor?.listen(path.join(directory, socket ?? ""), resolve),
    );

    writeFileSync(path.join(copy, "kept.md"), "kept\n");
    const committed = await call(caller, "notes_commit", { message: "kept" });

    // Nothing of the call reached the impostor, and what the caller reports is true.
    expect(received).toEqual([]);
    expect(committed["generation"]).not.toBe(999);
    expect(committed["code"], JSON.stringify(committed)).toBe("OK");
    const final = await call(solo, "notes_pull");
    expect(final["code"]).toBe("OK");
    expect(readFileSync(path.join(String(final["path"]), "kept.md"), "utf8")).toBe("kept\n");
    // And the caller says why it stopped sharing, once, not on every call.
    const more = await call(caller, "notes_pull");
    expect(more["code"]).toBe("OK");
    const warnings = caller
      .stderrLines()
      .filter((line) => line.includes("cannot share this process; every call runs here"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("is not a directory private to this user");
  });
});
