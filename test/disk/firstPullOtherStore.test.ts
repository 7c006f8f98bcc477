/**
 * A first pull stopped part way (a disk that fills) leaves the store's notes in the
 * directory, and no state: the record of which store the directory belongs to is written
 * before the first note, so a call with another store is refused, not answered
 * NOT_PULLED (a pull from that store, as NOT_PULLED says, then a commit published the
 * first store's notes there).
 *
 * Needs root (it mounts a tmpfs): `npm run test:disk`, run by CI as root.
 */
import { existsSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, errorHead, makeWorld, runCli, type World } from "../helpers/cli.js";
import { stoppedFirstPull } from "./stoppedFirstPull.js";
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
    const { copy, written } = await stoppedFirstPull(world, mountPoint);

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
