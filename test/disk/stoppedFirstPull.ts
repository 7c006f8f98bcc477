/**
 * The setup both first-pull full-disk tests share: a notebook of ~1.6 MB of notes
 * (60 notes of ~27 KB) published from `seed`, then a first pull of it into `copy` on the
 * 1 MB tmpfs at `mountPoint`, which the disk stops part way.
 */
import { mkdirSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { expect } from "vitest";
import { commit, pull, write, type World } from "../helpers/cli.js";

/** What a stopped first pull left: the seed copy, the partial copy, the pull's stderr, the names it wrote. */
export interface StoppedFirstPull {
  readonly seed: string;
  readonly copy: string;
  readonly stderr: string;
  readonly written: ReadonlyArray<string>;
}

/**
 * Publishes the seed notebook and runs the first pull the disk stops. Fails the test when
 * the pull succeeds or writes nothing (the 1 MB tmpfs must fill part way).
 */
export const stoppedFirstPull = async (
  world: World,
  mountPoint: string,
): Promise<StoppedFirstPull> => {
  const seed = world.copy("seed");
  expect((await pull(world, seed)).code).toBe(0);
  const line = "x".repeat(99);
  for (let i = 0; i < 60; i++) write(seed, `n${i}.md`, `${i}\n${`${line}\n`.repeat(270)}`);
  expect((await commit(world, seed, "seed")).code).toBe(0);

  // The copy is the tmpfs's directory `copy`, the workspace root the tmpfs.
  const copy = path.join(mountPoint, "copy");
  mkdirSync(copy);
  const failed = await pull(world, copy, { cwd: mountPoint });
  expect(failed.code).toBe(1);
  expect(failed.stderr).toMatch(/disk full/);
  const written = readdirSync(copy);
  expect(written.length).toBeGreaterThan(0);
  expect(written.length).toBeLessThan(60);
  return { seed, copy, stderr: failed.stderr, written };
};
