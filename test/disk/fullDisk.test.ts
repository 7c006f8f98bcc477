/**
 * SPEC §4.1 "acceptance is never denied", through real `quire commit` processes: the
 * private root lives on a small tmpfs, filled to leave a different number of free bytes
 * before each commit, so every write of private state — the cached pack, the intent, the
 * baseline, the state record, the stat cache — fails with ENOSPC at one threshold or
 * another. Whatever the threshold:
 * - OK means `current` holds the publication;
 * - RECOVERY_FAILURE with remoteAccepted "yes" means it does too;
 * - any other answer means nothing was published;
 * and once space is free again, the next call settles the copy and nothing is lost.
 *
 * Needs root (it mounts a tmpfs), so it is not part of `npm test`: `npm run test:disk`,
 * run by CI as root.
 */
import { mkdirSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  commit,
  currentVersions,
  makeWorld,
  pull,
  read,
  write,
  type World,
} from "../helpers/cli.js";
import { mountTmpfs, unmountTmpfs } from "./tmpfs.js";

let mountPoint = "";
let world: World;

beforeAll(() => {
  assertBuilt();
  world = makeWorld();
  mountPoint = mountTmpfs("quire-full-", "4m");
});

afterAll(() => {
  unmountTmpfs(mountPoint);
  world.cleanup();
});

const generationOf = (w: World): number => {
  const latest = currentVersions(w).latest;
  return latest === undefined ? 0 : (JSON.parse(latest) as { generation: number }).generation;
};

const filler = () => path.join(mountPoint, "filler");

/** Fills the tmpfs so that about `free` bytes stay free (tmpfs counts whole pages). */
const leaveFree = (free: number): void => {
  rmSync(filler(), { force: true });
  const stats = statfsSync(mountPoint);
  const available = Number(stats.bavail) * Number(stats.bsize);
  const fill = Math.max(0, available - free);
  writeFileSync(filler(), Buffer.alloc(fill));
};

/** The head line of an error report, and what its recovery report says. */
const outcomeOf = (stderr: string, code: number | null) => {
  if (code === 0) return { head: "OK", accepted: "yes" as const };
  const head = stderr.split("\n").find((line) => / · /.test(line)) ?? stderr;
  const accepted = /remoteAccepted (yes|no|unknown)/.exec(stderr)?.[1];
  return { head, accepted };
};

describe("a commit with the private root's disk (nearly) full", () => {
  it("never answers 'not published' for a publication current holds, and loses nothing", async () => {
    const privateRoot = path.join(mountPoint, "private");
    mkdirSync(privateRoot);
    const env = { QUIRE_PRIVATE_ROOT: privateRoot };
    const copy = world.copy("a");
    expect((await pull(world, copy, { env })).code).toBe(0);
    // A notebook large enough that its baseline file is tens of kilobytes.
    for (let i = 0; i < 150; i++) write(copy, `notes/n${i}.md`, `note ${i}\n`);
    expect((await commit(world, copy, "seed", { env })).code).toBe(0);

    const seen = new Map<string, number>();
    const expectedLines: string[] = [];
    for (let free = 0; free <= 120 * 1024; free += 3 * 1024) {
      const line = `edit at ${free} bytes free`;
      expectedLines.push(line);
      write(copy, "log.md", `${expectedLines.join("\n")}\n`);
      leaveFree(free);
      const before = generationOf(world);
      const result = await commit(world, copy, line, { env });
      const after = generationOf(world);
      const { head, accepted } = outcomeOf(result.stderr, result.code);
      seen.set(head, (seen.get(head) ?? 0) + 1);
      const published = after > before;
      if (head === "OK") expect(published, `OK at ${free}: ${result.stderr}`).toBe(true);
      else if (head.startsWith("RECOVERY_FAILURE") && accepted === "yes")
        expect(published, `accepted at ${free}: ${result.stderr}`).toBe(true);
      else if (head.startsWith("STORAGE_FAILURE · PUBLICATION_UNKNOWN")) {
        // Either way is allowed: the answer says it does not know.
      } else
        expect(
          published,
          `"${head}" (remoteAccepted ${accepted}) at ${free} bytes free, yet published`,
        ).toBe(false);

      // With room again the copy settles, and the edit is (or becomes) published.
      rmSync(filler(), { force: true });
      const settled = await commit(world, copy, `${line} (again)`, { env });
      expect(settled.code, `settling after ${free}: ${settled.stderr}`).toBe(0);
    }
    // Every edit is in the final notebook, read by a fresh copy on another private root.
    const fresh = world.copy("fresh");
    expect((await pull(world, fresh)).code).toBe(0);
    expect(read(fresh, "log.md")).toBe(`${expectedLines.join("\n")}\n`);
    expect(read(copy, "log.md")).toBe(`${expectedLines.join("\n")}\n`);
    // The sweep did reach failures (not only OKs).
    expect(
      [...seen.keys()].filter((head) => head !== "OK").length,
      JSON.stringify([...seen]),
    ).toBeGreaterThan(0);
  });
});
