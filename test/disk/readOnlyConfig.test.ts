/**
 * A client's configuration on a read-only mount (a project checked out on a read-only
 * bind mount, a home on a read-only image): `quire mcp status` says install would refuse
 * and why, and `quire mcp install` refuses before writing anything — no backup, no temp
 * file, the file unchanged — with what to do instead.
 *
 * Needs root (it mounts a tmpfs and remounts it read-only): `npm run test:disk`, run by
 * CI as root.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox, runQuire } from "../cli/quireProcess.js";
import { mountTmpfs, unmountTmpfs } from "./tmpfs.js";

let mountPoint = "";
let box: Sandbox;

beforeAll(() => {
  assertBuilt();
  box = makeSandbox();
  mountPoint = mountTmpfs("quire-read-only-config-", "1m");
});

afterAll(() => {
  unmountTmpfs(mountPoint);
  box.cleanup();
});

describe("quire mcp and a configuration on a read-only file system", () => {
  it("status says install would refuse and why; install refuses, writing nothing", async () => {
    const project = path.join(mountPoint, "project");
    mkdirSync(project);
    const file = path.join(project, ".mcp.json");
    writeFileSync(file, "{}\n");
    execFileSync("mount", ["-o", "remount,ro", mountPoint]);
    const quire = (args: ReadonlyArray<string>) => runQuire(args, { cwd: project, env: box.env });

    const status = await quire(["mcp", "status"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      `claude-code project: ${file}\n  not registered\n  quire mcp would refuse to edit it: it is on a read-only file system; remount it read-write`,
    );
    // A missing file would be created in the read-only directory.
    expect(status.stdout).toContain(
      `cursor project: ${project}/.cursor/mcp.json\n  not registered (no file)\n  quire mcp would refuse to edit it: the directory ${project} is on a read-only file system`,
    );

    for (const client of ["claude-code", "cursor"]) {
      const installed = await quire(["mcp", "install", client, "--scope", "project"]);
      expect(installed.code, installed.stderr).toBe(1);
      expect(installed.stderr).toContain("read-only file system");
      expect(installed.stderr).toContain("nothing was written");
      expect(installed.stderr).not.toMatch(/internal error|\n\s+at /);
    }
    expect(readFileSync(file, "utf8")).toBe("{}\n");
    expect(readdirSync(project)).toEqual([".mcp.json"]);
  });
});
