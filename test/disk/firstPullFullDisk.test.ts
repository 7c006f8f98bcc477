/**
 * A first pull into an empty directory on a disk that fills part way, through real
 * `quire pull` processes: the copy lives on a small tmpfs, the notebook is larger than
 * the room left. The answer must not be LOCAL_IO (whose meaning is "before the working
 * copy was changed": some notes were written), must say what to do, and once space is
 * freed the next pull must give exactly the notebook — also when the notebook changed
 * notes the failed pull wrote meanwhile (they are the notebook's, not additions of the
 * copy's own to conflict with).
 *
 * Needs root (it mounts a tmpfs): `npm run test:disk`, run by CI as root.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  commit,
  errorHead,
  makeWorld,
  pull,
  read,
  readTree,
  write,
  type World,
} from "../helpers/cli.js";
import { mountTmpfs, unmountTmpfs } from "./tmpfs.js";

let mountPoint = "";
let world: World;

beforeAll(() => {
  assertBuilt();
  world = makeWorld();
  mountPoint = mountTmpfs("quire-first-full-", "1m");
});

afterAll(() => {
  unmountTmpfs(mountPoint);
  world.cleanup();
});

describe("a first pull into an empty directory on a disk that fills part way", () => {
  it("says the copy was partly written, and the pull after space is freed gives exactly the notebook", async () => {
    const seed = world.copy("seed");
    expect((await pull(world, seed)).code).toBe(0);
    // About 1.6 MB of notes for a 1 MB disk.
    const line = "x".repeat(99);
    for (let i = 0; i < 60; i++) write(seed, `n${i}.md`, `${i}\n${`${line}\n`.repeat(270)}`);
    expect((await commit(world, seed, "seed")).code).toBe(0);

    // The copy is the tmpfs's directory `copy`, the workspace root the tmpfs.
    const copy = path.join(mountPoint, "copy");
    mkdirSync(copy);
    const failed = await pull(world, copy, { cwd: mountPoint });
    expect(failed.code).toBe(1);
    expect(errorHead(failed.stderr)).not.toMatch(/^ENGINE_FAILED/);
    expect(errorHead(failed.stderr)).toBe("RECOVERY_FAILURE · UNEXPECTED_FAILURE");
    expect(failed.stderr).toMatch(/disk full/);
    expect(failed.stderr).toMatch(/action: PULL_AGAIN/);
    const written = readdirSync(copy);
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThan(60);

    // The notebook changes every note the failed pull wrote.
    for (const name of written) write(seed, name, `${read(seed, name)}changed\n`);
    expect((await commit(world, seed, "change")).code).toBe(0);

    execFileSync("mount", ["-o", "remount,size=8m", mountPoint]);
    const done = await pull(world, copy, { cwd: mountPoint });
    expect(done.code, done.stderr).toBe(0);
    expect(readTree(copy)).toEqual(readTree(seed));
  });
});
