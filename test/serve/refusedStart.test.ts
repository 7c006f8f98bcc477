/**
 * A `serve` (or `pull`) that refuses to start leaves nothing it created: not the private
 * root, not the file store's directory, not a session's directories. Real processes,
 * for every refusal of start-up: overlapping directories (through a symlink too), a
 * store that fails the probe, a workspace root that is not a directory.
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox, runQuire } from "../cli/quireProcess.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

/**
 * Every path below the sandbox, relative, sorted; but the launcher's compile cache
 * (bin/quire.js: Node 22.8+ keeps compiled code in `node-compile-cache` of the temporary
 * directory, which is the sandbox's), made before quire starts and kept on purpose.
 */
const tree = (): ReadonlyArray<string> =>
  (readdirSync(box.root, { recursive: true }) as Array<string>)
    .filter((entry) => !entry.split(path.sep).includes("node-compile-cache"))
    .sort();

describe("a refused start", () => {
  it("leaves nothing it created, whichever check refuses it", async () => {
    const link = path.join(box.root, "link");
    symlinkSync(box.workspace, link);
    writeFileSync(path.join(box.root, "a-file"), "x");
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, number, string]> = [
      // The private root inside the workspace through a symlink (the parser sees it outside).
      [
        ["--workspace-root", box.workspace, "--private-root", path.join(link, "priv", "deep")],
        2,
        "overlap",
      ],
      // The same, with the default store: not even the default store is made.
      [["--workspace-root", box.workspace, "--private-root", path.join(link, "p")], 2, "overlap"],
      // The file store inside the workspace through a symlink.
      [
        [
          "--workspace-root",
          box.workspace,
          "--private-root",
          path.join(box.root, "new", "priv"),
          "--store",
          `file:${path.join(link, "store")}`,
        ],
        2,
        "overlap",
      ],
      // The store and the private root overlap.
      [
        [
          "--private-root",
          path.join(box.root, "q", "priv"),
          "--store",
          `file:${path.join(box.root, "q")}`,
        ],
        2,
        "overlap",
      ],
      // A store that fails the probe (its directory is a file): a root workspace, and a session.
      [
        [
          "--workspace-root",
          box.workspace,
          "--private-root",
          path.join(box.root, "new", "priv"),
          "--store",
          `file:${path.join(box.root, "a-file")}`,
        ],
        1,
        "compatibility probe",
      ],
      [
        [
          "--private-root",
          path.join(box.root, "new", "priv"),
          "--store",
          `file:${path.join(box.root, "a-file")}`,
        ],
        1,
        "compatibility probe",
      ],
      // A workspace root that is not a directory.
      [
        [
          "--workspace-root",
          path.join(box.root, "missing"),
          "--private-root",
          path.join(box.root, "new", "priv"),
        ],
        2,
        "not an existing directory",
      ],
    ];
    const before = tree();
    for (const [options, code, message] of cases) {
      const serve = await runQuire(["serve", ...options], { cwd: box.workspace, env: box.env });
      expect(serve.stderr).toContain(message);
      expect(serve.code).toBe(code);
      expect({ options, tree: tree() }).toEqual({ options, tree: before });
      // A CLI command starts the same way.
      if (!options.includes("--workspace-root")) continue;
      const pull = await runQuire(["pull", ...options, "."], { cwd: box.workspace, env: box.env });
      expect(pull.code).not.toBe(0);
      expect({ pull: options, tree: tree() }).toEqual({ pull: options, tree: before });
    }
    expect(existsSync(path.join(box.workspace, "priv"))).toBe(false);
  });

  it("keeps a private root that was there before", async () => {
    const privateRoot = path.join(box.root, "mine");
    mkdirSync(privateRoot);
    writeFileSync(path.join(box.root, "a-file"), "x");
    const result = await runQuire(
      ["serve", "--private-root", privateRoot, "--store", `file:${path.join(box.root, "a-file")}`],
      { cwd: box.workspace, env: box.env },
    );
    expect(result.code).toBe(1);
    expect(existsSync(privateRoot)).toBe(true);
  });

  it("does not break a start that makes the same new private root at the same instant", async () => {
    // The refused start removes the directories it made while they are empty; the other
    // start's sessions/ (or private root) could vanish before its session was recorded.
    // test/app/sessionClaimRace.test.ts makes that interleaving certain; here it is raced.
    writeFileSync(path.join(box.root, "a-file"), "x");
    for (let round = 0; round < 6; round++) {
      const privateRoot = path.join(box.root, `race-${round}`, "priv");
      const start = (store: string) =>
        runQuire(["serve", "--no-share", "--private-root", privateRoot, "--store", store], {
          cwd: box.workspace,
          env: box.env,
        });
      const [accepted, ...refused] = await Promise.all([
        start(`file:${box.store}`),
        start(`file:${path.join(box.root, "a-file")}`),
        start(`file:${path.join(box.root, "a-file")}`),
      ]);
      for (const one of refused) expect(one.stderr).toContain("compatibility probe");
      expect({ round, stderr: accepted.stderr.includes("cannot"), code: accepted.code }).toEqual({
        round,
        stderr: false,
        code: 0,
      });
    }
  });
});
