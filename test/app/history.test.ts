/**
 * SPEC §11, in process through the Promise facade: with a checkpoint every 16
 * increments, 2,000 commits later the log still lists every one of them (history
 * segments across 100+ checkpoints), and what a commit costs the store — requests and
 * bytes, checkpointing commits included — does not grow with the history's length.
 * A checkpoint without a segment (made by an older release in a fleet of mixed
 * releases) does not end the history while the chain it replaced is retained.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect } from "effect";
import { afterAll, describe, expect, it } from "vitest";
import * as MemoryObjectStore from "../../src/adapters/memoryObjectStore.js";
import { openNotebook, type ObjectStoreService } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-history-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The inner store with every request and every byte sent or received counted. */
const counted = (inner: ObjectStoreService) => {
  const tally = { requests: 0, bytes: 0 };
  const store: ObjectStoreService = {
    ...inner,
    get: (key) =>
      Effect.sync(() => tally.requests++).pipe(
        Effect.zipRight(inner.get(key)),
        Effect.tap((found) =>
          Effect.sync(() => {
            if (found._tag === "Some") tally.bytes += found.value.body.length;
          }),
        ),
      ),
    head: (key) => Effect.sync(() => tally.requests++).pipe(Effect.zipRight(inner.head(key))),
    list: (prefix) => Effect.sync(() => tally.requests++).pipe(Effect.zipRight(inner.list(prefix))),
    delete: (key, options) =>
      Effect.sync(() => tally.requests++).pipe(Effect.zipRight(inner.delete(key, options))),
    put: (key, body, condition, metadata) =>
      Effect.sync(() => {
        tally.requests++;
        tally.bytes += body.length;
      }).pipe(Effect.zipRight(inner.put(key, body, condition, metadata))),
    putAfter: <E>(
      key: string,
      body: Uint8Array,
      condition: Parameters<ObjectStoreService["put"]>[2],
      after: Effect.Effect<void, E>,
    ) =>
      Effect.sync(() => {
        tally.requests++;
        tally.bytes += body.length;
      }).pipe(Effect.zipRight(inner.putAfter(key, body, condition, after))),
  };
  return { store, tally };
};

describe("history across checkpoints", () => {
  it(
    "2,000 commits with a checkpoint every 16: the log lists them all; a commit's cost stays flat",
    { timeout: 600_000 },
    async () => {
      const workspace = join(root, "ws");
      mkdirSync(workspace);
      const { store, tally } = counted(MemoryObjectStore.make());
      const notebook = await openNotebook({
        store,
        workspaceRoot: workspace,
        privateRoot: join(root, "private"),
        checkpointPacks: 16,
        author: { name: "history-test", version: "1" },
        probe: false,
      });
      const copy = join(workspace, "c");
      expect(await notebook.pull(copy)).toMatchObject({ code: "OK" });
      const commits = 2_000;
      // Per window of 64 commits (four checkpoints each): requests and bytes.
      const windows: Array<{ requests: number; bytes: number }> = [];
      for (let i = 1; i <= commits; i++) {
        if ((i - 1) % 64 === 0) windows.push({ requests: tally.requests, bytes: tally.bytes });
        writeFileSync(join(copy, `n${i % 20}.md`), `line ${i}\n`);
        const result = await notebook.commit(`commit ${i}`, copy);
        expect(result.code, JSON.stringify(result)).toBe("OK");
      }
      const costs = windows.slice(1).map((w, index) => ({
        requests: w.requests - (windows[index]?.requests ?? 0),
        bytes: w.bytes - (windows[index]?.bytes ?? 0),
      }));
      // The second window against the last: the same work, whatever came before.
      const early = costs[1];
      const late = costs[costs.length - 1];
      if (early === undefined || late === undefined) throw new Error("too few windows");
      expect(late.requests).toBeLessThanOrEqual(early.requests * 1.05 + 4);
      expect(late.bytes).toBeLessThanOrEqual(early.bytes * 1.1);

      const log = await notebook.log({ path: copy, limit: commits });
      if (log.code !== "OK") throw new Error(JSON.stringify(log));
      expect(log.publications.length).toBe(commits);
      expect(log.publications.map((p) => p.message)).toEqual(
        Array.from({ length: commits }, (_, i) => `commit ${commits - i}`),
      );
      expect(log.publications.every((p) => p.author.name === "history-test")).toBe(true);
      expect(log.unrecordedThrough).toBeUndefined();
      // One more than asked for is not listed; a file filter still reaches the oldest.
      const one = await notebook.log({ path: copy, limit: 3, file: "n1.md" });
      if (one.code !== "OK") throw new Error(JSON.stringify(one));
      expect(one.publications.map((p) => p.message)).toEqual([
        "commit 1981",
        "commit 1961",
        "commit 1941",
      ]);
      const oldest = await notebook.log({ path: copy, limit: commits, file: "n1.md" });
      if (oldest.code !== "OK") throw new Error(JSON.stringify(oldest));
      expect(oldest.publications[oldest.publications.length - 1]?.message).toBe("commit 1");
      await notebook.close();
    },
  );
});

