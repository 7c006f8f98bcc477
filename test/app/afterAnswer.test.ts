import { Deferred, Effect, Fiber } from "effect";
import { describe, expect, it } from "vitest";
import { tidyAfterAnswer, tidyUpsDone } from "../../src/app/usecases/shared/afterAnswer.js";
import { copyDirectory } from "../../src/app/usecases/workingCopy/privateState.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("housekeeping after the answer", () => {
  it("tidyUpsDone waits for every running tidy-up, and for those they start", async () => {
    const order: Array<string> = [];
    await Effect.runPromise(
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>();
        yield* tidyAfterAnswer(
          Deferred.await(gate).pipe(
            Effect.zipRight(Effect.sync(() => order.push("first"))),
            Effect.zipRight(tidyAfterAnswer(Effect.sync(() => order.push("second")))),
          ),
        );
        const done = yield* Effect.fork(
          tidyUpsDone.pipe(Effect.zipRight(Effect.sync(() => order.push("done")))),
        );
        yield* Effect.sleep("10 millis");
        expect(order).toEqual([]);
        yield* Deferred.succeed(gate, undefined);
        yield* Fiber.join(done);
      }),
    );
    expect(order).toEqual(["first", "second", "done"]);
  });

  it("a commit's housekeeping prunes the old baseline, writes the stat cache and releases the lock", async () => {
    const { notebook, vol, write, store } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    const copyDir = copyDirectory("/private", "/ws/a", store.identity);
    for (const text of ["one\n", "one\ntwo\n"]) {
      write("/ws/a/x.md", text);
      await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    }
    await Effect.runPromise(tidyUpsDone);
    const names = vol.readdirSync(copyDir).map(String).sort();
    expect(names.filter((name) => name.startsWith("baseline-"))).toHaveLength(1);
    expect(names).toContain("stats.json");
    expect(names).not.toContain("lock");
    // The next call on the copy finds it as the housekeeping left it.
    write("/ws/a/x.md", "one\ntwo\nthree\n");
    const third = await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(third.generation).toBe(3);
  });
});
