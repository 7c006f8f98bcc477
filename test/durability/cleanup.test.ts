import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as faulty from "../../src/adapters/faultyObjectStore.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import {
  cleanup,
  cutoffOf,
  deletable,
  packGeneration,
} from "../../src/app/usecases/maintenance/cleanup.js";
import { encodeManifest, type Manifest, type PackDescriptor } from "../../src/domain/manifest.js";
import { keysOf } from "./harness.js";

const id = (n: number) => `0190a5b4-0000-7000-8000-${n.toString(16).padStart(12, "0")}`;
const key = (kind: "checkpoints" | "increments", g: number, n: number) =>
  `packs/${kind}/${g}-${id(n)}.pack`;
const d = (kind: "checkpoints" | "increments", g: number, n = g): PackDescriptor => ({
  key: key(kind, g, n),
  generation: g,
  size: 1,
  sha256: "b".repeat(64),
  publicationId: id(n),
});

/** Active chain: checkpoint 10, increments 11, 12; retained: checkpoint 5 with 6..10. */
const manifest: Manifest = {
  version: 1,
  generation: 13,
  head: id(12),
  checkpoint: d("checkpoints", 10, 100),
  increments: [d("increments", 11), d("increments", 12)],
  retained: [
    {
      checkpoint: d("checkpoints", 5, 50),
      increments: [6, 7, 8, 9, 10].map((g) => d("increments", g)),
    },
  ],
};

describe("cleanup rules", () => {
  it("parses pack keys and ignores anything else", () => {
    expect(packGeneration(key("increments", 42, 1))).toBe(42);
    expect(packGeneration(key("checkpoints", 7, 1))).toBe(7);
    for (const bad of [
      "packs/increments/0-" + id(1) + ".pack",
      "packs/increments/x-" + id(1) + ".pack",
      "packs/increments/4-" + id(1) + ".pack.tmp",
      "packs/other/4-" + id(1) + ".pack",
      "packs/increments/4-not-a-uuid.pack",
      "current",
      "packs/increments/99999999999999999-" + id(1) + ".pack",
    ])
      expect(packGeneration(bad)).toBeUndefined();
  });

  it("deletes unreferenced packs at or below the oldest retained checkpoint only", () => {
    expect(cutoffOf(manifest)).toBe(5);
    const candidates = [
      key("increments", 3, 3), // absorbed long ago
      key("checkpoints", 1, 1), // an old chain
      key("increments", 5, 5), // absorbed into the retained checkpoint at 5
      key("checkpoints", 5, 51), // a discarded checkpoint at the cutoff
      key("increments", 6, 6), // referenced by the retained chain
      key("checkpoints", 5, 50), // referenced
      key("increments", 8, 80), // an orphan newer than the cutoff: kept for now
      key("increments", 14, 14), // a publication in flight
      "packs/increments/junk",
    ];
    expect(deletable(manifest, candidates)).toEqual([
      key("increments", 3, 3),
      key("checkpoints", 1, 1),
      key("increments", 5, 5),
      key("checkpoints", 5, 51),
    ]);
  });
});

describe("cleanup against a store", () => {
  const seed = async (extra: ReadonlyArray<string>) => {
    const faults = faulty.make(memoryStore.make());
    const put = (k: string, body: string) =>
      Effect.runPromise(
        faults.store.put(k, new TextEncoder().encode(body), { _tag: "Unconditional" }),
      );
    await put("current", encodeManifest(manifest));
    for (const desc of [
      manifest.checkpoint,
      ...manifest.increments,
      ...manifest.retained.flatMap((c) => [c.checkpoint, ...c.increments]),
    ])
      await put(desc.key, "p");
    for (const k of extra) await put(k, "p");
    faults.resetRequests();
    return faults;
  };

  it("re-reads current before every batch and leaves referenced and malformed keys", async () => {
    const orphans = Array.from({ length: 130 }, (_, i) => key("increments", 4, 1000 + i));
    const faults = await seed([...orphans, "packs/increments/garbage.pack", "packs/notes.txt"]);
    const report = await Effect.runPromise(cleanup(faults.store));
    expect(report.deleted).toBe(130);
    expect(faults.count("get", "current")).toBe(3); // 130 candidates = 3 batches of 64
    expect(faults.count("list", "packs/")).toBe(1);
    const left = await keysOf(faults.store, "packs/");
    expect(left).toContain("packs/increments/garbage.pack");
    expect(left).toContain("packs/notes.txt");
    expect(left.filter((k) => orphans.includes(k))).toEqual([]);
    expect(left).toHaveLength(2 + 1 + 2 + 1 + 5);
  });

  it("honours a current that moved between batches", async () => {
    const orphans = Array.from({ length: 100 }, (_, i) => key("increments", 4, 2000 + i));
    const faults = await seed(orphans);
    // Before the second batch's read, current is replaced by a manifest whose oldest
    // chain starts at 3: nothing in the second batch (generation 4) may go any more.
    const older: Manifest = {
      ...manifest,
      generation: 14,
      retained: [
        ...manifest.retained,
        { checkpoint: d("checkpoints", 3, 30), increments: [d("increments", 4, 2070)] },
      ],
    };
    faults.inject({
      ops: ["get"],
      key: "current",
      skip: 1,
      fault: {
        _tag: "Interleave",
        effect: faults.store
          .put("current", new TextEncoder().encode(encodeManifest(older)), {
            _tag: "Unconditional",
          })
          .pipe(Effect.orDie, Effect.asVoid),
      },
    });
    const report = await Effect.runPromise(cleanup(faults.store));
    expect(report.deleted).toBe(64);
    const left = await keysOf(faults.store, "packs/increments/4-");
    expect(left).toHaveLength(36);
    expect(left).toContain(key("increments", 4, 2070));
  });

  it("fails on a store error without deleting anything further", async () => {
    const faults = await seed([key("increments", 2, 9)]);
    faults.inject({ ops: ["delete"], fault: { _tag: "FailBefore" } });
    const exit = await Effect.runPromiseExit(cleanup(faults.store));
    expect(exit._tag).toBe("Failure");
    expect(await keysOf(faults.store, "packs/increments/2-")).toHaveLength(1);
  });
});
