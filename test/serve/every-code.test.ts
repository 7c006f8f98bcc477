/**
 * Every error code from a real scenario (the scenario half; test/domain/errors-doc.test.ts is the
 * docs ⇄ code half): for every error code — and every (code, reason) row of the table —
 * at least one real scenario produces it, through the use cases on memfs and the
 * fault-injecting memory store, and through the MCP tool handler (`callTool`) so what is
 * checked is the envelope an agent receives. INCOMPATIBLE_STORE, startup-only, comes
 * from the probe. Table-driven: a code or reason added to `src/domain/errors.ts`
 * without a scenario here fails (the type of `scenarios` for a code, the coverage test
 * for a reason). Likewise every ENGINE_FAILED `detail` comes from a classified file
 * system failure.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Effect, Exit, Layer, Logger, LogLevel, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as faultyStore from "../../src/adapters/faultyObjectStore.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { callTool } from "../../src/app/mcp/server.js";
import { Notebook, type NotebookService } from "../../src/app/Notebook.js";
import type { FailpointStage } from "../../src/app/usecases/shared/failpoints.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import { copyDirectory } from "../../src/app/usecases/workingCopy/privateState.js";
import { probeStore } from "../../src/app/usecases/commit/probe.js";
import { encodeText } from "../../src/domain/content.js";
import { errorEnvelope } from "../../src/domain/envelope.js";
import {
  type DomainError,
  type EngineDetail,
  type ErrorCode,
  type ReasonOf,
  domainError,
  engineDetails,
  errorActions,
  errorCodes,
  errorRows,
} from "../../src/domain/errors.js";
import { type PathSets, noPathSets } from "../../src/domain/pathSets.js";
import { FsError, type FsErrorReason, type FileSystemService } from "../../src/ports/FileSystem.js";
import { IdGenerator } from "../../src/ports/IdGenerator.js";
import {
  ObjectStore,
  StoreError,
  type ObjectStoreService,
  type StoreErrorReason,
} from "../../src/ports/ObjectStore.js";
import {
  author,
  baseOptions,
  manifestOf,
  referencedKeys,
  world,
  dropStaged,
  type World,
} from "../durability/harness.js";

/** What an agent (or the startup line) sees of an error. */
interface Observed {
  readonly structured: Record<string, unknown>;
  readonly text: string;
}

type Tool = "notes_pull" | "notes_commit";

/** One call through the MCP tool handler, logs silenced; must be an error result. */
const viaMcp = async (
  nb: NotebookService,
  name: Tool,
  args: Record<string, unknown> = {},
  pathSets: PathSets = noPathSets,
): Promise<Observed> => {
  const result: CallToolResult = await Effect.runPromise(
    callTool(name, args, author, { version: "0.0.0", pathSets }).pipe(
      Effect.provide(
        Layer.mergeAll(
          Layer.succeed(Notebook, nb),
          Layer.succeed(IdGenerator, ids.make()),
          Logger.minimumLogLevel(LogLevel.None),
        ),
      ),
    ),
  );
  const [item] = result.content;
  if (result.isError !== true || item?.type !== "text" || result.content.length !== 1) {
    throw new Error(`expected an error result, got ${JSON.stringify(result)}`);
  }
  return { structured: result.structuredContent ?? {}, text: item.text };
};

/** A call that must succeed (setup steps). */
const ok = async (nb: NotebookService, name: Tool, args: Record<string, unknown> = {}) => {
  const outcome = await Effect.runPromiseExit(
    (name === "notes_pull"
      ? nb.pull({ path: String(args["path"] ?? "/ws/a") })
      : nb.commit({
          path: String(args["path"] ?? "/ws/a"),
          message: String(args["message"] ?? "m"),
          author,
        })
    ).pipe(Logger.withMinimumLogLevel(LogLevel.None)),
  );
  if (Exit.isFailure(outcome)) throw new Error(`setup ${name} failed: ${String(outcome.cause)}`);
  return outcome.value;
};

