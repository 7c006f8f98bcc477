/**
 * The record of a working copy's store (workingCopy/storeOfCopy.ts): removing it, when the
 * copy of its store is discarded, never takes away a record another call wrote between the
 * removal's read and its removal (a pull of the same path with another store, which no
 * copy lock orders against the removal).
 */
import { Deferred, Effect, Fiber } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import {
  forgetStoreOfCopy,
  recordStoreOfCopy,
} from "../../src/app/usecases/workingCopy/storeOfCopy.js";

const privateRoot = "/private";
const copy = "/ws/notes";

describe("the record of a copy's store", () => {
  it("a removal racing another store's record of the same path leaves that record", async () => {
    const { service: base, vol } = memFs.make({ "/ws/notes/.keep": "" });
    await Effect.runPromise(recordStoreOfCopy(base, privateRoot, copy, "store A"));
    const records = (): string[] =>
      vol
        .readdirSync(`${privateRoot}/owners`)
        .map(String)
        .filter((name) => !name.endsWith(".lock"));
    expect(records()).toHaveLength(1);
    const record = `${privateRoot}/owners/${records()[0]}`;

    const program = Effect.gen(function* () {
      // Signalled once the other store's write either waits for the record's lock or is done.
      const reached = yield* Deferred.make<void>();
      const other = {
        ...base,
        lock: (path: string, timeoutMs: number) =>
          Deferred.succeed(reached, undefined).pipe(Effect.zipRight(base.lock(path, timeoutMs))),
      };
      let raced: Fiber.RuntimeFiber<void> | undefined;
      const removing = {
        ...base,
        // Right after the removal read the record (it names store A): store B records
        // its pull of the same path.
        readFile: (path: string) =>
          base.readFile(path).pipe(
            Effect.tap(() =>
              path !== record || raced !== undefined
                ? Effect.void
                : Effect.gen(function* () {
                    raced = yield* Effect.fork(
                      recordStoreOfCopy(other, privateRoot, copy, "store B").pipe(
                        Effect.ensuring(Deferred.succeed(reached, undefined)),
                      ),
                    );
                    yield* Deferred.await(reached);
                  }),
            ),
          ),
      };
      yield* forgetStoreOfCopy(removing, privateRoot, copy, "store A");
      expect(raced).toBeDefined();
      if (raced !== undefined) yield* Fiber.join(raced);
    });
    await Effect.runPromise(program);
    expect(records()).toHaveLength(1);
    expect(String(vol.readFileSync(record))).toBe("store B");
  });
});
