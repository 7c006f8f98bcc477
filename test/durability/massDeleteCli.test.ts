/**
 * Issue 5, done-when 4, through the real executable: `rm -r` of a whole working copy
 * followed by commit is refused with MASS_DELETE; `--allow-mass-delete` (or
 * QUIRE_ALLOW_MASS_DELETE=1) lets it through. Needs the build (`npm test` builds).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = path.join(repoRoot, "bin", "quire.js");
const root = mkdtempSync(path.join(tmpdir(), "quire-massdelete-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
for (const dir of ["home", "tmp", "ws"]) mkdirSync(path.join(root, dir));

const quire = (args: ReadonlyArray<string>, extraEnv: Record<string, string> = {}) => {
  const result = spawnSync(
    process.execPath,
    [bin, ...args, "--store", `file:${root}/store`, "--private-root", `${root}/private`],
    {
      cwd: path.join(root, "ws"),
      encoding: "utf8",
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: path.join(root, "home"),
        TMPDIR: path.join(root, "tmp"),
        XDG_DATA_HOME: path.join(root, "data"),
        XDG_CACHE_HOME: path.join(root, "cache"),
        ...extraEnv,
      },
    },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
};

const files = (dir: string): string[] =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: "utf8" }).sort() : [];

describe("quire commit after rm -r of the working copy", () => {
  it("is refused with MASS_DELETE, and allowed with --allow-mass-delete or the environment", () => {
    if (!existsSync(path.join(repoRoot, "dist", "src", "app", "cli", "main.js")))
      throw new Error("dist/ is missing: run `npm run build` first");
    const copy = path.join(root, "ws", "notes");
    expect(quire(["pull", "notes"]).status).toBe(0);
    for (const name of ["a.md", "b.md", "c.md"]) writeFileSync(path.join(copy, name), `${name}\n`);
    expect(quire(["commit", "notes", "-m", "three"]).status).toBe(0);

    for (const name of readdirSync(copy)) rmSync(path.join(copy, name), { recursive: true });
    const refused = quire(["commit", "notes", "-m", "oops"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("INVALID_REQUEST · MASS_DELETE");
    expect(refused.stderr).toContain("every file of the notebook (3)");
    expect(files(copy)).toEqual([]);
    expect(quire(["pull", "other"]).status).toBe(0);
    expect(files(path.join(root, "ws", "other"))).toEqual(["a.md", "b.md", "c.md"]);

    const allowed = quire(["commit", "notes", "-m", "clear", "--allow-mass-delete"]);
    expect(allowed.status).toBe(0);
    expect(allowed.stdout).toMatch(/^OK  generation 2\n[^]*3 files changed/);
    expect(quire(["pull", "other"]).status).toBe(0);
    expect(files(path.join(root, "ws", "other"))).toEqual([]);

    // The same through the environment, from the other copy after re-adding files.
    for (const name of ["x.md", "y.md"])
      writeFileSync(path.join(root, "ws", "other", name), `${name}\n`);
    expect(quire(["commit", "other", "-m", "two"]).status).toBe(0);
    for (const name of ["x.md", "y.md"]) rmSync(path.join(root, "ws", "other", name));
    expect(quire(["commit", "other", "-m", "again"]).status).toBe(1);
    expect(quire(["commit", "other", "-m", "again"], { QUIRE_ALLOW_MASS_DELETE: "1" }).status).toBe(
      0,
    );
  });
});
