/**
 * A staged record read by another writer before its own writer withdrew it (docs/storage.md
 * "Staged publications", Cleanup). A's first commit is answered PUBLICATION_UNKNOWN and
 * withdraws its record, but B read it first; A's next commit (the same edit and more)
 * finds `current` still without it, stages again, and loses to B's swap, which takes the
 * old record and leaves the new one out as overlapping. A's copy remembered the withdrawn
 * publication, so it settles on it as recovery does (its content is A's own) and
 * publishes the rest: OK, never a conflict with its own earlier text. And when the
 * record cannot land any more, or lands before others change the same file, nothing of
 * anyone's is lost.
 */
import { Cause, Clock, Effect, Exit, Fiber, Option } from "effect";
import { describe, expect, it } from "vitest";
import { instrument } from "../../src/adapters/instrumentedObjectStore.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { SyncReport } from "../../src/app/Notebook.js";
import { noteContention } from "../../src/app/usecases/commit/staging.js";
import type { DomainError } from "../../src/domain/errors.js";
import { stagingPrefix } from "../../src/domain/staging.js";
import { StoreError, type ObjectStoreService } from "../../src/ports/ObjectStore.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import { memNotebook, openOn } from "./memNotebook.js";

const author = { name: "test", version: "1" };

const codeOf = (exit: Exit.Exit<SyncReport, DomainError>): string => {
  if (Exit.isSuccess(exit)) return "OK";
  const failure = Option.getOrThrow(Cause.failureOption(exit.cause));
  return `${failure.code}/${failure.reason}`;
};

/**
 * Two writers on one store, A and B, both contending: A's swaps of `current` can be made
 * to fail once (after its record is staged), B's held until released.
 */
const setup = async () => {
  const counted = instrument(memoryStore.make(), { latency: "2 millis" });
  const shared = counted.store;
  const control = { failASwap: false, holdB: false, releaseB: () => {} };
  const bReleased = new Promise<void>((resolve) => (control.releaseB = resolve));
  const storeA: ObjectStoreService = {
    ...shared,
    identity: `${shared.identity}#readBefore-a`,
    putAfter: (key, body, condition, after) =>
      control.failASwap && key === "current"
        ? after.pipe(
            Effect.zipRight(
              Effect.sync(() => {
                control.failASwap = false;
              }),
            ),
            Effect.zipRight(
              Effect.fail(new StoreError({ reason: "Unavailable", message: "unavailable" })),
            ),
          )
        : shared.putAfter(key, body, condition, after),
  };
  const storeB: ObjectStoreService = {
    ...shared,
    identity: `${shared.identity}#readBefore-b`,
    putAfter: (key, body, condition, after) =>
      control.holdB && key === "current"
        ? Effect.promise(() => bReleased).pipe(
            Effect.zipRight(shared.putAfter(key, body, condition, after)),
          )
        : shared.putAfter(key, body, condition, after),
  };
  // A's file system is its own, so that A can be opened again on it (a restart).
  const { service: fsA, vol: volA } = memFs.make({ "/ws/.keep": "" });
  volA.unlinkSync("/ws/.keep");
  const a = {
    notebook: openOn(storeA, fsA),
    reopen: () => openOn(storeA, fsA),
    read: (path: string) => volA.readFileSync(path, "utf8").toString(),
    write: (path: string, text: string) => {
      volA.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      volA.writeFileSync(path, text);
    },
  };
  const { service: fsB, vol: volB } = memFs.make({ "/ws/.keep": "" });
  volB.unlinkSync("/ws/.keep");
  const b = {
    notebook: openOn(storeB, fsB),
    read: (path: string) => volB.readFileSync(path, "utf8").toString(),
    write: (path: string, text: string) => {
      volB.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      volB.writeFileSync(path, text);
    },
  };
  a.write("/ws/a/seed.md", "seed\n");
  await Effect.runPromise(a.notebook.pull({ path: "/ws/a" }));
  await Effect.runPromise(a.notebook.commit({ path: "/ws/a", message: "seed", author }));
  await Effect.runPromise(b.notebook.pull({ path: "/ws/a" }));
  const now = Effect.runSync(Clock.currentTimeMillis);
  noteContention(storeA.identity, now);
  noteContention(storeB.identity, now);
  return { shared, storeA, a, b, control };
};

type Setup = Awaited<ReturnType<typeof setup>>;

/**
 * A commits "1" and is answered PUBLICATION_UNKNOWN, its record withdrawn after B's
 * commit (held at its swap) read it: B's fiber, to join once B is released.
 */
const withdrawnAfterBRead = (s: Setup, bFile: string, bText: string) =>
  Effect.gen(function* () {
    s.a.write("/ws/a/a.md", "1\n");
    s.b.write(bFile, bText);
    s.control.failASwap = true;
    s.control.holdB = true;
    const commitB = yield* Effect.fork(
      Effect.exit(s.b.notebook.commit({ path: "/ws/a", message: "b", author })),
    );
    const first = yield* Effect.exit(
      Effect.delay(s.a.notebook.commit({ path: "/ws/a", message: "a 1", author }), "1 millis"),
    );
    return { commitB, first: codeOf(first) };
  });

/** What a fresh copy pulls of `path`: `current`'s accepted text. */
const accepted = async (s: Setup, path: string) => {
  const c = memNotebook(s.shared);
  await Effect.runPromise(c.notebook.pull({ path: "/ws/a" }));
  return c.read(path);
};

