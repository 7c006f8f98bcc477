/**
 * makeDirectories (`mkdir -p` without Node's recursive mkdir) on the real file system:
 * what it creates and answers, the errors of a file in the way, and no endless loop
 * where the system refuses a name under an existing directory (`/proc`).
 */
import { existsSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeDirectories } from "../../src/adapters/makeDirectories.js";

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "quire-mkdirs-")));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const codeOf = async (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => "resolved",
    (error: unknown) =>
      typeof error === "object" && error !== null && "code" in error ? error.code : error,
  );

describe("makeDirectories", () => {
  it("creates every missing directory with the mode and answers the topmost it created", async () => {
    const deep = path.join(root, "a", "b", "c");
    expect(await makeDirectories(deep, 0o700)).toBe(path.join(root, "a"));
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(path.join(root, "a", "b")).mode & 0o777).toBe(0o700);
    expect(await makeDirectories(deep, 0o700)).toBeUndefined();
    expect(await makeDirectories(path.join(deep, "d"), 0o700)).toBe(path.join(deep, "d"));
  });

  it("many at once on one deep path all succeed (a parent another made meanwhile is no refusal)", async () => {
    for (let round = 0; round < 20; round++) {
      const base = path.join(root, `r${round}`);
      const paths = Array.from({ length: 16 }, (_, k) =>
        path.join(base, "a", "b", "c", k % 2 === 0 ? "d" : "e"),
      );
      const results = await Promise.allSettled(paths.map((p) => makeDirectories(p, 0o700)));
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
      expect(statSync(path.join(base, "a", "b", "c", "e")).isDirectory()).toBe(true);
    }
  });

  it("refuses a file in the way as the system does", async () => {
    const file = path.join(root, "f");
    writeFileSync(file, "x");
    expect(await codeOf(makeDirectories(file, 0o700))).toBe("EEXIST");
    expect(await codeOf(makeDirectories(path.join(file, "sub", "deeper"), 0o700))).toBe("ENOTDIR");
  });

  it.runIf(existsSync("/proc/self"))(
    "rejects a name /proc refuses instead of retrying it forever (Node's recursive mkdir never returns)",
    async () => {
      expect(await codeOf(makeDirectories("/proc/quire-no-such/store/objects", 0o700))).toBe(
        "ENOENT",
      );
    },
  );
});
