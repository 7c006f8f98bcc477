/**
 * The startup probe through real `quire` processes: a store that breaks a promise of
 * the publication protocol is refused before anything is read or written. The broken
 * store is the file store behind the hidden fault-injection switch.
 */
import { existsSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox, runQuire } from "./quireProcess.js";

let sandbox: Sandbox;
beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(() => sandbox.cleanup());

describe("the startup probe", () => {
  it("refuses a store whose If-Match of a missing key creates it: INCOMPATIBLE_STORE/IF_MATCH_CREATES, nothing touched", async () => {
    const copy = path.join(sandbox.workspace, "copy");
    const args = ["--store", `file:${sandbox.store}`, "--private-root", sandbox.privateRoot];
    // As MinIO before RELEASE.2025-09-06 did, for every If-Match put below probe/.
    const env = { ...sandbox.env, QUIRE_FAULT_INJECTION: "put:probe/:if-match-creates:1" };
    const refused = await runQuire(["pull", copy, ...args], { cwd: sandbox.workspace, env });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(
      /^quire: incompatible store: INCOMPATIBLE_STORE · IF_MATCH_CREATES: .*does not exist/,
    );
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    // Nothing was read or written: no copy, no copy's private state, no probe key left.
    expect(existsSync(copy)).toBe(false);
    expect(existsSync(path.join(sandbox.privateRoot, "copies"))).toBe(false);
    const keys = (dir: string): ReadonlyArray<string> =>
      existsSync(dir)
        ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
            entry.isDirectory() ? keys(path.join(dir, entry.name)) : [entry.name],
          )
        : [];
    expect(keys(path.join(sandbox.store, "probe"))).toEqual([]);

    // The same store without the fault is accepted.
    const accepted = await runQuire(["pull", copy, ...args], {
      cwd: sandbox.workspace,
      env: sandbox.env,
    });
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});
