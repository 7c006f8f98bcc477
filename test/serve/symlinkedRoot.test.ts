/**
 * A workspace root given through a symlink (macOS's /tmp, a symlinked home): an agent
 * spells its paths as the root was given to it, and they name the same copies as the
 * canonical spelling; a path that leaves the root stays refused however it is spelt.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { type RawServe, startRawServe } from "../mcp/rawServe.js";

let sandbox: Sandbox;
let server: RawServe;
let link: string;

beforeAll(async () => {
  assertBuilt();
  sandbox = makeSandbox();
  // <root>/link → <root>, so <root>/link/ws is the workspace spelt through a symlink.
  link = path.join(sandbox.root, "link");
  symlinkSync(sandbox.root, link);
  mkdirSync(path.join(sandbox.root, "outside"));
  symlinkSync(path.join(sandbox.root, "outside"), path.join(sandbox.workspace, "leads-out"));
  server = await startRawServe(
    [
      "--store",
      `file:${sandbox.store}`,
      "--private-root",
      sandbox.privateRoot,
      "--workspace-root",
      path.join(link, "ws"),
    ],
    { env: sandbox.env, cwd: sandbox.workspace },
  );
});
afterAll(() => {
  server.kill();
  sandbox.cleanup();
});

const pull = async (where: string) =>
  (await server.callTool({ name: "notes_pull", arguments: { path: where } })).result?.[
    "structuredContent"
  ];

describe("a workspace root given through a symlink", () => {
  it("a path spelt as the root was given names the copy below the canonical root", async () => {
    expect(await pull(path.join(link, "ws", "c"))).toMatchObject({
      code: "OK",
      path: path.join(sandbox.workspace, "c"),
    });
    // The canonical spelling is the same copy.
    expect(await pull(path.join(sandbox.workspace, "c"))).toMatchObject({
      code: "OK",
      path: path.join(sandbox.workspace, "c"),
    });
  });

  it("once the link leads elsewhere, a path spelt through it is refused, not taken to the old place", async () => {
    const elsewhere = path.join(sandbox.root, "elsewhere");
    mkdirSync(path.join(elsewhere, "ws", "c"), { recursive: true });
    rmSync(link);
    symlinkSync(elsewhere, link);
    try {
      // Only a person can fix it (retrying never helps): not retryable, and it says what to do.
      expect(await pull(path.join(link, "ws", "c"))).toMatchObject({
        code: "ENGINE_FAILED",
        reason: "ROOT_CHANGED",
        action: "CHECK_CONFIGURATION",
        retryable: false,
        message: expect.stringContaining("Put the directory back"),
      });
      expect(readdirSync(path.join(elsewhere, "ws", "c"))).toEqual([]);
      // The canonical spelling still works.
      expect(await pull(path.join(sandbox.workspace, "c"))).toMatchObject({ code: "OK" });
    } finally {
      rmSync(link);
      symlinkSync(sandbox.root, link);
    }
  });

  it("a path outside the root stays refused, spelt either way, and so does a symlink leading out", async () => {
    for (const outside of [
      path.join(link, "outside"),
      path.join(sandbox.root, "outside"),
      // Sent with its `..`: the server resolves it.
      `${link}/ws/../outside`,
    ])
      expect(await pull(outside), outside).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "PATH_OUTSIDE_ROOT",
      });
    expect(await pull(path.join(link, "ws", "leads-out", "x"))).toMatchObject({
      code: "INVALID_REQUEST",
      reason: "PATH_OUTSIDE_ROOT",
    });
  });

  it("once the workspace root is gone, a call says so, not retryable, and works once it is back", async () => {
    const aside = path.join(sandbox.root, "ws-aside");
    renameSync(sandbox.workspace, aside);
    try {
      expect(await pull(path.join(sandbox.workspace, "c"))).toMatchObject({
        code: "ENGINE_FAILED",
        reason: "ROOT_CHANGED",
        action: "CHECK_CONFIGURATION",
        retryable: false,
        message: expect.stringContaining("no longer exists as a directory"),
      });
    } finally {
      renameSync(aside, sandbox.workspace);
    }
    expect(await pull(path.join(sandbox.workspace, "c"))).toMatchObject({ code: "OK" });
  });
});
