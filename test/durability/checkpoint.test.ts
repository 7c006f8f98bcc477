import { Effect, Either } from "effect";
import { describe, expect, it } from "vitest";
import { checkpointDue, planCheckpoint } from "../../src/app/usecases/maintenance/checkpoint.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import type { Manifest, PackDescriptor } from "../../src/domain/manifest.js";
import { decodeManifest, encodeManifest } from "../../src/domain/manifest.js";
import { commit, keysOf, manifestOf, pull, referencedKeys, world, type World } from "./harness.js";

/** Commits `count` times from /ws/a, each appending line `<tag><i>` to log.md. */
const appendCommits = async (
  w: World,
  options: Partial<NotebookOptions>,
  count: number,
  tag = "",
) => {
  const nb = w.open(options);
  if (!w.exists("/ws/a")) await pull(nb);
  for (let i = 0; i < count; i++) {
    const before = w.exists("/ws/a/log.md") ? w.read("/ws/a/log.md") : "";
    w.write("/ws/a/log.md", `${before}${tag}${i}\n`);
    await commit(nb);
  }
  return nb;
};

const expectedLog = (count: number, tag = "") =>
  Array.from({ length: count }, (_, i) => `${tag}${i}\n`).join("");

const generations = (ds: ReadonlyArray<PackDescriptor>) => ds.map((d) => d.generation);

