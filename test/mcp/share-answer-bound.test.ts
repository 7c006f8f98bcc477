// An answer larger than a caller reads (src/app/share/protocol.ts, maxAnswerBytes: about
// 16 MiB, 100,000 listed files) must still be true: the sharing process did the work, so
// a caller that dropped the answer and ran the call again would answer OK with what was
// left (a pull: nothing). Real `serve` processes; the bound is lowered through the hidden
// QUIRE_SHARE_ANSWER_BYTES (both processes), so a few hundred files reach it.
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { type Served, serve } from "../serve/serve.js";

type Structured = Record<string, unknown>;

let sandbox: Sandbox;
const served: Array<Served> = [];
const answerBytes = 48 * 1_024;
const fileCount = 1_200;

/** A `serve` on the sandbox's store (or `store`), its answers bounded low unless `bounded` is false. */
const start = async (
  name: string,
  { store = sandbox.store, bounded = true }: { store?: string; bounded?: boolean } = {},
): Promise<Served> => {
  const server = await serve(
    ["--store", `file:${store}`, "--private-root", path.join(sandbox.root, `p-${name}`)],
    {
      env: {
        ...sandbox.env,
        ...(bounded ? { QUIRE_SHARE_ANSWER_BYTES: String(answerBytes) } : {}),
        LOG_LEVEL: "share=debug,mcp=info,warn",
      },
      cwd: path.join(sandbox.root, `ws-${store === sandbox.store ? "main" : "other"}`),
    },
  );
  served.push(server);
  return server;
};

const call = async (server: Served, tool: string, args: Record<string, unknown> = {}) => {
  const result = await server.client.callTool({ name: tool, arguments: args }, undefined, {
    timeout: 120_000,
  });
  return result.structuredContent as Structured;
};

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
  mkdirSync(path.join(sandbox.root, "ws-main"));
  mkdirSync(path.join(sandbox.root, "ws-other"));
});

/** Pulls a copy in `server` and publishes {@link fileCount} notes of two lines from it. */
const publishMany = async (server: Served): Promise<void> => {
  const first = await call(server, "notes_pull");
  expect(first["code"]).toBe("OK");
  const dir = String(first["path"]);
  mkdirSync(path.join(dir, "notes"));
  for (let i = 0; i < fileCount; i++)
    writeFileSync(path.join(dir, "notes", `note-${String(i).padStart(5, "0")}.md`), "one\ntwo\n");
  const committed = await call(server, "notes_commit", { message: "many" });
  expect(committed["code"], JSON.stringify(committed).slice(0, 500)).toBe("OK");
  expect(committed["filesChanged"]).toBe(fileCount);
};
afterAll(async () => {
  await Promise.all(served.map((server) => server.client.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("an answer over the caller's bound", () => {
  it("a pull run by the sharing process reports every file it wrote, some unlisted", async () => {
    const sharer = await start("a");
    await publishMany(sharer);

    const caller = await start("b");
    const pulled = await call(caller, "notes_pull");
    expect(caller.stderr()).not.toContain("running the calls of other serve processes");
    expect(sharer.stderr()).toContain('msg="running a call for another process"');
    // Before: the answer was dropped, the pull ran again in the caller, found its copy
    // already written and answered OK with no files.
    expect(pulled["code"], JSON.stringify(pulled).slice(0, 500)).toBe("OK");
    expect(pulled["filesChanged"]).toBe(fileCount);
    expect(pulled["insertions"]).toBe(2 * fileCount);
    const listed = pulled["files"] as ReadonlyArray<unknown>;
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.length).toBeLessThan(fileCount);
    expect(pulled["filesNotListed"]).toBe(fileCount - listed.length);
    expect(caller.stderr()).not.toContain("running the call here");
  });

  it("a caller reading less than the sharing process sends never shares with it: its own run reports every file", async () => {
    const other = path.join(sandbox.root, "other-store");
    const sharer = await start("c", { store: other, bounded: false });
    await publishMany(sharer);
    const caller = await start("d", { store: other });
    const pulled = await call(caller, "notes_pull");
    // Before: the sharer ran the pull and sent more than this caller reads; the caller
    // dropped it, ran the pull again, found the copy written and answered OK, no files.
    expect(pulled["code"], JSON.stringify(pulled).slice(0, 500)).toBe("OK");
    expect(pulled["filesChanged"]).toBe(fileCount);
    expect((pulled["files"] as ReadonlyArray<unknown>).length).toBe(fileCount);
    expect(sharer.stderr()).not.toContain('msg="running a call for another process"');
  });
});