describe("a checkpoint without a history segment (an older release's, in a mixed fleet)", () => {
  /**
   * Commits `commits` times with a checkpoint every 4 increments, deleting the segment of
   * the first checkpoint as soon as it is made, as an older release would have left it;
   * answers the log of every publication.
   */
  const logAfterMissingSegment = async (name: string, retainedCheckpoints: number) => {
    const workspace = join(root, name);
    mkdirSync(workspace);
    const store = MemoryObjectStore.make();
    const notebook = await openNotebook({
      store,
      workspaceRoot: workspace,
      privateRoot: join(root, `${name}-private`),
      checkpointPacks: 4,
      retainedCheckpoints,
      author: { name: "history-test", version: "1" },
      probe: false,
    });
    const copy = join(workspace, "c");
    expect(await notebook.pull(copy)).toMatchObject({ code: "OK" });
    const segments = () => Effect.runPromise(store.list("history/"));
    let deleted: string | undefined;
    const commits = 30;
    for (let i = 1; i <= commits; i++) {
      writeFileSync(join(copy, `n${i % 3}.md`), `line ${i}\n`);
      const result = await notebook.commit(`commit ${i}`, copy);
      expect(result.code, JSON.stringify(result)).toBe("OK");
      if (deleted === undefined) {
        const first = (await segments())[0];
        if (first !== undefined) {
          deleted = first.key;
          await Effect.runPromise(store.delete(first.key));
        }
      }
    }
    expect(deleted, "a checkpoint was made").toBeDefined();
    // Later checkpoints were made, each with a segment of its own.
    expect((await segments()).length).toBeGreaterThanOrEqual(3);
    const log = await notebook.log({ path: copy, limit: 100 });
    await notebook.close();
    if (log.code !== "OK") throw new Error(JSON.stringify(log));
    return { log, commits };
  };

  it("the next checkpoint reads the retained chain's packs instead: the log still lists every publication", async () => {
    const { log, commits } = await logAfterMissingSegment("mixed", 1);
    expect(log.unrecordedThrough).toBeUndefined();
    expect(log.publications.map((p) => p.message)).toEqual(
      Array.from({ length: commits }, (_, i) => `commit ${commits - i}`),
    );
  });

  it("without a retained chain the log says up to which generation there is no record", async () => {
    const { log } = await logAfterMissingSegment("unretained", 0);
    expect(log.unrecordedThrough).toBeGreaterThan(0);
    // Everything after that generation is listed, newest first, without a gap.
    const generations = log.publications.map((p) => p.generation);
    expect(generations.at(-1)).toBe((log.unrecordedThrough ?? 0) + 1);
    expect(generations).toEqual([...generations].sort((a, b) => b - a));
  });

  it("a damaged pack in the retained chain ends the records there; checkpoints go on", async () => {
    const workspace = join(root, "damaged");
    mkdirSync(workspace);
    const store = MemoryObjectStore.make();
    const open = (name: string) =>
      openNotebook({
        store,
        workspaceRoot: workspace,
        privateRoot: join(root, `damaged-${name}`),
        checkpointPacks: 4,
        author: { name, version: "1" },
        probe: false,
      });
    const a = await open("a");
    const copyA = join(workspace, "a");
    expect(await a.pull(copyA)).toMatchObject({ code: "OK" });
    const segments = () => Effect.runPromise(store.list("history/"));
    let i = 0;
    while ((await segments()).length === 0) {
      i += 1;
      writeFileSync(join(copyA, "a.md"), `line ${i}\n`);
      expect(await a.commit(`a ${i}`, copyA)).toMatchObject({ code: "OK" });
    }
    await a.close();
    // The first checkpoint came from an older release: no segment. And a pack of the
    // chain it replaced is damaged in the store.
    const [segment] = await segments();
    if (segment === undefined) throw new Error("no segment");
    await Effect.runPromise(store.delete(segment.key));
    const increments = await Effect.runPromise(store.list("packs/increments/"));
    const damaged = increments.find((o) => o.key.startsWith("packs/increments/2-"));
    if (damaged === undefined) throw new Error("no pack of generation 2");
    await Effect.runPromise(
      store.put(damaged.key, new TextEncoder().encode("damaged"), { _tag: "Unconditional" }),
    );
    // Another writer, whose cache holds none of the old chain, makes the next checkpoint.
    const b = await open("b");
    const copyB = join(workspace, "b");
    expect(await b.pull(copyB)).toMatchObject({ code: "OK" });
    for (let j = 1; j <= 6; j++) {
      writeFileSync(join(copyB, "b.md"), `line ${j}\n`);
      expect(await b.commit(`b ${j}`, copyB)).toMatchObject({ code: "OK" });
    }
    expect((await segments()).length).toBe(1);
    const log = await b.log({ path: copyB, limit: 100 });
    await b.close();
    if (log.code !== "OK") throw new Error(JSON.stringify(log));
    // Recorded: everything after the first checkpoint (its own last publication and
    // b's); before it, where the damaged chain would have been read, "no record".
    expect(log.publications.map((p) => p.message)).toEqual([
      ...Array.from({ length: 6 }, (_, k) => `b ${6 - k}`),
      `a ${i}`,
    ]);
    expect(log.unrecordedThrough).toBeGreaterThan(0);
    expect(log.unrecordedThrough).toBeLessThan(log.publications.at(-1)?.generation ?? 0);
  });
});
