/**
 * Every failure point of issue 5 (done-when 1), through the use cases with the
 * fault-injecting store and failpoints: each test asserts the remote state, the working
 * copy, the result code/reason, and what a following call sees.
 */
import { Effect, Option } from "effect";
import { describe, expect, it } from "vitest";
import type { FailpointStage } from "../../src/app/usecases/shared/failpoints.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import * as ids from "../../src/adapters/idGenerator.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { copyDirectory } from "../../src/app/usecases/workingCopy/privateState.js";
import { rememberWritten } from "../../src/app/usecases/commit/lastWritten.js";
import type { FileSystemService } from "../../src/ports/FileSystem.js";
import { contentId, encodeText } from "../../src/domain/content.js";
import { encodeManifest } from "../../src/domain/manifest.js";
import { domainError } from "../../src/domain/errors.js";
import {
  author,
  baseOptions,
  commit,
  commitFails,
  crashes,
  etagOf,
  fails,
  keysOf,
  manifestOf,
  pull,
  dropStaged,
  referencedKeys,
  world,
  type World,
} from "./harness.js";

/** A world where copy A published `x.md` (generation 1) and then edited it locally. */
const edited = async (options: Partial<NotebookOptions> = {}) => {
  const w = world();
  const nb = w.open(options);
  await pull(nb);
  w.write("/ws/a/x.md", "one\n");
  await commit(nb);
  w.write("/ws/a/x.md", "one\ntwo\n");
  w.faults.resetRequests();
  return { w, nb, etag: await etagOf(w.store) };
};

const stateOf = (w: World, dir = "/ws/a") =>
  JSON.parse(w.read(`${copyDirectory("/private", dir, w.store.identity)}/state.json`)) as {
    generation: number;
    recoveryRequired: boolean;
  };

/** After a failed commit of "two": nothing published, the edit kept, and a retry publishes it once. */
const expectUnpublishedThenRetry = async (w: World, etag: string | undefined) => {
  expect(await etagOf(w.store)).toBe(etag);
  expect(w.read("/ws/a/x.md")).toBe("one\ntwo\n");
  expect(stateOf(w).generation).toBe(1);
  await pull(w.open(), "/ws/b");
  expect(w.read("/ws/b/x.md")).toBe("one\n");
  w.faults.clear();
  const retried = await commit(w.open());
  expect(retried.generation).toBe(2);
  await pull(w.open(), "/ws/b");
  expect(w.read("/ws/b/x.md")).toBe("one\ntwo\n");
};

/**
 * Stalls the next `op` request on `current` (once): the returned promise resolves when
 * that request starts, and the request goes on after `hold`.
 */
const stallCurrent = (w: World, op: "get" | "put", hold: Effect.Effect<void>): Promise<void> => {
  let started: () => void = () => undefined;
  const starting = new Promise<void>((resolve) => (started = resolve));
  w.faults.inject({
    ops: [op],
    key: "current",
    fault: { _tag: "Interleave", effect: Effect.sync(() => started()).pipe(Effect.zipRight(hold)) },
  });
  return starting;
};

const at =
  (stage: FailpointStage, effect: Effect.Effect<void, ReturnType<typeof domainError>>) =>
  (reached: FailpointStage) => (reached === stage ? effect : Effect.void);

const injected = domainError({
  code: "ENGINE_FAILED",
  reason: "LOCAL_IO",
  message: "injected",
});

