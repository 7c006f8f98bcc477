/**
 * A first pull stopped part way (a disk that fills) leaves the store's notes in the
 * directory, and no state: the record of which store the directory belongs to is written
 * before the first note, so a call with another store is refused, not answered
 * NOT_PULLED (a pull from that store, as NOT_PULLED says, then a commit published the
 * first store's notes there).
 *
 * Needs root (it mounts a tmpfs): `npm run test:disk`, run by CI as root.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  commit,
  errorHead,
  makeWorld,
  pull,
  runCli,
  write,
  type World,
} from "../helpers/cli.js";
import { mountTmpfs, unmountTmpfs } from "./tmpfs.js";

let mountPoint = "";
let world: World;

beforeAll(() => {
  assertBuilt();
  world = makeWorld();
  mountPoint = mountTmpfs("quire-first-other-", "1m");
});

afterAll(() => {
  unmountTmpfs(mountPoint);
  world.cleanup();
});

describe("a first pull stopped part way, then another store", () => {
  it("status, pull and commit with another store are refused; nothing reaches that store", async () => {
    const seed = world.copy("seed");
    expect((await pull(world, seed)).code).toBe(0);
    const line = "x".repeat(99);
    for (let i = 0; i < 60; i++) write(seed, `n${i}.md`, `${i}\n${`${line}\n`.repeat(270)}`);
    expect((await commit(world, seed, "seed")).code).toBe(0);

    const copy = path.join(mountPoint, "copy");
    mkdirSync(copy);
    const failed = await pull(world, copy, { cwd: mountPoint });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/disk full/);
    const written = readdirSync(copy);
    expect(written.length).toBeGreaterThan(0);

    const other = path.join(world.root, "other-store");
    const env = { cwd: mountPoint, env: { QUIRE_STORE: `file:${other}` } };
    for (const args of [
      ["status", copy],
      ["pull", copy],
      ["commit", copy, "-m", "the first store's notes"],
    ]) {
      const result = await runCli(world, args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(1);
      expect(errorHead(result.stderr), args.join(" ")).toBe(
        "INVALID_REQUEST · NESTED_WORKING_COPY",
      );
      expect(result.stderr).toContain("last pulled from another store");
    }
    expect(readdirSync(copy).sort()).toEqual([...written].sort());
    // The other store published nothing.
    const fresh = world.copy("fresh");
    const pulled = await runCli(world, ["pull", fresh], { env: env.env });
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(readdirSync(fresh)).toEqual([]);
    expect(existsSync(path.join(fresh, written[0] ?? "none"))).toBe(false);
  });
});