describe("checkpoints", () => {
  it("compacts everything before the triggering publication, keeping its head and increment", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 3 }, 5);
    // gen 1 first checkpoint, 2..5 increments; publishing 5 made 4 > 3 increments.
    const m = await manifestOf(w.store);
    expect(m?.generation).toBe(6);
    expect(m?.checkpoint.generation).toBe(4);
    expect(generations(m?.increments ?? [])).toEqual([5]);
    expect(m?.head).toBe(m?.increments[0]?.publicationId);
    expect(m?.retained).toHaveLength(1);
    expect(m?.retained[0]?.checkpoint.generation).toBe(1);
    expect(generations(m?.retained[0]?.increments ?? [])).toEqual([2, 3, 4]);
    // The copy that made it is recorded at the publication's generation and stays in step.
    const copy = await pull(w.open(), "/ws/a");
    expect(copy.generation).toBe(6);
    expect(copy.files).toEqual([]);
    // A cold reader gets the whole notebook from the checkpoint plus the tail.
    w.faults.resetRequests();
    await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/log.md")).toBe(expectedLog(5));
    expect(w.faults.count("get", "packs/checkpoints/")).toBe(1);
    expect(w.faults.count("get", "packs/increments/")).toBe(1);
  });

  it("keeps retainedCheckpoints chains and deletes the packs of older ones", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 3, retainedCheckpoints: 1 }, 13);
    const m = await manifestOf(w.store);
    if (m === undefined) throw new Error("no manifest");
    expect(m.retained).toHaveLength(1);
    expect(m.increments.length).toBeLessThanOrEqual(3);
    expect((await keysOf(w.store, "packs/")).sort()).toEqual(referencedKeys(m).sort());
    await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/log.md")).toBe(expectedLog(13));
  });

  it("with retainedCheckpoints 0 keeps no old chain and deletes all its packs", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 2, retainedCheckpoints: 0 }, 7);
    const m = await manifestOf(w.store);
    if (m === undefined) throw new Error("no manifest");
    expect(m.retained).toEqual([]);
    expect((await keysOf(w.store, "packs/")).sort()).toEqual(referencedKeys(m).sort());
  });

  it("with retainedCheckpoints 2 keeps two older chains", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 2, retainedCheckpoints: 2 }, 12);
    const m = await manifestOf(w.store);
    expect(m?.retained).toHaveLength(2);
    expect((await keysOf(w.store, "packs/")).sort()).toEqual(referencedKeys(m!).sort());
  });

  it("a byte threshold on the tail triggers a checkpoint below the count", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 1000, checkpointBytes: 600 }, 6);
    const m = await manifestOf(w.store);
    expect(m?.checkpoint.generation).toBeGreaterThan(1);
    const untouched = world();
    await appendCommits(untouched, { checkpointPacks: 1000 }, 6);
    expect((await manifestOf(untouched.store))?.checkpoint.generation).toBe(1);
  });

  it("readers behind, at, and past the checkpoint all converge", async () => {
    const w = world();
    const writer = w.open({ checkpointPacks: 3 });
    await appendCommits(w, { checkpointPacks: 3 }, 2);
    await pull(w.open(), "/ws/old"); // generation 2, before the coming checkpoint
    await appendCommits(w, { checkpointPacks: 3 }, 3, "x"); // publishes 3..5, checkpoint at 4
    await pull(w.open(), "/ws/mid"); // generation 6, at the checkpoint manifest
    const before = w.read("/ws/a/log.md");
    w.write("/ws/a/log.md", `${before}last\n`);
    await commit(writer);
    w.faults.resetRequests();
    await pull(w.open(), "/ws/mid");
    expect(w.faults.count("get", "packs/checkpoints/")).toBe(0);
    expect(w.faults.count("get", "packs/increments/")).toBe(1);
    await pull(w.open(), "/ws/old");
    for (const dir of ["/ws/old", "/ws/mid"])
      expect(w.read(`${dir}/log.md`)).toBe(w.read("/ws/a/log.md"));
  });

  it("a reader from before the checkpoint catches up from the retained increments, not the checkpoint", async () => {
    const w = world();
    const nb = w.open({ checkpointPacks: 3 });
    await pull(nb);
    // A notebook much larger than its changes: catching up by increments is cheaper.
    w.write("/ws/a/big.md", "a line of a large note\n".repeat(2_000));
    await commit(nb);
    await appendCommits(w, { checkpointPacks: 3 }, 1); // generation 2
    await pull(w.open(), "/ws/old");
    await appendCommits(w, { checkpointPacks: 3 }, 4, "x"); // 3..6, checkpoint at 5 (swap 7)
    const m = await manifestOf(w.store);
    expect(m?.checkpoint.generation).toBeGreaterThan(2);
    const newer = [...(m?.retained[0]?.increments ?? []), ...(m?.increments ?? [])].filter(
      (d) => d.generation > 2,
    );
    expect(newer.length).toBeGreaterThanOrEqual(3);
    w.faults.resetRequests();
    await pull(w.open(), "/ws/old");
    expect(w.faults.count("get", "packs/checkpoints/")).toBe(0);
    expect(w.faults.count("get", "packs/increments/")).toBe(newer.length);
    expect(w.read("/ws/old/log.md")).toBe(w.read("/ws/a/log.md"));
    expect(w.read("/ws/old/big.md")).toBe(w.read("/ws/a/big.md"));
  });

  it("a checkpoint that loses the race re-plans on the new manifest and keeps the newer increment", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 3 }, 4);
    await pull(w.open(), "/ws/b");
    const other = w.open();
    // Our publication's write of current passes; the checkpoint's swap finds another
    // publication landed between its read of current and its write.
    w.faults.inject({
      ops: ["put"],
      key: "current",
      skip: 1,
      fault: {
        _tag: "Interleave",
        effect: Effect.suspend(() => {
          w.write("/ws/b/other.md", "other\n");
          return other.commit({ path: "/ws/b", message: "o", author: { name: "o", version: "" } });
        }).pipe(Effect.orDie, Effect.asVoid),
      },
    });
    const nb = w.open({ checkpointPacks: 3 });
    w.write("/ws/a/log.md", `${w.read("/ws/a/log.md")}4\n`);
    const report = await commit(nb);
    expect(report.generation).toBe(5);
    expect(w.faults.requests().filter((r) => r.fault === "Interleave")).toHaveLength(1);
    const m = await manifestOf(w.store);
    // 5: ours, 6: the other writer's, 7: the checkpoint at 4 keeping 5 and 6.
    expect(m?.generation).toBe(7);
    expect(m?.checkpoint.generation).toBe(4);
    expect(generations(m?.increments ?? [])).toEqual([5, 6]);
    expect(m?.head).toBe(m?.increments[1]?.publicationId);
    await pull(w.open(), "/ws/c");
    expect(w.read("/ws/c/log.md")).toBe(expectedLog(5));
    expect(w.read("/ws/c/other.md")).toBe("other\n");
  });

  it("a checkpoint overtaken by a newer one is discarded and left for cleanup", async () => {
    const w = world();
    await appendCommits(w, { checkpointPacks: 3 }, 4);
    await pull(w.open(), "/ws/b");
    const other = w.open({ checkpointPacks: 3 });
    w.faults.inject({
      ops: ["put"],
      key: "current",
      skip: 1,
      fault: {
        _tag: "Interleave",
        effect: Effect.suspend(() => {
          w.write("/ws/b/other.md", "other\n");
          return other.commit({ path: "/ws/b", message: "o", author: { name: "o", version: "" } });
        }).pipe(Effect.orDie, Effect.asVoid),
      },
    });
    const nb = w.open({ checkpointPacks: 3 });
    w.write("/ws/a/log.md", `${w.read("/ws/a/log.md")}4\n`);
    expect((await commit(nb)).generation).toBe(5);
    const m = await manifestOf(w.store);
    // The other writer checkpointed at 5 (its base) first; ours (at 4) was discarded.
    expect(m?.checkpoint.generation).toBe(5);
    expect(generations(m?.increments ?? [])).toEqual([6]);
    const orphans = (await keysOf(w.store, "packs/checkpoints/")).filter(
      (key) => !referencedKeys(m!).includes(key),
    );
    expect(orphans.map((key) => key.split("-")[0])).toEqual(["packs/checkpoints/4"]);
    await pull(w.open(), "/ws/c");
    expect(w.read("/ws/c/log.md")).toBe(expectedLog(5));
  });
});

