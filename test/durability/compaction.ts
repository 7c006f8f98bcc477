/**
 * The long-run compaction scenario (issue 5, done-when 3), shared by a short unit run
 * and the full 2,000-commit run of the torture project: many commits with a low
 * checkpoint threshold, then the manifest, the store's packs and a cold pull's requests.
 */
import { expect } from "vitest";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { commit, keysOf, manifestOf, pull, referencedKeys, world } from "./harness.js";

/** Runs `commits` commits from two alternating copies with `checkpointPacks: threshold`. */
export const runCompaction = async (
  commits: number,
  threshold: number,
  store?: ObjectStoreService,
) => {
  const w = world(store);
  const options = { checkpointPacks: threshold, retainedCheckpoints: 1 };
  const copies = ["/ws/a", "/ws/b"];
  const nb = w.open(options);
  for (const dir of copies) await pull(nb, dir);
  const lines: Record<string, string> = {};
  for (let i = 0; i < commits; i++) {
    const dir = copies[i % 2] ?? "/ws/a";
    const file = `notes/n${i % 10}.md`;
    // Copy a writes the even files, copy b the odd ones; each commit merges the other's.
    const line = `${dir.slice(-1)} commit ${i}\n`;
    const path = `${dir}/${file}`;
    w.write(path, (w.exists(path) ? w.read(path) : "") + line);
    lines[file] = (lines[file] ?? "") + line;
    const report = await commit(nb, dir, `commit ${i}`);
    expect(report.generation).toBeGreaterThan(0);
  }
  const m = await manifestOf(w.store);
  if (m === undefined) throw new Error("no manifest");
  expect(m.increments.length).toBeLessThanOrEqual(threshold);
  expect(m.retained.length).toBe(1);
  expect(m.checkpoint.generation).toBeGreaterThan(commits - threshold - 2);
  // Old packs are gone: only what the manifest references is left.
  expect((await keysOf(w.store, "packs/")).sort()).toEqual(referencedKeys(m).sort());
  // A cold pull downloads exactly one checkpoint and the active tail.
  w.faults.resetRequests();
  const cold = await pull(w.open(options), "/ws/cold");
  expect(cold.generation).toBe(m.generation);
  expect(w.faults.count("get", "packs/checkpoints/")).toBe(1);
  expect(w.faults.count("get", "packs/increments/")).toBe(m.increments.length);
  expect(w.faults.count("get", "current")).toBe(1);
  expect(w.files("/ws/cold")).toEqual(lines);
  return { manifest: m, generation: m.generation };
};
