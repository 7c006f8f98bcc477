/**
 * An opt-in memory probe for long-running processes (the soak benchmark, bench/soak.mjs;
 * a field report of a server that grows): with `QUIRE_MEMORY_SAMPLES=1`, `serve`
 * answers SIGUSR2 with a full garbage collection and one debug record of module
 * `memory`, `memory after gc`, carrying `heapUsedBytes` (the live JS heap), `codeBytes`
 * (the part of it that is compiled code and bytecode), `rssBytes`,
 * `externalBytes` and `arrayBuffersBytes` as `process.memoryUsage()` reports them right
 * after the collection. Without the switch nothing is installed, and SIGUSR2 keeps
 * Node's default (it ends the process). Needs no `--inspect` and no `--expose-gc`.
 */
import { runInNewContext } from "node:vm";
import { getHeapCodeStatistics, setFlagsFromString } from "node:v8";
import { Duration, Effect, FiberRef, HashMap, Runtime, type Scope } from "effect";
import { tidyUpsDone } from "./usecases/shared/afterAnswer.js";

/** How long a sample waits for the housekeeping of answered calls before it collects. */
const tidyWaitMs = 1_000;

let collector: (() => void) | undefined;

/**
 * Runs a full, synchronous garbage collection. `--expose-gc` is turned on the first
 * time if the process was not started with it: a context created afterwards has `gc`.
 */
export const collectGarbage = (): void => {
  if (collector === undefined) {
    const exposed = globalThis.gc;
    if (exposed !== undefined) {
      collector = () => void exposed();
    } else {
      setFlagsFromString("--expose-gc");
      const gc: unknown = runInNewContext("gc");
      if (typeof gc !== "function") throw new Error("cannot expose the garbage collector");
      collector = () => void Reflect.apply(gc, undefined, []);
    }
  }
  collector();
};

/** What one sample measured, in bytes, right after a full collection. */
export interface MemorySample {
  readonly heapUsedBytes: number;
  /**
   * The part of `heapUsedBytes` that is compiled code, bytecode and their metadata: what
   * the engine compiles as more of quire gets hot (it grows for thousands of calls, then
   * stays), not data a call kept.
   */
  readonly codeBytes: number;
  readonly rssBytes: number;
  readonly externalBytes: number;
  readonly arrayBuffersBytes: number;
}

/** Collects garbage and measures the process (synchronous, a few tens of ms). */
export const sampleMemory = (): MemorySample => {
  collectGarbage();
  const usage = process.memoryUsage();
  const code = getHeapCodeStatistics();
  return {
    heapUsedBytes: usage.heapUsed,
    codeBytes: code.code_and_metadata_size + code.bytecode_and_metadata_size,
    rssBytes: usage.rss,
    externalBytes: usage.external,
    arrayBuffersBytes: usage.arrayBuffers,
  };
};

/**
 * One sample logged: after the housekeeping of calls that have answered (at most
 * {@link tidyWaitMs}), so that what a call leaves behind is measured, not what it is
 * still doing. The record carries no annotation of whatever was running.
 */
const logSample: Effect.Effect<void> = Effect.timeout(
  tidyUpsDone,
  Duration.millis(tidyWaitMs),
).pipe(
  Effect.ignore,
  Effect.zipRight(Effect.sync(sampleMemory)),
  Effect.flatMap((sample) =>
    Effect.logDebug("memory after gc").pipe(Effect.annotateLogs({ ...sample })),
  ),
  Effect.annotateLogs("module", "memory"),
  Effect.locally(FiberRef.currentLogAnnotations, HashMap.empty()),
);

/**
 * While the scope lasts, SIGUSR2 logs a sample (see the module comment); the handler is
 * removed when the scope closes. Nothing on Windows (no SIGUSR2 there).
 */
export const memorySamplesOnSignal: Effect.Effect<void, never, Scope.Scope> = Effect.gen(
  function* () {
    // Windows has no SIGUSR2.
    if (process.platform === "win32") return;
    const runtime = yield* Effect.runtime<never>();
    const onSignal = () => void Runtime.runFork(runtime)(logSample);
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("SIGUSR2", onSignal)),
      () => Effect.sync(() => process.off("SIGUSR2", onSignal)),
    );
  },
);
