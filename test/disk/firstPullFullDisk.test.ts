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
import { stoppedFirstPull } from "./stoppedFirstPull.js";
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
    const { seed, copy, stderr, written } = await stoppedFirstPull(world, mountPoint);
    expect(errorHead(stderr)).not.toMatch(/^ENGINE_FAILED/);
    expect(errorHead(stderr)).toBe("RECOVERY_FAILURE · UNEXPECTED_FAILURE");
    expect(stderr).toMatch(/action: PULL_AGAIN/);

    // The notebook changes every note the failed pull wrote.
    for (const name of written) write(seed, name, `${read(seed, name)}changed\n`);
    expect((await commit(world, seed, "change")).code).toBe(0);

    execFileSync("mount", ["-o", "remount,size=8m", mountPoint]);
    const done = await pull(world, copy, { cwd: mountPoint });
    expect(done.code, done.stderr).toBe(0);
    expect(readTree(copy)).toEqual(readTree(seed));
  });
});