/**
 * A's commit withdrawn after B read it (on a state past A's baseline: a third writer
 * published first); A pulls while B's swap is held; B's swap then takes A's record, B
 * changes A's file and commits; A's process restarts, edits on, and commits.
 */
const landsThenChanged = async () => {
  const s = await setup();
  const { a, b } = s;
  const result = await Effect.runPromise(
    Effect.gen(function* () {
      // A third writer publishes first: A's commit merges onto a state past A's
      // baseline, so the pull below moves that baseline (A's earlier intent no longer
      // belongs to it).
      const c = memNotebook(s.shared);
      yield* c.notebook.pull({ path: "/ws/a" });
      c.write("/ws/a/c.md", "c\n");
      yield* c.notebook.commit({ path: "/ws/a", message: "c", author });
      const { commitB, first } = yield* withdrawnAfterBRead(s, "/ws/a/b.md", "b\n");
      // A pulls while B's swap is held: `current` does not name A's commit yet.
      const pulled = codeOf(yield* Effect.exit(a.notebook.pull({ path: "/ws/a" })));
      s.control.releaseB();
      const bFirst = codeOf(yield* Fiber.join(commitB));
      // B's swap took A's old record: B's copy now has A's a.md, and changes it.
      yield* b.notebook.pull({ path: "/ws/a" });
      const landed = b.read("/ws/a/a.md");
      b.write("/ws/a/a.md", "0\n1\n");
      s.control.holdB = false;
      const bSecond = codeOf(
        yield* Effect.exit(b.notebook.commit({ path: "/ws/a", message: "b 2", author })),
      );
      // A's process restarts, edits on, and commits.
      const restarted = a.reopen();
      a.write("/ws/a/a.md", "1\n2\n");
      const second = yield* Effect.exit(
        restarted.commit({ path: "/ws/a", message: "a 2", author }),
      );
      return { first, pulled, bFirst, landed, bSecond, second: codeOf(second) };
    }),
  );
  return { result, a, s };
};

describe("a staged record another writer read before it was withdrawn", () => {
  it("may land in that writer's swap; its own writer's next commit settles on it and publishes the rest", async () => {
    const s = await setup();
    const { storeA, a } = s;
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        const { commitB, first } = yield* withdrawnAfterBRead(s, "/ws/a/b.md", "b\n");
        const listed = yield* storeA.list(stagingPrefix);
        a.write("/ws/a/a.md", "1\n2\n");
        const second = yield* Effect.fork(
          Effect.exit(a.notebook.commit({ path: "/ws/a", message: "a 2", author })),
        );
        // A's second commit stages its record; then B's swap (with A's first record) lands.
        for (let i = 0; i < 500; i++) {
          const keys = (yield* storeA.list(stagingPrefix)).map((info) => info.key);
          if (keys.some((key) => !listed.some((l) => l.key === key))) break;
          yield* Effect.sleep("2 millis");
        }
        s.control.releaseB();
        return {
          first,
          second: codeOf(yield* Fiber.join(second)),
          b: codeOf(yield* Fiber.join(commitB)),
        };
      }),
    );
    expect(result.first).toBe("STORAGE_FAILURE/PUBLICATION_UNKNOWN");
    expect(result.b).toBe("OK");
    expect(result.second).toBe("OK");
    expect(a.read("/ws/a/a.md")).toBe("1\n2\n");
    // `current` accepts A's second version.
    expect(await accepted(s, "/ws/a/a.md")).toBe("1\n2\n");
    expect(await accepted(s, "/ws/a/b.md")).toBe("b\n");
  });

  it("cannot land once its writer's next commit is accepted: the swap that read it loses, and nothing is undone", async () => {
    const s = await setup();
    const { a } = s;
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        const { commitB, first } = yield* withdrawnAfterBRead(s, "/ws/a/b.md", "b\n");
        a.write("/ws/a/a.md", "1\n2\n");
        // A's next commit, while B's swap with A's old record is still on its way.
        const second = codeOf(
          yield* Effect.exit(a.notebook.commit({ path: "/ws/a", message: "a 2", author })),
        );
        s.control.releaseB();
        const b = codeOf(yield* Fiber.join(commitB));
        a.write("/ws/a/a.md", "1\n2\n3\n");
        const third = codeOf(
          yield* Effect.exit(a.notebook.commit({ path: "/ws/a", message: "a 3", author })),
        );
        return { first, second, b, third };
      }),
    );
    expect(result).toEqual({
      first: "STORAGE_FAILURE/PUBLICATION_UNKNOWN",
      second: "OK",
      b: "OK",
      third: "OK",
    });
    expect(a.read("/ws/a/a.md")).toBe("1\n2\n3\n");
    expect(await accepted(s, "/ws/a/a.md")).toBe("1\n2\n3\n");
    expect(await accepted(s, "/ws/a/b.md")).toBe("b\n");
  });

  it("landing after its writer pulled (and restarted), then changed by another writer, is the writer's own: the other's change is merged in", async () => {
    const { result, a, s } = await landsThenChanged();
    expect(result).toEqual({
      first: "STORAGE_FAILURE/PUBLICATION_UNKNOWN",
      pulled: "OK",
      bFirst: "OK",
      landed: "1\n",
      bSecond: "OK",
      second: "OK",
    });
    expect(a.read("/ws/a/a.md")).toBe("0\n1\n2\n");
    expect(await accepted(s, "/ws/a/a.md")).toBe("0\n1\n2\n");
  });
});