const pullA = (nb: NotebookService) => viaMcp(nb, "notes_pull", { path: "/ws/a" });
const commitA = (nb: NotebookService, message = "m") =>
  viaMcp(nb, "notes_commit", { path: "/ws/a", message });

/**
 * A library call that must fail (the history commands are CLI-only, no MCP tool): the
 * envelope its error makes, as the CLI prints it.
 */
const viaLibrary = async <A>(call: Effect.Effect<A, DomainError>): Promise<Observed> => {
  const exit = await Effect.runPromiseExit(call.pipe(Logger.withMinimumLogLevel(LogLevel.None)));
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail")
    throw new Error(`expected the call to fail, got ${String(exit)}`);
  const envelope = errorEnvelope(exit.cause.error, "0000000000000000", noPathSets);
  return { structured: envelope.structured, text: envelope.text };
};

/** A world where copy /ws/a published x.md and y.md (generation 1), and edited x.md again. */
const published = async (options: Partial<NotebookOptions> = {}) => {
  const w = world();
  const nb = w.open(options);
  await ok(nb, "notes_pull");
  w.write("/ws/a/x.md", "one\n");
  w.write("/ws/a/y.md", "why\n");
  await ok(nb, "notes_commit");
  w.write("/ws/a/x.md", "one\ntwo\n");
  return { w, nb };
};

/** A notebook on `w` whose file system fails `lock` with `reason`. */
const withFailingLock = (w: World, reason: FsErrorReason): NotebookService => {
  const fs: FileSystemService = {
    ...w.fs,
    lock: (path) => Effect.fail(new FsError({ reason, path, message: `injected ${reason}` })),
  };
  return Effect.runSync(
    makeNotebook({ store: w.store, fs, ids: ids.make(), options: baseOptions }),
  );
};

const failStore = (
  w: World,
  ops: ReadonlyArray<"get" | "put">,
  key: string | RegExp,
  reason: StoreErrorReason,
) =>
  w.faults.inject({
    ops,
    key,
    times: Number.POSITIVE_INFINITY,
    fault: { _tag: "FailBefore", reason },
  });

/** A failpoint hook failing at `stage` the first `times` times it is reached. */
const failAt = (stage: FailpointStage, times = Number.POSITIVE_INFINITY) => {
  let left = times;
  return (reached: FailpointStage) =>
    reached === stage && left-- > 0
      ? Effect.fail(domainError({ code: "ENGINE_FAILED", reason: "LOCAL_IO", message: "injected" }))
      : Effect.void;
};

/** The startup probe against `store`; the startup diagnostic's facts as an envelope. */
const probe = async (store: ObjectStoreService): Promise<Observed> => {
  const exit = await Effect.runPromiseExit(
    probeStore.pipe(Effect.provide(Layer.merge(Layer.succeed(ObjectStore, store), ids.layer))),
  );
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") {
    throw new Error(`expected the probe to fail, got ${String(exit)}`);
  }
  const envelope = errorEnvelope(exit.cause.error, "0000000000000000", noPathSets);
  return { structured: envelope.structured, text: envelope.text };
};

const probeStoreWith = (override: (base: ObjectStoreService) => Partial<ObjectStoreService>) => {
  const base = memoryStore.make({ identity: "memory:every-code" });
  return { ...base, ...override(base) };
};

const storeError = (reason: StoreErrorReason) =>
  new StoreError({ reason, message: `injected ${reason}` });

/** A first-pull scenario of a fresh copy /ws/b on a store damaged by `damage`. */
const freshPullAfter = async (damage: (w: World, packKey: string) => Promise<void>) => {
  const { w } = await published();
  const manifest = await manifestOf(w.store);
  const [key] = manifest === undefined ? [] : referencedKeys(manifest);
  if (key === undefined) throw new Error("no pack");
  await damage(w, key);
  return viaMcp(w.open(), "notes_pull", { path: "/ws/b" });
};

