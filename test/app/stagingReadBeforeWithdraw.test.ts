/**
 * A staged record read by another writer before its own writer withdrew it: the limit
 * docs/storage.md "Staged publications" (Cleanup) names. A's first commit is answered
 * PUBLICATION_UNKNOWN and withdraws its record, but B read it first; A's next commit (the
 * same edit and more) finds `current` still without it, stages again, and loses to B's
 * swap, which takes the old record and leaves the new one out as overlapping. Today the
 * next attempt merges onto A's own earlier text as if it were someone else's and ends in
 * a conflict, with nothing lost. Whether the swap takes the old record in time is a race,
 * so the test accepts that conflict or OK and checks that nothing is lost either way;
 * once a fix settles the copy on its earlier publication (as recovery does when
 * `current` names it), expect OK only.
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
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

const codeOf = (exit: Exit.Exit<SyncReport, DomainError>): string => {
  if (Exit.isSuccess(exit)) return "OK";
  const failure = Option.getOrThrow(Cause.failureOption(exit.cause));
  return `${failure.code}/${failure.reason}`;
};

describe("a staged record another writer read before it was withdrawn", () => {
  it("may land in that writer's swap; its own writer's next commit then loses nothing, though it may conflict with its own earlier text", async () => {
    const counted = instrument(memoryStore.make(), { latency: "2 millis" });
    const shared = counted.store;
    let failASwap = false;
    let holdB = false;
    let releaseB: () => void = () => {};
    const bReleased = new Promise<void>((resolve) => (releaseB = resolve));
    const storeA: ObjectStoreService = {
      ...shared,
      identity: `${shared.identity}#readBefore-a`,
      putAfter: (key, body, condition, after) =>
        failASwap && key === "current"
          ? after.pipe(
              Effect.zipRight(
                Effect.sync(() => {
                  failASwap = false;
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
        holdB && key === "current"
          ? Effect.promise(() => bReleased).pipe(
              Effect.zipRight(shared.putAfter(key, body, condition, after)),
            )
          : shared.putAfter(key, body, condition, after),
    };
    const a = memNotebook(storeA);
    const b = memNotebook(storeB);
    a.write("/ws/a/seed.md", "seed\n");
    await Effect.runPromise(a.notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(a.notebook.commit({ path: "/ws/a", message: "seed", author }));
    await Effect.runPromise(b.notebook.pull({ path: "/ws/a" }));
    const now = Effect.runSync(Clock.currentTimeMillis);
    noteContention(storeA.identity, now);
    noteContention(storeB.identity, now);
    a.write("/ws/a/a.md", "1\n");
    b.write("/ws/a/b.md", "b\n");
    failASwap = true;
    holdB = true;
    const result = await Effect.runPromise(
      Effect.gen(function* () {
        const commitB = yield* Effect.fork(
          Effect.exit(b.notebook.commit({ path: "/ws/a", message: "b", author })),
        );
        const first = yield* Effect.exit(
          Effect.delay(a.notebook.commit({ path: "/ws/a", message: "a 1", author }), "1 millis"),
        );
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
        releaseB();
        return {
          first: codeOf(first),
          second: codeOf(yield* Fiber.join(second)),
          b: codeOf(yield* Fiber.join(commitB)),
        };
      }),
    );
    expect(result.first).toBe("STORAGE_FAILURE/PUBLICATION_UNKNOWN");
    expect(result.b).toBe("OK");
    // Whether B's swap takes A's old record before A's second round ends is a race:
    // either A's second commit is OK (the record was not taken in time), or it conflicts
    // with its own earlier text (the gap). Either way nothing of A's is lost.
    expect(["OK", "CONTENT_CONFLICT/MERGE_CONFLICT"]).toContain(result.second);
    const text = a.read("/ws/a/a.md");
    if (result.second === "OK") expect(text).toBe("1\n2\n");
    else {
      expect(text).toMatch(/^<<<<<<< /m);
      expect(text).toContain("2\n");
    }
  });
});