describe("planCheckpoint", () => {
  const id = (n: number) => `0190a5b4-0000-7000-8000-${n.toString(16).padStart(12, "0")}`;
  const sha = "a".repeat(64);
  const d = (kind: "checkpoints" | "increments", g: number, n = g): PackDescriptor => ({
    key: `packs/${kind}/${g}-${id(n)}.pack`,
    generation: g,
    size: 10,
    sha256: sha,
    publicationId: id(n),
  });
  const manifest = (checkpoint: number, increments: number[], generation?: number): Manifest => ({
    version: 1,
    generation: generation ?? increments[increments.length - 1] ?? checkpoint,
    head: id(increments[increments.length - 1] ?? checkpoint),
    checkpoint: d("checkpoints", checkpoint),
    increments: increments.map((g) => d("increments", g)),
    retained: [],
  });
  const prepared = (generation: number) => ({
    generation,
    after: id(generation + 1),
    key: `packs/checkpoints/${generation}-${id(900)}.pack`,
    bytes: new Uint8Array(),
    descriptor: { ...d("checkpoints", generation, 900) },
  });
  const options = { checkpointPacks: 2, retainedCheckpoints: 1 };

  it("produces a valid manifest one generation up with the same head", () => {
    const m = manifest(1, [2, 3, 4, 5]);
    const plan = planCheckpoint(m, prepared(3), options);
    if (plan._tag !== "Next") throw new Error(plan.why);
    expect(plan.next.generation).toBe(6);
    expect(plan.next.head).toBe(m.head);
    expect(generations(plan.next.increments)).toEqual([4, 5]);
    expect(generations(plan.next.retained[0]?.increments ?? [])).toEqual([2, 3]);
    expect(Either.isRight(decodeManifest(encodeManifest(plan.next)))).toBe(true);
  });

  it("discards a checkpoint overtaken by an equal or newer one", () => {
    expect(planCheckpoint(manifest(3, [4, 5, 6, 7]), prepared(3), options)._tag).toBe("Discard");
    expect(planCheckpoint(manifest(4, [5, 6, 7]), prepared(3), options)._tag).toBe("Discard");
  });

  it("discards a checkpoint whose triggering increment is no longer active", () => {
    const m = manifest(1, [2, 3, 5, 6]);
    const plan = planCheckpoint(m, prepared(3), options);
    expect(plan).toEqual({ _tag: "Discard", why: expect.stringMatching(/no longer continues/) });
  });

  it("discards when the tail is short again (someone compacted an older prefix)", () => {
    const plan = planCheckpoint(manifest(2, [3, 4]), prepared(3), options);
    expect(plan).toEqual({ _tag: "Discard", why: "the tail is short again" });
  });

  it("checkpointDue counts increments and tail bytes", () => {
    expect(checkpointDue(manifest(1, [2, 3]), { checkpointPacks: 2 })).toBe(false);
    expect(checkpointDue(manifest(1, [2, 3, 4]), { checkpointPacks: 2 })).toBe(true);
    expect(checkpointDue(manifest(1, [2, 3]), { checkpointPacks: 9, checkpointBytes: 19 })).toBe(
      true,
    );
  });
});
