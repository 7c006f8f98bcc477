/**
 * The working copy's cross-process lock in the Notebook service (notebookLayer.ts): a
 * call interrupted at the very instant it takes the lock (a caller that hung up, seen
 * when a stopped sharing process resumes) leaves the copy unlocked; a taken-over call
 * waits only as long as `copyLockWaitMs` says.
 */
import { Deferred, Effect, Exit, Fiber } from "effect";
import { describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { SyncReport } from "../../src/app/Notebook.js";
import { copyLockWaitMs, makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { copyDirectory, lockFile } from "../../src/app/usecases/workingCopy/privateState.js";
import type { DomainError } from "../../src/domain/errors.js";
import { baseOptions } from "./memNotebook.js";

describe("the working copy's lock", () => {
  it("a call interrupted the instant it takes the lock leaves the copy unlocked", async () => {
    const store = memoryStore.make();
    const { service: base, vol } = memFs.make({ "/ws/.keep": "" });
    const gate = Effect.runSync(Deferred.make<void>());
    // The call, once started (the file system below interrupts it).
    const call: { fiber?: Fiber.RuntimeFiber<SyncReport, DomainError> } = {};
    let armed = true;
    const fs = {
      ...base,
      // Once armed: the lock is taken, and at that moment the call is interrupted.
      lock: (path: string, timeoutMs: number) =>
        Effect.gen(function* () {
          if (!armed) return yield* base.lock(path, timeoutMs);
          armed = false;
          yield* Deferred.await(gate);
          const release = yield* base.lock(path, timeoutMs);
          if (call.fiber !== undefined) yield* Fiber.interruptFork(call.fiber);
          // A step at which an interruptible call would be interrupted.
          yield* Effect.sleep("10 millis");
          return release;
        }),
    };
    const notebook = Effect.runSync(
      makeNotebook({ store, fs, ids: ids.make(), options: baseOptions }),
    );
    const fiber = Effect.runFork(notebook.pull({ path: "/ws/a" }));
    call.fiber = fiber;
    await Effect.runPromise(Deferred.succeed(gate, undefined));
    const exit = await Effect.runPromise(Fiber.await(fiber));
    expect(Exit.isInterrupted(exit)).toBe(true);
    // The lock taken for the interrupted call was released, not lost.
    const lock = lockFile(copyDirectory(baseOptions.privateRoot, "/ws/a", store.identity));
    expect(vol.existsSync(lock)).toBe(false);
    const next = await Effect.runPromise(
      notebook.pull({ path: "/ws/a" }).pipe(Effect.locally(copyLockWaitMs, 0)),
    );
    expect(next.path).toBe("/ws/a");
  });

  it("a call waits for a held lock only as long as copyLockWaitMs, then answers BUSY", async () => {
    const store = memoryStore.make();
    const { service: fs } = memFs.make({ "/ws/a/.keep": "" });
    const notebook = Effect.runSync(
      makeNotebook({ store, fs, ids: ids.make(), options: baseOptions }),
    );
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    const lock = lockFile(copyDirectory(baseOptions.privateRoot, "/ws/a", store.identity));
    const release = await Effect.runPromise(fs.lock(lock, 0));
    const busy = await Effect.runPromise(
      Effect.flip(notebook.pull({ path: "/ws/a" }).pipe(Effect.locally(copyLockWaitMs, 50))),
    );
    expect([busy.code, busy.reason, busy.retryable]).toEqual(["ENGINE_FAILED", "BUSY", true]);
    await Effect.runPromise(release);
    const after = await Effect.runPromise(
      notebook.pull({ path: "/ws/a" }).pipe(Effect.locally(copyLockWaitMs, 0)),
    );
    expect(after.path).toBe("/ws/a");
  });
});