describe("pack upload", () => {
  it("fails before the upload: STORAGE_FAILURE, nothing stored or published", async () => {
    const { w, nb, etag } = await edited();
    w.faults.inject({ ops: ["put"], key: /^packs\//, fault: { _tag: "FailBefore" } });
    const error = await commitFails(nb);
    expect([error.code, error.reason, error.retryable]).toEqual([
      "STORAGE_FAILURE",
      "STORE_UNAVAILABLE",
      true,
    ]);
    expect(await keysOf(w.store, "packs/increments/")).toEqual([]);
    await expectUnpublishedThenRetry(w, etag);
  });

  it("times out during the upload without landing: verified absent, TIMEOUT, nothing published", async () => {
    const { w, nb, etag } = await edited();
    w.faults.inject({
      ops: ["put"],
      key: /^packs\//,
      fault: { _tag: "FailBefore", reason: "Ambiguous" },
    });
    const error = await commitFails(nb);
    expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "TIMEOUT"]);
    expect(w.faults.count("get", "packs/increments/")).toBe(1); // the read-back
    await expectUnpublishedThenRetry(w, etag);
  });

  it("a lost upload response is resolved by reading the pack back: OK", async () => {
    const { w, nb } = await edited();
    w.faults.inject({ ops: ["put"], key: /^packs\//, fault: { _tag: "FailAfter" } });
    const report = await commit(nb);
    expect(report.generation).toBe(2);
    expect(w.faults.count("get", "packs/increments/2-")).toBe(1);
    await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/x.md")).toBe("one\ntwo\n");
  });

  it("fails after the upload (failpoint): the pack is an orphan, nothing published", async () => {
    const { w, etag } = await edited();
    const nb = w.open({ failpoint: at("after-pack-upload", Effect.fail(injected)) });
    const error = await commitFails(nb);
    expect(error.reason).toBe("LOCAL_IO");
    const m = await manifestOf(w.store);
    const orphans = (await keysOf(w.store, "packs/")).filter(
      (k) => !referencedKeys(m!).includes(k),
    );
    expect(orphans).toHaveLength(1);
    await expectUnpublishedThenRetry(w, etag);
  });
});

describe("compare-and-swap of current", () => {
  it("the write fails before reaching the store: STORAGE_FAILURE, nothing published", async () => {
    const { w, nb, etag } = await edited();
    w.faults.inject({ ops: ["put"], key: "current", fault: { _tag: "FailBefore" } });
    const error = await commitFails(nb);
    expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "STORE_UNAVAILABLE"]);
    await expectUnpublishedThenRetry(w, etag);
  });

  it("a lost race re-merges and publishes both changes", async () => {
    const { w, nb } = await edited();
    await pull(w.open(), "/ws/b");
    const other = w.open();
    w.faults.inject({
      ops: ["put"],
      key: "current",
      fault: {
        _tag: "Interleave",
        effect: Effect.suspend(() => {
          w.write("/ws/b/y.md", "why\n");
          return other.commit({ path: "/ws/b", message: "y", author });
        }).pipe(Effect.orDie, Effect.asVoid),
      },
    });
    const report = await commit(nb);
    expect(report.generation).toBe(3);
    expect(w.read("/ws/a/y.md")).toBe("why\n");
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual({ "x.md": "one\ntwo\n", "y.md": "why\n" });
  });

  it("lost response, publication found: OK and the copy settled", async () => {
    const { w, nb } = await edited();
    w.faults.inject({ ops: ["put"], key: "current", fault: { _tag: "FailAfter" } });
    const report = await commit(nb);
    expect(report).toEqual({
      path: "/ws/a",
      generation: 2,
      files: [{ path: "x.md", insertions: 1, deletions: 0 }],
    });
    expect(stateOf(w)).toMatchObject({ generation: 2, recoveryRequired: false });
    expect(w.faults.count("put", "current")).toBe(1);
  });

  it("lost response, publication found in a retained chain after a checkpoint: OK", async () => {
    const { w, nb } = await edited({ checkpointPacks: 1000 });
    await pull(w.open(), "/ws/b");
    const other = w.open({ checkpointPacks: 1, retainedCheckpoints: 1 });
    w.faults.inject({ ops: ["put"], key: "current", fault: { _tag: "FailAfter" } });
    // Before our re-read, another writer publishes and checkpoints our increment away.
    w.faults.inject({
      ops: ["get"],
      key: "current",
      skip: 1,
      fault: {
        _tag: "Interleave",
        effect: Effect.suspend(() => {
          w.write("/ws/b/y.md", "b1\n");
          return other.commit({ path: "/ws/b", message: "y", author });
        }).pipe(Effect.orDie, Effect.asVoid),
      },
    });
    const report = await commit(nb);
    expect(report.generation).toBe(2);
    const m = await manifestOf(w.store);
    expect(m!.increments.map((d) => d.generation)).not.toContain(2);
    expect(m!.retained[0]?.increments.map((d) => d.generation)).toContain(2);
    await pull(w.open(), "/ws/c");
    expect(w.files("/ws/c")).toEqual({ "x.md": "one\ntwo\n", "y.md": "b1\n" });
  });

  it("lost response, publication not found: PUBLICATION_UNKNOWN, copy kept, no republish", async () => {
    const { w, nb, etag } = await edited();
    w.faults.inject({
      ops: ["put"],
      key: "current",
      fault: { _tag: "FailBefore", reason: "Ambiguous" },
    });
    const error = await commitFails(nb);
    expect([error.code, error.reason, error.action, error.retryable]).toEqual([
      "STORAGE_FAILURE",
      "PUBLICATION_UNKNOWN",
      "PULL_TO_VERIFY",
      false,
    ]);
    expect(w.faults.count("put", "current")).toBe(1);
    // A following pull shows it did not land and keeps the edit; committing again publishes.
    const pulled = await pull(w.open());
    expect(pulled.generation).toBe(1);
    await expectUnpublishedThenRetry(w, etag);
  });

  it("lost response and the re-read fails too: PUBLICATION_UNKNOWN, never OK", async () => {
    const { w, nb } = await edited();
    let swapped = false;
    const swapOfCurrent = (key: string) => {
      if (key === "current") swapped = true;
      return key === "current";
    };
    w.faults.inject({ ops: ["put"], key: swapOfCurrent, fault: { _tag: "FailAfter" } });
    // The re-read that would resolve the lost response fails too.
    w.faults.inject({
      ops: ["get"],
      key: (key) => key === "current" && swapped,
      fault: { _tag: "FailBefore" },
    });
    const error = await commitFails(nb);
    expect(error.reason).toBe("PUBLICATION_UNKNOWN");
    expect(w.read("/ws/a/x.md")).toBe("one\ntwo\n");
    // It did land: the next pull adopts it (identical on both sides), the next commit is a
    // no-op,
    expect((await manifestOf(w.store))?.generation).toBe(2);
    w.faults.clear();
    // and says that it completed that commit.
    expect(await pull(w.open())).toEqual({
      path: "/ws/a",
      generation: 2,
      files: [],
      interruptedCommit: { generation: 2 },
    });
    expect((await commit(w.open())).files).toEqual([]);
  });

  it("no turn within the retry budget (another copy of this process holds it): REMOTE_BUSY, copy kept", async () => {
    const { w, nb } = await edited();
    await pull(w.open(), "/ws/b");
    w.write("/ws/b/y.md", "why\n");
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Copy A's swap of `current` stalls inside its turn until copy B has given up.
    const holding = stallCurrent(
      w,
      "put",
      Effect.promise(() => released),
    );
    const first = commit(nb);
    await holding;
    const error = await commitFails(w.open({ commitRetries: 0 }), "/ws/b");
    expect([error.code, error.reason]).toEqual(["REMOTE_BUSY", "CAS_RETRIES_EXHAUSTED"]);
    expect(error.message).toMatch(/busy publishing other working copies' commits/);
    expect(w.files("/ws/b")).toEqual({ "x.md": "one\n", "y.md": "why\n" });
    release();
    expect((await first).generation).toBe(2);
    w.faults.clear();
    expect((await commit(w.open(), "/ws/b")).generation).toBe(3);
  });

  it("a batch abandoned by another copy's failed upload, on the last attempt: REMOTE_BUSY saying so, copy kept", async () => {
    const { w, nb, etag } = await edited();
    await pull(w.open(), "/ws/b");
    w.write("/ws/b/y.md", "why\n");
    // Copy A reads `current` (not what this process last wrote), and that read stalls
    // while copy B starts and queues behind it (a few milliseconds of B's own work
    // against a 300 ms stall): B joins A's batch on its tip.
    rememberWritten(w.store.identity, Option.none());
    const aIsReading = stallCurrent(w, "get", Effect.sleep("300 millis"));
    // B's pack (generation 3, after A's 2) fails to upload, so the batch is abandoned.
    w.faults.inject({ ops: ["put"], key: /^packs\/increments\/3-/, fault: { _tag: "FailBefore" } });
    const victim = commitFails(w.open({ commitRetries: 0 }));
    await aIsReading;
    const other = commitFails(w.open(), "/ws/b");
    const [error, otherError] = await Promise.all([victim, other]);
    expect(otherError.code).toBe("STORAGE_FAILURE");
    expect([error.code, error.reason, error.retryable]).toEqual([
      "REMOTE_BUSY",
      "CAS_RETRIES_EXHAUSTED",
      true,
    ]);
    expect(error.message).toMatch(/abandoned because another working copy's upload/);
    expect(await etagOf(w.store)).toBe(etag);
    expect(w.read("/ws/a/x.md")).toBe("one\ntwo\n");
    expect(w.read("/ws/b/y.md")).toBe("why\n");
    w.faults.clear();
    expect((await commit(nb)).generation).toBe(2);
    expect((await commit(w.open(), "/ws/b")).generation).toBe(3);
  });

  it("retry exhaustion: REMOTE_BUSY, nothing of ours published, copy kept", async () => {
    const { w } = await edited();
    await pull(w.open(), "/ws/b");
    const other = w.open();
    let busy = false;
    let n = 0;
    w.faults.inject({
      ops: ["put"],
      key: (key) => key === "current" && !busy,
      times: Number.POSITIVE_INFINITY,
      fault: {
        _tag: "Interleave",
        // A writer that never carries this one's staged publication (commit/staging.ts):
        // its records are gone before each of the other's commits.
        effect: Effect.suspend(() => {
          busy = true;
          w.write("/ws/b/y.md", `${++n}\n`);
          return dropStaged(w.store).pipe(
            Effect.zipRight(other.commit({ path: "/ws/b", message: "y", author })),
          );
        }).pipe(Effect.orDie, Effect.asVoid, Effect.ensuring(Effect.sync(() => (busy = false)))),
      },
    });
    const nb = w.open({ commitRetries: 2 });
    const error = await commitFails(nb);
    expect([error.code, error.reason, error.retryable]).toEqual([
      "REMOTE_BUSY",
      "CAS_RETRIES_EXHAUSTED",
      true,
    ]);
    expect(error.message).toMatch(/Other participants kept publishing first/);
    // Four swaps lost: the first started from what this process last wrote (the setup's
    // commit) and was retried at once without counting, then the three attempts.
    expect(n).toBe(4);
    expect((await manifestOf(w.store))?.generation).toBe(5);
    expect(w.files("/ws/a")).toEqual({ "x.md": "one\ntwo\n" });
    expect(stateOf(w).generation).toBe(1);
    w.faults.clear();
    expect((await commit(w.open())).generation).toBe(6);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual({ "x.md": "one\ntwo\n", "y.md": "4\n" });
  });

  it("conflict: CONTENT_CONFLICT, remote unchanged, markers in the copy, commit refuses them", async () => {
    const { w, nb } = await edited();
    await pull(w.open(), "/ws/b");
    w.write("/ws/b/x.md", "one\nTHEIRS\n");
    await commit(w.open(), "/ws/b");
    const etag = await etagOf(w.store);
    const error = await commitFails(nb);
    expect([error.code, error.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(await etagOf(w.store)).toBe(etag);
    expect(w.read("/ws/a/x.md")).toContain("<<<<<<< local\ntwo\n=======\nTHEIRS\n>>>>>>> remote\n");
    expect(stateOf(w).generation).toBe(2);
    expect((await pull(w.open())).generation).toBe(2);
    expect((await commitFails(w.open())).reason).toBe("UNRESOLVED_MARKERS");
  });
});

describe("checkpoint and cleanup failures never fail the commit", () => {
  const crossing = async (options: Partial<NotebookOptions>) => {
    const w = world();
    const nb = w.open({ checkpointPacks: 2, ...options });
    await pull(nb);
    for (const text of ["1\n", "2\n", "3\n"]) {
      w.write("/ws/a/x.md", text);
      await commit(nb);
    }
    // generation 3 with increments 2, 3: the next publication makes three and crosses.
    w.write("/ws/a/x.md", "4\n");
    return { w, nb };
  };

  it("the checkpoint upload fails: OK, no checkpoint, the next publication makes it", async () => {
    const { w, nb } = await crossing({});
    w.faults.inject({ ops: ["put"], key: /^packs\/checkpoints\//, fault: { _tag: "FailBefore" } });
    expect((await commit(nb)).generation).toBe(4);
    const m = await manifestOf(w.store);
    expect([m?.generation, m?.checkpoint.generation, m?.increments.length]).toEqual([4, 1, 3]);
    w.write("/ws/a/x.md", "5\n");
    await commit(nb);
    expect((await manifestOf(w.store))?.checkpoint.generation).toBe(4);
  });

  it("the checkpoint swap's response is lost and it did not land: OK, manifest unchanged", async () => {
    const { w, nb } = await crossing({});
    w.faults.inject({
      ops: ["put"],
      key: "current",
      skip: 1,
      fault: { _tag: "FailBefore", reason: "Ambiguous" },
    });
    expect((await commit(nb)).generation).toBe(4);
    expect((await manifestOf(w.store))?.generation).toBe(4);
    await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/x.md")).toBe("4\n");
  });

  it("a failure or a crash just before the checkpoint swap leaves only an orphan", async () => {
    const failing = await crossing({
      failpoint: at("before-checkpoint-cas", Effect.fail(injected)),
    });
    expect((await commit(failing.nb)).generation).toBe(4);
    expect((await manifestOf(failing.w.store))?.checkpoint.generation).toBe(1);
    const crashing = await crossing({ failpoint: at("before-checkpoint-cas", Effect.interrupt) });
    await crashes(crashing.nb.commit({ path: "/ws/a", message: "m", author }));
    expect((await manifestOf(crashing.w.store))?.generation).toBe(4);
    expect(stateOf(crashing.w)).toMatchObject({ generation: 4, recoveryRequired: false });
    expect(await pull(crashing.w.open())).toEqual({ path: "/ws/a", generation: 4, files: [] });
  });

  it("cleanup fails (LIST or DELETE): OK, the checkpoint stands, a later cleanup catches up", async () => {
    for (const op of ["list", "delete"] as const) {
      const { w, nb } = await crossing({ retainedCheckpoints: 0 });
      // Cleanup's own requests (a commit also lists staged records: commit/staging.ts).
      w.faults.inject({ ops: [op], key: /^packs\//, fault: { _tag: "FailBefore" } });
      expect((await commit(nb)).generation).toBe(4);
      const m = await manifestOf(w.store);
      expect(m?.checkpoint.generation).toBe(3);
      expect((await keysOf(w.store, "packs/")).length).toBeGreaterThan(referencedKeys(m!).length);
      for (const text of ["5\n", "6\n", "7\n"]) {
        w.write("/ws/a/x.md", text);
        await commit(nb);
      }
      const later = await manifestOf(w.store);
      expect((await keysOf(w.store, "packs/")).sort()).toEqual(referencedKeys(later!).sort());
    }
  });
});

describe("damaged store", () => {
  it("a corrupt pack: CHECKSUM_MISMATCH on pull and commit, nothing written or published", async () => {
    const { w, nb, etag } = await edited();
    const m = await manifestOf(w.store);
    await Effect.runPromise(w.faults.corruptObject(m!.checkpoint.key));
    const error = await fails(w.open().pull({ path: "/ws/b" }));
    expect([error.code, error.reason, error.action]).toEqual([
      "STORAGE_INTEGRITY",
      "CHECKSUM_MISMATCH",
      "CONTACT_OPERATOR",
    ]);
    expect(w.files("/ws/b")).toEqual({});
    // The copy that has it cached is unaffected: the store is never re-read for a cached pack.
    expect((await commit(nb)).generation).toBe(2);
    expect(etag).not.toBe(await etagOf(w.store));
  });

  it("a corrupted response (in transit) is refused the same way", async () => {
    const { w } = await edited();
    w.faults.inject({ ops: ["get"], key: /^packs\//, fault: { _tag: "CorruptResponse" } });
    const error = await fails(w.open().pull({ path: "/ws/b" }));
    expect(error.reason).toBe("CHECKSUM_MISMATCH");
    w.faults.clear();
    await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/x.md")).toBe("one\n");
  });

  it("a pack whose size and SHA-256 match but whose blob is not its content id: PACK_INVALID, nothing written", async () => {
    const { w } = await edited();
    const m = await manifestOf(w.store);
    const key = m!.checkpoint.key;
    const stored = await Effect.runPromise(w.store.get(key));
    const bytes = Option.getOrThrow(stored).body.slice();
    // The blob "one\n" becomes "onX\n" under the same content id (a buggy or hostile
    // writer); the descriptor is made to describe the forged pack, so only the blob's own
    // id can tell.
    const at = Buffer.from(bytes).lastIndexOf("one\n");
    bytes[at + 2] = "X".charCodeAt(0);
    await Effect.runPromise(w.store.put(key, bytes, { _tag: "Unconditional" }));
    const forged = {
      ...m!,
      checkpoint: { ...m!.checkpoint, sha256: contentId(bytes) },
    };
    await Effect.runPromise(
      w.store.put("current", encodeText(encodeManifest(forged)), { _tag: "Unconditional" }),
    );
    const error = await fails(w.open().pull({ path: "/ws/b" }));
    expect([error.code, error.reason, error.action]).toEqual([
      "STORAGE_INTEGRITY",
      "PACK_INVALID",
      "CONTACT_OPERATOR",
    ]);
    expect(w.files("/ws/b")).toEqual({});
  });

  it("a missing pack with an unchanged manifest: PACK_MISSING after one re-read, no loop", async () => {
    const { w, nb } = await edited();
    await commit(nb);
    const m = await manifestOf(w.store);
    await Effect.runPromise(w.faults.deleteObject(m!.increments[0]!.key));
    w.faults.resetRequests();
    const error = await fails(w.open().pull({ path: "/ws/b" }));
    expect([error.code, error.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_MISSING"]);
    expect(w.faults.count("get", "current")).toBe(2);
    expect(w.files("/ws/b")).toEqual({});
  });

  it("a pack that vanished because current moved on: the reader re-reads and continues", async () => {
    const w = world();
    const writer = w.open({ checkpointPacks: 1, retainedCheckpoints: 0 });
    await pull(writer);
    w.write("/ws/a/x.md", "1\n");
    await commit(writer);
    w.write("/ws/a/x.md", "2\n");
    await commit(writer);
    // Before the reader fetches its first pack, two more publications checkpoint and
    // clean everything it was about to read.
    w.faults.inject({
      ops: ["get"],
      key: /^packs\//,
      fault: {
        _tag: "Interleave",
        effect: Effect.gen(function* () {
          for (const text of ["3\n", "4\n"]) {
            w.write("/ws/a/x.md", text);
            yield* writer.commit({ path: "/ws/a", message: "m", author });
          }
        }).pipe(Effect.orDie),
      },
    });
    const report = await pull(w.open(), "/ws/b");
    expect(w.read("/ws/b/x.md")).toBe("4\n");
    expect(report.generation).toBe((await manifestOf(w.store))?.generation);
  });

  it("a malformed answer for current (a foreign file in its place): MANIFEST_INVALID, not PACK_INVALID", async () => {
    const { w } = await edited();
    w.faults.inject({
      ops: ["get"],
      key: "current",
      fault: { _tag: "FailBefore", reason: "Corrupt" },
    });
    const error = await fails(w.open().pull({ path: "/ws/b" }));
    expect([error.code, error.reason, error.action]).toEqual([
      "STORAGE_INTEGRITY",
      "MANIFEST_INVALID",
      "CONTACT_OPERATOR",
    ]);
    expect(w.files("/ws/b")).toEqual({});
  });

  it("a write of current the store answers as malformed (a foreign file in its history): MANIFEST_INVALID, not PACK_INVALID", async () => {
    const { w, nb } = await edited();
    w.faults.inject({
      ops: ["put"],
      key: "current",
      fault: { _tag: "FailBefore", reason: "Corrupt" },
    });
    const error = await commitFails(nb);
    expect([error.code, error.reason, error.action]).toEqual([
      "STORAGE_INTEGRITY",
      "MANIFEST_INVALID",
      "CONTACT_OPERATOR",
    ]);
    expect(w.read("/ws/a/x.md")).toBe("one\ntwo\n");
  });

  it("a corrupt or unknown-version manifest: refused before any pack is read, commit publishes nothing", async () => {
    for (const [body, reason] of [
      ["{not json", "MANIFEST_INVALID"],
      ['{"version":1,"generation":1}', "MANIFEST_INVALID"],
      ['{"version":2,"generation":9}', "UNSUPPORTED_VERSION"],
    ] as const) {
      const { w, nb } = await edited();
      await Effect.runPromise(w.store.put("current", encodeText(body), { _tag: "Unconditional" }));
      w.faults.resetRequests();
      const error = await commitFails(nb);
      expect([error.code, error.reason]).toEqual(["STORAGE_INTEGRITY", reason]);
      expect(w.faults.count("get", "packs/")).toBe(0);
      // The commit may have tried a swap from what this process last wrote; it failed.
      const current = await Effect.runPromise(w.store.get("current"));
      expect(Option.map(current, (o) => new TextDecoder().decode(o.body))).toEqual(
        Option.some(body),
      );
      expect(w.read("/ws/a/x.md")).toBe("one\ntwo\n");
      expect((await fails(w.open().pull({ path: "/ws/b" }))).reason).toBe(reason);
    }
  });
});

describe("crash and failure at each local stage", () => {
  /**
   * A published x.md and z.md, then edited x.md; meanwhile B deleted z.md and added
   * y1..y3 — so settling A's commit removes one file, then writes three.
   */
  const busyWorld = async () => {
    const w = world();
    const a = w.open();
    await pull(a);
    w.write("/ws/a/x.md", "one\n");
    w.write("/ws/a/z.md", "zed\n");
    await commit(a);
    w.write("/ws/a/x.md", "one\ntwo\n");
    const b = w.open();
    await pull(b, "/ws/b");
    w.remove("/ws/b/z.md");
    for (const name of ["y1", "y2", "y3"]) w.write(`/ws/b/${name}.md`, `${name}\n`);
    await commit(b, "/ws/b");
    return { w };
  };
  const unsettled = { "x.md": "one\ntwo\n", "z.md": "zed\n" };
  const expected = { "x.md": "one\ntwo\n", "y1.md": "y1\n", "y2.md": "y2\n", "y3.md": "y3\n" };
  const crashCommit = (w: World, stage: FailpointStage) =>
    crashes(
      w
        .open({ failpoint: at(stage, Effect.interrupt) })
        .commit({ path: "/ws/a", message: "m", author }),
    );

  it("crash after the pack upload: nothing published; the restarted copy publishes once", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "after-pack-upload");
    expect((await manifestOf(w.store))?.generation).toBe(2);
    expect(w.files("/ws/a")).toEqual(unsettled);
    expect(stateOf(w)).toMatchObject({ generation: 1, recoveryRequired: false });
    expect((await commit(w.open())).generation).toBe(3);
    expect(w.files("/ws/a")).toEqual(expected);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual(expected);
  });

  it("crash after the CAS: published; the restarted copy converges without republishing", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "after-cas");
    expect((await manifestOf(w.store))?.generation).toBe(3);
    expect(w.files("/ws/a")).toEqual(unsettled);
    expect(stateOf(w)).toMatchObject({ generation: 1, recoveryRequired: false });
    // status says the copy awaits settling, not just "unpublished changes".
    const status = await Effect.runPromise(w.open().status({ path: "/ws/a" }));
    expect(status.recoveryPending).toBe(true);
    const again = await commit(w.open());
    expect(again.generation).toBe(3);
    expect(w.files("/ws/a")).toEqual(expected);
    expect((await manifestOf(w.store))?.generation).toBe(3);
  });

  it("crash after the CAS, then more edits: the next commit publishes only them, no conflict", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "after-cas");
    w.write("/ws/a/x.md", "one\ntwo\nthree\n");
    const next = await commit(w.open());
    expect(next).toMatchObject({
      generation: 4,
      files: [{ path: "x.md", insertions: 1, deletions: 0 }],
    });
    const final = { ...expected, "x.md": "one\ntwo\nthree\n" };
    expect(w.files("/ws/a")).toEqual(final);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual(final);
  });

  it("crash after the CAS, then a pull that meets a conflict: its error says the earlier commit is published", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "after-cas");
    const b = w.open();
    await pull(b, "/ws/b");
    w.write("/ws/b/x.md", "one\ntwo, by b\n");
    await commit(b, "/ws/b");
    w.write("/ws/a/x.md", "one\ntwo, by a\n");
    const error = await fails(w.open().pull({ path: "/ws/a" }));
    expect([error.code, error.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(error.files.map((file) => file.path)).toEqual(["x.md"]);
    expect(error.message).toContain(
      "An earlier commit of this working copy, interrupted after the notebook accepted it, is published as generation 3, and the working copy was settled on it",
    );
  });

  it("crash after the CAS, then a commit of more edits that fails: its error says the earlier one is published", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "after-cas");
    w.write("/ws/a/x.md", "one\ntwo\nthree\n");
    w.faults.inject({ ops: ["put"], key: /^packs\//, fault: { _tag: "FailBefore" } });
    const error = await commitFails(w.open());
    expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "STORE_UNAVAILABLE"]);
    expect(error.message).toMatch(
      /^The store could not be used.*[.] An earlier commit of this working copy, interrupted after the notebook accepted it, is published as generation 3, and the working copy was settled on it; only this call's own changes are concerned by the error\.$/s,
    );
    // The copy was settled on it: the next commit publishes only the new edit.
    w.faults.clear();
    expect(await commit(w.open())).toMatchObject({
      generation: 4,
      files: [{ path: "x.md", insertions: 1, deletions: 0 }],
    });
  });

  it("crash between the rewrite intent and the recovery flag of a commit: recovered against its publication", async () => {
    const { w } = await busyWorld();
    // The first state.json write of the call is the one setting recoveryRequired.
    const crashingFs: FileSystemService = {
      ...w.fs,
      writeFileAtomic: (path, bytes, options) =>
        path.endsWith("/state.json")
          ? Effect.interrupt
          : w.fs.writeFileAtomic(path, bytes, options),
    };
    const nb = Effect.runSync(
      makeNotebook({ store: w.store, fs: crashingFs, ids: ids.make(), options: baseOptions }),
    );
    await crashes(nb.commit({ path: "/ws/a", message: "m", author }));
    expect((await manifestOf(w.store))?.generation).toBe(3);
    expect(stateOf(w)).toMatchObject({ generation: 1, recoveryRequired: false });
    w.write("/ws/a/x.md", "one\ntwo\nthree\n");
    const next = await commit(w.open());
    expect(next).toMatchObject({
      generation: 4,
      files: [{ path: "x.md", insertions: 1, deletions: 0 }],
    });
    expect(w.files("/ws/a")).toEqual({ ...expected, "x.md": "one\ntwo\nthree\n" });
  });

  it("an intent whose publication did not land is ignored and cleared", async () => {
    const { w } = await busyWorld();
    const nb = w.open({ failpoint: at("after-pack-upload", Effect.fail(injected)) });
    expect((await commitFails(nb)).reason).toBe("LOCAL_IO");
    expect(w.exists(`${copyDirectory("/private", "/ws/a", w.store.identity)}/intent.json`)).toBe(
      true,
    );
    const next = await commit(w.open());
    expect(next.generation).toBe(3);
    expect(w.files("/ws/a")).toEqual(expected);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual(expected);
  });

  it("crash mid-materialisation: flagged; the next call resynchronises first", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "mid-materialisation");
    expect((await manifestOf(w.store))?.generation).toBe(3);
    expect(stateOf(w)).toMatchObject({ generation: 1, recoveryRequired: true });
    // z.md was removed (the first step of the rewrite); none of y1..y3 was written yet.
    expect(w.files("/ws/a")).toEqual({ "x.md": "one\ntwo\n" });
    const next = await commit(w.open());
    expect(next).toMatchObject({ generation: 3, files: [] });
    expect(w.files("/ws/a")).toEqual(expected);
    expect(stateOf(w)).toMatchObject({ generation: 3, recoveryRequired: false });
  });

  it("crash mid-materialisation, then an edit: one call resynchronises and publishes, and its state stays readable", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "mid-materialisation");
    w.write("/ws/a/x.md", "one\ntwo\nthree\n");
    // Two settles in one call: the resync's, then the publication's. The housekeeping
    // after the answer must keep the baseline the call recorded last.
    const next = await commit(w.open());
    expect(next.generation).toBe(4);
    const copyDir = copyDirectory("/private", "/ws/a", w.store.identity);
    const recorded = JSON.parse(w.read(`${copyDir}/state.json`)) as { baseline: string };
    expect(await pull(w.open())).toMatchObject({ generation: 4, files: [] });
    expect(w.read(`${copyDir}/${recorded.baseline}`).length).toBeGreaterThan(0);
    expect(stateOf(w)).toMatchObject({ generation: 4, recoveryRequired: false });
  });

  it("crash before the state record: flagged; the next pull resynchronises", async () => {
    const { w } = await busyWorld();
    await crashCommit(w, "before-state-record");
    expect(w.files("/ws/a")).toEqual(expected);
    expect(stateOf(w)).toMatchObject({ generation: 1, recoveryRequired: true });
    expect(await pull(w.open())).toMatchObject({ generation: 3, files: [] });
    expect(stateOf(w)).toMatchObject({ generation: 3, recoveryRequired: false });
  });

  /**
   * A and B share two sectioned files; B appended to both, A edited its own sections and
   * commits — settling A rewrites both files. A crashes at `stage`; B appends again;
   * A's recovery must merge each file against what it derives from, without conflicts.
   */
  const movedOn = async (stage: FailpointStage, editAfterCrash = false) => {
    const w = world();
    const a = w.open();
    await pull(a);
    const sectioned = "== a ==\n== end a ==\n== b ==\n== end b ==\n";
    w.write("/ws/a/s1.md", sectioned);
    w.write("/ws/a/s2.md", sectioned);
    await commit(a);
    const b = w.open();
    await pull(b, "/ws/b");
    const add = (dir: string, file: string, who: string, line: string) =>
      w.write(
        `${dir}/${file}`,
        w.read(`${dir}/${file}`).replace(`== end ${who} ==`, `${line}\n== end ${who} ==`),
      );
    for (const file of ["s1.md", "s2.md"]) add("/ws/b", file, "b", "b1");
    await commit(b, "/ws/b");
    for (const file of ["s1.md", "s2.md"]) add("/ws/a", file, "a", "a1");
    await crashes(
      w
        .open({ failpoint: at(stage, Effect.interrupt) })
        .commit({ path: "/ws/a", message: "m", author }),
    );
    expect(stateOf(w).recoveryRequired).toBe(true);
    await pull(b, "/ws/b");
    for (const file of ["s1.md", "s2.md"]) add("/ws/b", file, "b", "b2");
    await commit(b, "/ws/b");
    if (editAfterCrash) for (const file of ["s1.md", "s2.md"]) add("/ws/a", file, "a", "a2");
    const recovered = await pull(w.open());
    const mine = editAfterCrash ? "a1\na2\n" : "a1\n";
    const final = `== a ==\n${mine}== end a ==\n== b ==\nb1\nb2\n== end b ==\n`;
    expect(w.files("/ws/a")).toEqual({ "s1.md": final, "s2.md": final });
    expect(recovered.generation).toBe(4);
    expect(stateOf(w)).toMatchObject({ generation: 4, recoveryRequired: false });
    // Only the edits made after the crash are left to publish.
    const next = await commit(w.open());
    expect(next.files.map((f) => [f.path, f.insertions, f.deletions])).toEqual(
      editAfterCrash
        ? [
            ["s1.md", 1, 0],
            ["s2.md", 1, 0],
          ]
        : [],
    );
  };

  it("recovery after a crash before the state record merges against the settled state, though current moved on", async () => {
    await movedOn("before-state-record");
  });

  it("recovery after a crash mid-materialisation merges each file against what it derives from", async () => {
    await movedOn("mid-materialisation");
  });

  it("recovery rolls forward files edited after the crash, rewritten or not", async () => {
    await movedOn("mid-materialisation", true);
    await movedOn("before-state-record", true);
  });

  it("a failure mid-materialisation is repaired at once: RECOVERY_FAILURE, resynchronized", async () => {
    const { w } = await busyWorld();
    const nb = w.open({ failpoint: at("mid-materialisation", Effect.fail(injected)) });
    const error = await commitFails(nb);
    expect([error.code, error.reason, error.action]).toEqual([
      "RECOVERY_FAILURE",
      "UNEXPECTED_FAILURE",
      "PULL_AGAIN",
    ]);
    expect(error.recovery).toEqual({
      stage: "rewrite-working-copy",
      remoteAccepted: "yes",
      resynchronized: true,
    });
    expect(w.files("/ws/a")).toEqual(expected);
    expect(stateOf(w)).toMatchObject({ generation: 3, recoveryRequired: false });
  });

  it("a persistent failure before the state record: RECOVERY_PENDING; the next call repairs", async () => {
    const { w } = await busyWorld();
    const nb = w.open({ failpoint: at("before-state-record", Effect.fail(injected)) });
    const error = await commitFails(nb);
    expect([error.code, error.reason]).toEqual(["RECOVERY_FAILURE", "RECOVERY_PENDING"]);
    expect(error.recovery).toEqual({
      stage: "rewrite-working-copy",
      remoteAccepted: "yes",
      resynchronized: false,
    });
    expect(stateOf(w).recoveryRequired).toBe(true);
    expect(await commit(w.open())).toMatchObject({ generation: 3, files: [] });
    expect(stateOf(w)).toMatchObject({ generation: 3, recoveryRequired: false });
  });

  it("a pull that wrote conflict blocks and failed: the pull that settles the copy reports them", async () => {
    const w = world();
    const a = w.open();
    await pull(a);
    w.write("/ws/a/x.md", "one\ntwo\n");
    await commit(a);
    const b = w.open();
    await pull(b, "/ws/b");
    w.write("/ws/b/x.md", "one\nTWO by b\n");
    await commit(b, "/ws/b");
    w.write("/ws/a/x.md", "one\ntwo by a\n");
    const failing = w.open({ failpoint: at("before-state-record", Effect.fail(injected)) });
    const error = await fails(failing.pull({ path: "/ws/a" }));
    expect([error.code, error.reason]).toEqual(["RECOVERY_FAILURE", "RECOVERY_PENDING"]);
    expect(w.read("/ws/a/x.md")).toContain("<<<<<<< local");
    expect(stateOf(w).recoveryRequired).toBe(true);
    // Settling the copy must not answer OK over the blocks that failed pull wrote.
    const settling = await fails(w.open().pull({ path: "/ws/a" }));
    expect([settling.code, settling.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(settling.files).toEqual([
      { path: "x.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(stateOf(w)).toMatchObject({ generation: 2, recoveryRequired: false });
    // Once resolved, a commit publishes the resolution.
    w.write("/ws/a/x.md", "one\nboth\n");
    expect((await commit(w.open())).generation).toBe(3);
  });

  it("a failure after the CAS, before the copy changes: RECOVERY_FAILURE with remoteAccepted yes", async () => {
    const { w } = await busyWorld();
    const nb = w.open({ failpoint: at("after-cas", Effect.fail(injected)) });
    const error = await commitFails(nb);
    expect(error.code).toBe("RECOVERY_FAILURE");
    expect(error.recovery).toEqual({
      stage: "after-publication",
      remoteAccepted: "yes",
      resynchronized: true,
    });
    expect(error.message).toContain("then a local step failed");
    expect(w.files("/ws/a")).toEqual(expected);
    expect((await manifestOf(w.store))?.generation).toBe(3);
    expect(await commit(w.open())).toMatchObject({ generation: 3, files: [] });
  });

  it("a store failure after the CAS is not called a local one", async () => {
    const { w } = await busyWorld();
    const storeDown = domainError({
      code: "STORAGE_FAILURE",
      reason: "TIMEOUT",
      message: "injected",
    });
    const nb = w.open({ failpoint: at("after-cas", Effect.fail(storeDown)) });
    const error = await commitFails(nb);
    expect([error.code, error.recovery?.remoteAccepted]).toEqual(["RECOVERY_FAILURE", "yes"]);
    expect(error.message).toContain("then reading the notebook back from the store failed");
    expect(error.message).not.toContain("local");
  });
});
