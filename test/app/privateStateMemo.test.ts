import { Effect, Option } from "effect";
import { describe, expect, it } from "vitest";
import { make } from "../../src/adapters/memFileSystem.js";
import { domainError, type DomainError } from "../../src/domain/errors.js";
import {
  ensureCopyDirectory,
  loadState,
  loadStats,
  makePrivateStateMemo,
  markRecoveryRequired,
  saveBaseline,
  saveStats,
  type BlobRef,
} from "../../src/app/usecases/workingCopy/privateState.js";

const sha = (c: string) => c.repeat(64);
const ref = (id: string): BlobRef => ({ id: sha(id), pack: sha("c"), offset: 0, size: 1 });
const copyDir = "/private/copies/x";

// Two memos on one directory stand for two processes sharing a working copy (a CLI
// call while `quire serve` runs): what one writes, the other must see on its next call.
describe("private state remembered in process", () => {
  it("re-reads a baseline another process replaced, and sees its own writes without reading", async () => {
    const { service: fs, vol } = make();
    const server = makePrivateStateMemo();
    const cli = makePrivateStateMemo();
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    await run(ensureCopyDirectory(fs, copyDir));
    const first = await run(
      saveBaseline(
        fs,
        copyDir,
        server,
        { generation: 1, head: "h1", baseline: new Map([["a.md", ref("a")]]) },
        "aaaaaaaaaaaa",
      ),
    );
    const remembered = await run(loadState(fs, copyDir, server));
    expect(Option.getOrThrow(remembered)).toBe(first); // no re-decode: the same object

    const seenByCli = Option.getOrThrow(await run(loadState(fs, copyDir, cli)));
    expect(seenByCli).toEqual(first);
    await run(
      saveBaseline(
        fs,
        copyDir,
        cli,
        { generation: 2, head: "h2", baseline: new Map([["b.md", ref("b")]]) },
        "bbbbbbbbbbbb",
      ),
    );
    const reloaded = Option.getOrThrow(await run(loadState(fs, copyDir, server)));
    expect(reloaded.generation).toBe(2);
    expect([...reloaded.baseline.keys()]).toEqual(["b.md"]);

    await run(markRecoveryRequired(fs, copyDir, cli, reloaded));
    expect(Option.getOrThrow(await run(loadState(fs, copyDir, server))).recoveryRequired).toBe(
      true,
    );

    // A corrupted record is never masked by what was remembered.
    vol.writeFileSync(`${copyDir}/state.json`, "{");
    const corrupt = await Effect.runPromiseExit(loadState(fs, copyDir, server));
    expect(corrupt._tag).toBe("Failure");
    vol.unlinkSync(`${copyDir}/state.json`);
    expect(Option.isNone(await run(loadState(fs, copyDir, server)))).toBe(true);
  });

  it("re-reads a stat cache another process rewrote, and forgets one that vanished", async () => {
    const { service: fs, vol } = make();
    const server = makePrivateStateMemo();
    const cli = makePrivateStateMemo();
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    await run(ensureCopyDirectory(fs, copyDir));
    const stamp = (size: number) => ({ size, mtimeMs: 1, ctimeMs: 1, ino: 7, id: sha("a") });
    const mine = { stamps: new Map([["a.md", stamp(1)]]), recordedAtMs: 10 };
    await run(saveStats(fs, copyDir, server, mine));
    expect(await run(loadStats(fs, copyDir, server))).toBe(mine);

    await run(
      saveStats(fs, copyDir, cli, { stamps: new Map([["a.md", stamp(2)]]), recordedAtMs: 20 }),
    );
    const seen = await run(loadStats(fs, copyDir, server));
    expect(seen.recordedAtMs).toBe(20);
    expect(seen.stamps.get("a.md")?.size).toBe(2);

    vol.unlinkSync(`${copyDir}/stats.json`);
    expect((await run(loadStats(fs, copyDir, server))).stamps.size).toBe(0);
  });

  it("keeps only the most recently used copies, and reads a forgotten one again", async () => {
    const { service: fs } = make();
    const memo = makePrivateStateMemo(2);
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    const dirs = ["/private/copies/a", "/private/copies/b", "/private/copies/c"];
    const saved = [];
    for (const [i, dir] of dirs.entries()) {
      await run(ensureCopyDirectory(fs, dir));
      const baseline = new Map([[`f${i}.md`, ref("a")]]);
      saved.push(
        await run(saveBaseline(fs, dir, memo, { generation: 1, head: "h", baseline }, "s")),
      );
      // `a` is used between the writes of `b` and `c`: `b` is the least recently used.
      if (i === 1)
        expect(Option.getOrThrow(await run(loadState(fs, dirs[0] ?? "", memo)))).toBe(saved[0]);
    }
    expect(memo.states.size()).toBe(2);
    expect(memo.states.get(dirs[1] ?? "")).toBeUndefined();
    expect(Option.getOrThrow(await run(loadState(fs, dirs[0] ?? "", memo)))).toBe(saved[0]);
    const reread = Option.getOrThrow(await run(loadState(fs, dirs[1] ?? "", memo)));
    expect(reread).not.toBe(saved[1]);
    expect(reread).toEqual(saved[1]);
    expect(memo.states.size()).toBe(2);
  });
});

describe("recording a baseline", () => {
  /** A fresh copy directory, and a way to record generation `generation` holding `name`.md. */
  const fresh = async () => {
    const { service: fs, vol } = make();
    const memo = makePrivateStateMemo();
    await Effect.runPromise(ensureCopyDirectory(fs, copyDir));
    const save = (
      generation: number,
      name: string,
      suffix: string,
      ready: Effect.Effect<void, DomainError> = Effect.void,
    ) =>
      saveBaseline(
        fs,
        copyDir,
        memo,
        { generation, head: `h${generation}`, baseline: new Map([[`${name}.md`, ref("a")]]) },
        suffix,
        ready,
      );
    return { fs, vol, save };
  };

  it("removes every other baseline file, an unrecorded one included", async () => {
    const { vol, save } = await fresh();
    await Effect.runPromise(save(1, "a", "one"));
    // What a call that crashed between the baseline file and the record leaves behind.
    vol.writeFileSync(`${copyDir}/baseline-2-crashed.json`, "{}");
    const state = await Effect.runPromise(save(3, "b", "two"));
    expect(state.baselineFile).toBe("baseline-3-two.json");
    expect(vol.readdirSync(copyDir).map(String).sort()).toEqual([
      "baseline-3-two.json",
      "packs",
      "state.json",
    ]);
  });

  it("leaves the record as it was when what must be durable first fails", async () => {
    const { fs, save } = await fresh();
    const first = await Effect.runPromise(save(1, "a", "one"));
    const cacheFailed = domainError({
      code: "ENGINE_FAILED",
      reason: "LOCAL_IO",
      message: "cache write failed",
    });
    const failed = await Effect.runPromiseExit(save(2, "b", "two", Effect.fail(cacheFailed)));
    expect(failed._tag).toBe("Failure");
    const recorded = await Effect.runPromise(loadState(fs, copyDir, makePrivateStateMemo()));
    expect(Option.getOrThrow(recorded)).toEqual(first);
  });
});
