/**
 * A note larger than the process may write (`ulimit -f`): node ignores SIGXFSZ, so the
 * write fails with EFBIG rather than killing the process mid-write. The answer names the
 * file and the cause (`detail: file too large`) and says what to do; no note is left
 * half-written, and once the limit is lifted the next pull completes the copy.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type World,
  assertBuilt,
  binPath,
  commit,
  makeWorld,
  pull,
  write,
} from "../helpers/cli.js";

beforeAll(assertBuilt);

let world: World;
beforeEach(() => {
  world = makeWorld();
});
afterEach(() => world.cleanup());

/** `quire pull copy` with `ulimit -f blocks` (bash counts 1024-byte blocks). */
const pullLimited = (copy: string, blocks: number) => {
  const run = spawnSync(
    "bash",
    ["-c", `ulimit -f ${blocks}; exec "$0" "$1" pull "$2"`, process.execPath, binPath, copy],
    { cwd: world.ws, env: world.env, encoding: "utf8", timeout: 60_000 },
  );
  return { code: run.status, signal: run.signal, stderr: run.stderr };
};

const big = `${"a line of a note that is long enough\n".repeat(400)}`;

describe("a pull under a file size limit", () => {
  it("names the file and the cause on a first pull, and writes nothing half", async () => {
    write(world.copy("a"), "big.md", big);
    expect((await pull(world, "a")).code).toBe(0);
    expect((await commit(world, "a", "big")).code).toBe(0);
    const limited = pullLimited("b", 4);
    expect(limited.signal).toBeNull();
    expect(limited.code).toBe(1);
    expect(limited.stderr).toMatch(/^ENGINE_FAILED · LOCAL_IO$/m);
    expect(limited.stderr).toMatch(/^detail: file too large$/m);
    expect(limited.stderr).toContain("big.md");
    const path = `${world.copy("b")}/big.md`;
    if (existsSync(path)) expect(readFileSync(path, "utf8")).toBe(big);
    expect((await pull(world, "b")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(big);
  });

  it("stops a rewrite with a fixable cause (PULL_AGAIN), not CONTACT_OPERATOR", async () => {
    write(world.copy("a"), "big.md", "small\n");
    write(world.copy("a"), "other.md", "other\n");
    expect((await pull(world, "a")).code).toBe(0);
    expect((await commit(world, "a", "small")).code).toBe(0);
    expect((await pull(world, "b")).code).toBe(0);
    write(world.copy("a"), "big.md", big);
    expect((await commit(world, "a", "grow")).code).toBe(0);
    write(world.copy("b"), "other.md", "other\nedited in b\n");
    const limited = pullLimited("b", 4);
    expect(limited.signal).toBeNull();
    expect(limited.code).toBe(1);
    expect(limited.stderr).toMatch(/^RECOVERY_FAILURE · UNEXPECTED_FAILURE$/m);
    expect(limited.stderr).toMatch(/^action: PULL_AGAIN$/m);
    expect(limited.stderr).toContain("file too large");
    expect(limited.stderr).toContain("ulimit -f");
    expect(readFileSync(`${world.copy("b")}/big.md`, "utf8")).toMatch(/^(small\n|a line)/);
    expect((await pull(world, "b")).code).toBe(0);
    expect(readFileSync(`${world.copy("b")}/big.md`, "utf8")).toBe(big);
    expect(readFileSync(`${world.copy("b")}/other.md`, "utf8")).toBe("other\nedited in b\n");
  });
});