/**
 * The scenarios: for each code (the mapped type makes a missing code a type error), for
 * each of its reasons, a way to produce it.
 */
const scenarios: {
  readonly [C in ErrorCode]: { readonly [R in ReasonOf<C>]: () => Promise<Observed> };
} = {
  INVALID_REQUEST: {
    INVALID_ARGUMENT: async () => viaMcp(world().open(), "notes_pull", { path: "/ws/a", x: null }),
    PATH_OUTSIDE_ROOT: async () => viaMcp(world().open(), "notes_pull", { path: "/elsewhere" }),
    PATH_NOT_ABSOLUTE: async () => viaMcp(world().open(), "notes_pull", { path: "relative/dir" }),
    PATH_TOO_LONG: async () =>
      viaMcp(world().open(), "notes_pull", { path: `/ws/${"a".repeat(4100)}` }),
    PATH_NOT_DIRECTORY: async () => {
      const w = world();
      w.write("/ws/file.md", "a file\n");
      return viaMcp(w.open(), "notes_pull", { path: "/ws/file.md" });
    },
    PATH_OVERLAPS_STATE: async () =>
      viaMcp(world().open({ storeDirectory: "/ws/a/.store" }), "notes_pull", { path: "/ws/a" }),
    MESSAGE_BLANK: async () => commitA((await published()).nb, " \u2003\n"),
    MESSAGE_TOO_LONG: async () => commitA((await published()).nb, "é".repeat(8193)),
    NOT_PULLED: async () => commitA(world().open()),
    GENERATION_PRUNED: async () => {
      // A checkpoint after every increment and no retained chain: generation 1's packs go.
      const { w, nb } = await published({ checkpointPacks: 1, retainedCheckpoints: 0 });
      for (let i = 0; i < 4; i++) {
        w.write("/ws/a/x.md", `edit ${i}\n`);
        await ok(nb, "notes_commit");
      }
      return viaLibrary(nb.show({ path: "/ws/a", generation: 1, files: [] }));
    },
    UNPUBLISHED_CHANGES: async () => {
      // x.md is edited since generation 1: restoring it without --force is refused.
      const { nb } = await published();
      return viaLibrary(
        nb.restore({ path: "/ws/a", generation: 1, files: ["x.md"], force: false }),
      );
    },
    PULL_NEEDED: async () => {
      // Another copy publishes generation 2; /ws/a, still at 1, has nothing of it to undo.
      const { w, nb } = await published();
      const other = w.open();
      await ok(other, "notes_pull", { path: "/ws/b" });
      w.write("/ws/b/y.md", "why not\n");
      await ok(other, "notes_commit", { path: "/ws/b" });
      return viaLibrary(nb.revert({ path: "/ws/a", generation: 2 }));
    },
    NESTED_WORKING_COPY: async () => {
      const { nb } = await published();
      return viaMcp(nb, "notes_pull", { path: "/ws/a/inner" });
    },
    MASS_DELETE: async () => {
      const { w, nb } = await published();
      w.remove("/ws/a/x.md");
      w.remove("/ws/a/y.md");
      return commitA(nb);
    },
  },
  INVALID_CONTENT: {
    INVALID_FILES: async () => {
      const { w, nb } = await published();
      w.write("/ws/a/bad.md", "nul\u0000inside\n");
      return commitA(nb);
    },
  },
  CONTENT_CONFLICT: {
    MERGE_CONFLICT: async () => {
      const { w, nb } = await published();
      const other = w.open();
      await ok(other, "notes_pull", { path: "/ws/b" });
      w.write("/ws/b/x.md", "one\nthree\n");
      await ok(other, "notes_commit", { path: "/ws/b" });
      return commitA(nb);
    },
    UNRESOLVED_MARKERS: async () => {
      const { w, nb } = await published();
      w.write("/ws/a/x.md", "<<<<<<< local\na\n=======\nb\n>>>>>>> remote\n");
      return commitA(nb);
    },
  },
  READ_ONLY_PATH: {
    PATH_SET_VIOLATION: async () => {
      const sets = { readOnly: ["x.md"], writable: [] };
      const { w } = await published();
      return viaMcp(
        w.open({ pathSets: sets }),
        "notes_commit",
        { path: "/ws/a", message: "m" },
        sets,
      );
    },
  },
  REMOTE_BUSY: {
    CAS_RETRIES_EXHAUSTED: async () => {
      const { w } = await published();
      // Another copy publishes right before each of this one's swaps, and never carries
      // its staged publication (its records are gone first: commit/staging.ts). A store
      // that merely refuses swaps while `current` stays put is not contention: a staged
      // commit cannot tell there whether another writer will still accept it.
      const other = w.open();
      await Effect.runPromise(other.pull({ path: "/ws/b" }));
      let busy = false;
      let n = 0;
      w.faults.inject({
        ops: ["put"],
        key: (key) => key === "current" && !busy,
        times: Number.POSITIVE_INFINITY,
        fault: {
          _tag: "Interleave",
          effect: Effect.suspend(() => {
            busy = true;
            w.write("/ws/b/z.md", `${++n}\n`);
            return dropStaged(w.store).pipe(
              Effect.zipRight(
                other.commit({ path: "/ws/b", message: "z", author: { name: "t", version: "1" } }),
              ),
            );
          }).pipe(Effect.orDie, Effect.asVoid, Effect.ensuring(Effect.sync(() => (busy = false)))),
        },
      });
      return commitA(w.open({ commitRetries: 0 }));
    },
  },
  STORAGE_FAILURE: {
    STORE_UNAVAILABLE: async () => {
      const { w, nb } = await published();
      failStore(w, ["get"], "current", "Unavailable");
      return pullA(nb);
    },
    ACCESS_DENIED: async () => {
      const { w, nb } = await published();
      failStore(w, ["get"], "current", "AccessDenied");
      return pullA(nb);
    },
    TIMEOUT: async () => {
      const { w, nb } = await published();
      failStore(w, ["get"], "current", "Ambiguous");
      return pullA(nb);
    },
    TLS_FAILED: async () => {
      const { w, nb } = await published();
      failStore(w, ["get"], "current", "TlsFailed");
      return pullA(nb);
    },
    THROTTLED: async () => {
      const { w, nb } = await published();
      failStore(w, ["get"], "current", "Throttled");
      return pullA(nb);
    },
    PUBLICATION_UNKNOWN: async () => {
      const { w, nb } = await published();
      // The write never lands, but its answer looks lost: re-reading cannot find it.
      w.faults.inject({
        ops: ["put"],
        key: "current",
        fault: { _tag: "FailBefore", reason: "Ambiguous" },
      });
      return commitA(nb);
    },
  },
  STORAGE_INTEGRITY: {
    CHECKSUM_MISMATCH: () =>
      freshPullAfter((w, key) => Effect.runPromise(w.faults.corruptObject(key))),
    MANIFEST_INVALID: async () => {
      const { w, nb } = await published();
      await Effect.runPromise(
        w.store.put("current", encodeText("{not json"), { _tag: "Unconditional" }),
      );
      return pullA(nb);
    },
    PACK_MISSING: () => freshPullAfter((w, key) => Effect.runPromise(w.faults.deleteObject(key))),
    PACK_INVALID: () =>
      freshPullAfter(async (w) => {
        failStore(w, ["get"], /^packs\//, "Corrupt");
      }),
    UNSUPPORTED_VERSION: async () => {
      const { w, nb } = await published();
      await Effect.runPromise(
        w.store.put("current", encodeText('{"version":2,"generation":9}'), {
          _tag: "Unconditional",
        }),
      );
      return pullA(nb);
    },
    STATE_INVALID: async () => {
      const { w, nb } = await published();
      w.write(`${copyDirectory("/private", "/ws/a", w.store.identity)}/state.json`, "{garbage");
      return pullA(nb);
    },
  },
  RECOVERY_FAILURE: {
    UNEXPECTED_FAILURE: async () => {
      const { w } = await published();
      return commitA(w.open({ failpoint: failAt("after-cas") }));
    },
    RECOVERY_PENDING: async () => {
      const { w } = await published();
      const other = w.open();
      await ok(other, "notes_pull", { path: "/ws/b" });
      w.write("/ws/b/z.md", "zed\n");
      await ok(other, "notes_commit", { path: "/ws/b" });
      // Rewriting /ws/a fails, and so does the repair attempt.
      return pullA(w.open({ failpoint: failAt("before-state-record") }));
    },
  },
  ENGINE_FAILED: {
    LOCAL_IO: async () => pullA(withFailingLock(world(), "NoSpace")),
    LOCAL_ACCESS: async () => pullA(withFailingLock(world(), "PermissionDenied")),
    BUSY: async () => pullA(withFailingLock(world(), "Busy")),
    ROOT_CHANGED: async () => {
      const w = world();
      const fs: FileSystemService = {
        ...w.fs,
        openTree: (root) =>
          Effect.fail(new FsError({ reason: "NotFound", path: root, message: "injected" })),
      };
      return pullA(
        Effect.runSync(makeNotebook({ store: w.store, fs, ids: ids.make(), options: baseOptions })),
      );
    },
    INTERNAL: async () => {
      const { w } = await published();
      return commitA(
        w.open({
          failpoint: (stage) => (stage === "after-pack-upload" ? Effect.die("boom") : Effect.void),
        }),
      );
    },
  },
  INCOMPATIBLE_STORE: {
    NO_CONDITIONAL_CREATE: () =>
      probe(
        probeStoreWith((base) => ({
          put: (key, body, _condition, metadata) =>
            base.put(key, body, { _tag: "Unconditional" }, metadata),
        })),
      ),
    NO_CONDITIONAL_REPLACE: () =>
      probe(
        probeStoreWith((base) => ({
          put: (key, body, condition, metadata) =>
            base.put(
              key,
              body,
              condition._tag === "IfMatch" ? { _tag: "Unconditional" } : condition,
              metadata,
            ),
        })),
      ),
    IF_MATCH_CREATES: () =>
      probe(
        faultyStore.make(memoryStore.make({ identity: "memory:every-code" }), {
          rules: [{ fault: { _tag: "IfMatchCreates" }, times: Number.POSITIVE_INFINITY }],
        }).store,
      ),
    NO_READ_AFTER_WRITE: () =>
      probe(probeStoreWith(() => ({ get: () => Effect.succeed(Option.none()) }))),
    ACCESS_DENIED: () =>
      probe(probeStoreWith(() => ({ put: () => Effect.fail(storeError("AccessDenied")) }))),
    BUCKET_MISSING: () =>
      probe(probeStoreWith(() => ({ put: () => Effect.fail(storeError("BucketMissing")) }))),
  },
};

/** The candid text must repeat every structured fact (SPEC §2.4). */
const expectCandid = (observed: Observed) => {
  const s = observed.structured;
  const lines = observed.text.split("\n");
  expect(lines[0]).toBe(`${String(s["code"])} · ${String(s["reason"])}`);
  expect(lines[1]).toBe(s["message"]);
  expect(lines).toContain(`action: ${String(s["action"])}`);
  expect(lines).toContain(`retryable: ${String(s["retryable"])}`);
  expect(lines).toContain(`diagnosticId: ${String(s["diagnosticId"])}`);
  for (const file of s["files"] as ReadonlyArray<{ path: string; reason: string }>) {
    expect(lines.some((line) => line.startsWith(`file: ${file.path} · ${file.reason}`))).toBe(true);
  }
  if (s["detail"] !== undefined) expect(lines).toContain(`detail: ${String(s["detail"])}`);
  if (s["recovery"] !== undefined) {
    const r = s["recovery"] as { stage: string; remoteAccepted: string; resynchronized: boolean };
    expect(lines).toContain(
      `recovery: stage ${r.stage} · remoteAccepted ${r.remoteAccepted} · resynchronized ${r.resynchronized}`,
    );
  }
};

describe("every error code and reason is produced by a scenario", () => {
  it("has at least one scenario for every code and one for every (code, reason) row", () => {
    for (const code of errorCodes)
      expect(Object.keys(scenarios[code]).length, code).toBeGreaterThan(0);
    const covered = errorCodes.flatMap((code) =>
      Object.keys(scenarios[code]).map((reason) => `${code}/${reason}`),
    );
    expect(covered.sort()).toEqual(errorRows.map((row) => `${row.code}/${row.reason}`).sort());
  });

  for (const row of errorRows) {
    it(`${row.code} / ${row.reason}`, async () => {
      const reasons: Record<string, () => Promise<Observed>> = scenarios[row.code];
      const scenario = reasons[row.reason];
      if (scenario === undefined) throw new Error(`no scenario for ${row.code}/${row.reason}`);
      const observed = await scenario();
      const s = observed.structured;
      expect([s["code"], s["reason"]], observed.text).toEqual([row.code, row.reason]);
      expect(typeof s["action"] === "string" && s["action"].length > 0).toBe(true);
      expect(errorActions).toContain(s["action"]);
      expect(s["action"]).toBe(row.action);
      expect(s["retryable"]).toBe(row.retryable);
      expect(s["diagnosticId"]).toMatch(/^[0-9a-f]{16}$/);
      expect(typeof s["message"] === "string" && s["message"].trim().length > 0).toBe(true);
      expect(Array.isArray(s["files"])).toBe(true);
      expect(s["readOnly"]).toBeInstanceOf(Array);
      expect(s["writable"]).toBeInstanceOf(Array);
      expect("detail" in s && row.code !== "ENGINE_FAILED").toBe(false);
      expect("recovery" in s).toBe(row.code === "RECOVERY_FAILURE");
      expectCandid(observed);
    });
  }
});

describe("every ENGINE_FAILED detail comes from a classified local failure", () => {
  const causes: { readonly [D in EngineDetail]: FsErrorReason } = {
    "disk full": "NoSpace",
    "permission denied": "PermissionDenied",
    "read-only file system": "ReadOnly",
    "too many open files": "TooManyOpenFiles",
    "name too long": "NameTooLong",
    "file too large": "TooLarge",
  };

  it("covers every detail", () => {
    expect(Object.keys(causes).sort()).toEqual([...engineDetails].sort());
  });

  for (const detail of engineDetails) {
    it(`${causes[detail]} → detail "${detail}"`, async () => {
      const observed = await pullA(withFailingLock(world(), causes[detail]));
      expect(observed.structured).toMatchObject({
        code: "ENGINE_FAILED",
        // Causes a retry cannot pass have their own reason, not retryable.
        reason:
          detail === "permission denied" || detail === "read-only file system"
            ? "LOCAL_ACCESS"
            : "LOCAL_IO",
        detail,
      });
      expect(observed.text.split("\n")).toContain(`detail: ${detail}`);
    });
  }

  it("an unclassified cause carries no detail", async () => {
    const observed = await pullA(withFailingLock(world(), "Other"));
    expect(observed.structured).toMatchObject({ code: "ENGINE_FAILED", reason: "LOCAL_IO" });
    expect(observed.structured).not.toHaveProperty("detail");
    expect(observed.text).not.toMatch(/^detail:/m);
  });
});
