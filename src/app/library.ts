/**
 * The Promise facade of the library API (SPEC §10) for callers that do not use
 * Effect: open a notebook on a chosen store and call `pull` / `commit`, getting the
 * same structured result and error objects as the MCP tools.
 */
import { homedir } from "node:os";
import { Cause, Context, Effect, Either, Exit, Layer, Option, Schema, Scope } from "effect";
import { isAbsolute } from "node:path";
import * as FileObjectStore from "../adapters/fileObjectStore.js";
import * as IdGeneratorAdapter from "../adapters/idGenerator.js";
import * as MemoryObjectStore from "../adapters/memoryObjectStore.js";
import * as NodeFileSystem from "../adapters/nodeFileSystem.js";
import {
  errorEnvelope,
  successEnvelope,
  type ErrorStructured,
  type SuccessStructured,
} from "../domain/envelope.js";
import type { DomainError } from "../domain/errors.js";
import type { CopyDiff, CopyStatus } from "../domain/copyStatus.js";
import { defaultLogLimit, type RestoredFiles, type ShownPublication } from "../domain/history.js";
import { logObject, type LogJson } from "../domain/logReport.js";
import { noPathSets, type PathSets } from "../domain/pathSets.js";
import type { FileSystemService } from "../ports/FileSystem.js";
import type { ObjectStoreService } from "../ports/ObjectStore.js";
import type { Author, NotebookService, SyncReport } from "./Notebook.js";
import { makeNotebook } from "./usecases/notebookLayer.js";
import { probeStore } from "./usecases/commit/probe.js";
import { tidyUpsDone } from "./usecases/shared/afterAnswer.js";
import { ObjectStore } from "../ports/ObjectStore.js";
import { IdGenerator } from "../ports/IdGenerator.js";
import { parseStoreSpec } from "./config/store.js";
import {
  checkCall,
  CommitCall,
  DiffCall,
  LogCall,
  OpenOptions,
  PathCall,
  RestoreCall,
  RevertCall,
  ShowCall,
} from "./libraryCalls.js";

/** An opened store and how to let go of it (a remote store's client holds sockets). */
interface OpenedStore {
  readonly store: ObjectStoreService;
  readonly release: () => Promise<void>;
}

const kept = (store: ObjectStoreService): OpenedStore => ({ store, release: async () => {} });

/**
 * Opens a store named `file:<absolute dir>`, `memory:`, `s3://<bucket>[/<prefix>]` or
 * `minio://<bucket>[/<prefix>]`; rejects anything else. The S3 and MinIO adapters, and
 * their SDKs, are imported only here, when such a store is named.
 */
const openStore = async (spec: string, remote: RemoteOptions): Promise<OpenedStore> => {
  if (spec === "memory:") return kept(MemoryObjectStore.make());
  if (spec.startsWith("file:") && isAbsolute(spec.slice(5))) {
    return kept(await Effect.runPromise(FileObjectStore.make({ root: spec.slice(5) })));
  }
  if (spec.startsWith("s3://") || spec.startsWith("minio://")) {
    const parsed = parseStoreSpec(spec, (path) => path);
    if (Either.isLeft(parsed)) throw new Error(`quire: ${parsed.left.message}`);
    const named = parsed.right;
    if (named.kind !== "s3" && named.kind !== "minio") throw new Error("quire: not a bucket store");
    const options = {
      bucket: named.bucket,
      prefix: named.prefix,
      ...(remote.endpoint === undefined ? {} : { endpoint: remote.endpoint }),
      region: remote.region ?? "us-east-1",
      forcePathStyle: remote.forcePathStyle ?? remote.endpoint !== undefined,
    };
    const layer =
      named.kind === "s3"
        ? (await import("../adapters/s3ObjectStore.js")).layer(options)
        : (await import("../adapters/minioObjectStore.js")).layer(options);
    const scope = await Effect.runPromise(Scope.make());
    const context = await Effect.runPromise(Layer.buildWithScope(layer, scope));
    return {
      store: Context.get(context, ObjectStore),
      release: () => Effect.runPromise(Scope.close(scope, Exit.void)),
    };
  }
  throw new Error(
    `quire: unsupported store ${JSON.stringify(spec)} (use file:<absolute dir>, memory:, s3://<bucket>[/<prefix>], minio://<bucket>[/<prefix>] or an ObjectStoreService)`,
  );
};

/** Where an `s3://` or `minio://` store is (credentials come from the AWS_* environment chain). */
export interface RemoteOptions {
  /** An S3-compatible endpoint (absolute http(s) URL); AWS S3 when absent. */
  readonly endpoint?: string;
  /** The signing region (default `us-east-1`). */
  readonly region?: string;
  /** Path-style addressing (default: on with an endpoint). */
  readonly forcePathStyle?: boolean;
}

/** How to open a notebook in process. */
export interface OpenNotebookOptions {
  /**
   * The object store: `"file:<absolute dir>"`, `"memory:"`, `"s3://<bucket>[/<prefix>]"`,
   * `"minio://<bucket>[/<prefix>]"` (see `remote`), or any ObjectStoreService.
   */
  readonly store: ObjectStoreService | string;
  /** Endpoint, region and addressing of an `s3://` or `minio://` store. */
  readonly remote?: RemoteOptions;
  /** Every working copy must be at or below this absolute directory. */
  readonly workspaceRoot: string;
  /** What an omitted path means; defaults to `workspaceRoot`. */
  readonly notebookDirectory?: string;
  /** Absolute private root (not at or below the workspace root). */
  readonly privateRoot: string;
  /** The file system; defaults to the host's. */
  readonly fileSystem?: FileSystemService;
  /** Recorded as the author of commits; defaults to `{ name: "library", version: "" }`. */
  readonly author?: Author;
  /** CAS retries before REMOTE_BUSY (default 8). */
  readonly commitRetries?: number;
  /** Increments after which a checkpoint is written (default 1,024). */
  readonly checkpointPacks?: number;
  /** Tail bytes beyond which a checkpoint is written (default 64 MiB). */
  readonly checkpointBytes?: number;
  /** Older checkpoint chains kept for slow readers (default 1). */
  readonly retainedCheckpoints?: number;
  /** Publish commits that delete most or all of the notebook (default false: MASS_DELETE). */
  readonly allowMassDelete?: boolean;
  /** The writable and read-only path sets commits are confined to (default none). */
  readonly pathSets?: PathSets;
  /** Run the store compatibility probe first (default true). */
  readonly probe?: boolean;
}

/** A log as the facade answers it: `quire log --json`'s object with `code: "OK"`. */
export type LogResult = { readonly code: "OK" } & LogJson;

/** The outcome of a call: the MCP success object (`code: "OK"`) or the MCP error object. */
export type CallResult = SuccessStructured | ErrorStructured;

/** A notebook opened with {@link openNotebook}. */
export interface QuireNotebook {
  /** The Effect service behind the facade. */
  readonly service: NotebookService;
  /** Pull into `path` (absolute; omitted = the notebook directory). */
  readonly pull: (path?: string) => Promise<CallResult>;
  /** Commit `path` (omitted = the notebook directory) with `message`. */
  readonly commit: (message: string, path?: string) => Promise<CallResult>;
  /**
   * The notebook's publications, newest first (SPEC §11, docs/history.md): at most
   * `limit` (default 50), only those touching `file` when given, as `quire log --json`
   * prints them with `code: "OK"`; or the error object (NOT_PULLED for a copy never
   * pulled).
   */
  readonly log: (options?: {
    readonly path?: string;
    readonly limit?: number;
    readonly file?: string;
  }) => Promise<LogResult | ErrorStructured>;
  /**
   * What the working copy `path` holds unpublished and how far the notebook is ahead
   * (SPEC §11), with `code: "OK"` and the copy's directory; or the error object.
   */
  readonly status: (
    path?: string,
  ) => Promise<({ readonly code: "OK"; readonly path: string } & CopyStatus) | ErrorStructured>;
  /**
   * The unified diff of the working copy `path`'s unpublished changes (SPEC §11), only
   * of `files` when given, with `code: "OK"`; or the error object.
   */
  readonly diff: (options?: {
    readonly path?: string;
    readonly files?: ReadonlyArray<string>;
  }) => Promise<({ readonly code: "OK"; readonly path: string } & CopyDiff) | ErrorStructured>;
  /**
   * The publication at `generation` with each file's diff (SPEC §11), only of `files`
   * when given, with `code: "OK"`; or the error object (GENERATION_PRUNED when its
   * content is gone).
   */
  readonly show: (options: {
    readonly path?: string;
    readonly generation: number;
    readonly files?: ReadonlyArray<string>;
  }) => Promise<
    ({ readonly code: "OK"; readonly path: string } & ShownPublication) | ErrorStructured
  >;
  /**
   * Writes `files` as they were at `generation` into the working copy (SPEC §11), with
   * `code: "OK"`; or the error object (UNPUBLISHED_CHANGES without `force`).
   */
  readonly restore: (options: {
    readonly path?: string;
    readonly generation: number;
    readonly files: ReadonlyArray<string>;
    readonly force?: boolean;
  }) => Promise<({ readonly code: "OK"; readonly path: string } & RestoredFiles) | ErrorStructured>;
  /**
   * Undoes the publication at `generation` in the working copy as a three-way merge
   * (SPEC §11), with `code: "OK"`; or the error object (CONTENT_CONFLICT written as a
   * pull's, whose `changed` lists every file the revert changed, the clean ones too,
   * and `held` the files saved during the call).
   */
  readonly revert: (options: {
    readonly path?: string;
    readonly generation: number;
  }) => Promise<({ readonly code: "OK"; readonly path: string } & RestoredFiles) | ErrorStructured>;
  /**
   * Resolves once the housekeeping that calls run after answering has ended (pruning
   * private state, the stat cache, releasing each working copy's lock): await it before
   * the process exits or the private root is removed. Housekeeping is process-wide, so
   * this also waits for other notebooks' calls in this process. Never rejects. An
   * `s3://` or `minio://` store opened from its name is then closed (its client lets go
   * of its sockets) and the notebook must not be used again; on any other store it
   * stays usable.
   */
  readonly close: () => Promise<void>;
}

/**
 * Opens a notebook. Rejects when the options are malformed (an Error whose message
 * starts with `INVALID_REQUEST/INVALID_ARGUMENT` and names the option: missing, of the
 * wrong type, out of range or unknown), when the store cannot be opened from its name,
 * or when it fails the compatibility probe (a message starting with
 * `INCOMPATIBLE_STORE`). Each call resolves with the structured result or error object;
 * only a defect (a bug) rejects.
 */
export const openNotebook = async (options: OpenNotebookOptions): Promise<QuireNotebook> => {
  // Called from plain JavaScript too: `null`, a number for a root or a misspelt option
  // is refused here, not thrown from deep inside or silently ignored.
  const checked = checkCall("openNotebook", OpenOptions, options);
  if (Either.isLeft(checked))
    throw new Error(`${checked.left.code}/${checked.left.reason}: ${checked.left.message}`);
  const ids = IdGeneratorAdapter.make();
  const opened =
    typeof options.store === "string"
      ? await openStore(options.store, options.remote ?? {})
      : kept(options.store);
  const store = opened.store;
  if (options.probe ?? true) {
    const probed = await Effect.runPromiseExit(
      probeStore.pipe(
        Effect.provideService(ObjectStore, store),
        Effect.provideService(IdGenerator, ids),
      ),
    );
    if (Exit.isFailure(probed)) {
      await opened.release();
      const failure = Cause.failureOption(probed.cause);
      throw new Error(
        Option.isSome(failure)
          ? `${failure.value.code}/${failure.value.reason}: ${failure.value.message}`
          : "store probe failed",
      );
    }
  }
  const fs = options.fileSystem ?? NodeFileSystem.make();
  // The root as the caller wrote it keeps their paths below it valid; what it resolves
  // to now is what every call's tree must still reach (a directory above it swapped
  // for a symlink later is refused, not followed). A root that cannot be resolved is
  // reported by the calls, as before.
  const resolved = await Effect.runPromise(Effect.option(fs.realPath(options.workspaceRoot)));
  const service = await Effect.runPromise(
    makeNotebook({
      store,
      fs,
      ids,
      options: {
        workspaceRoot: options.workspaceRoot,
        ...(Option.isSome(resolved) ? { workspaceRootResolved: resolved.value } : {}),
        notebookDirectory: options.notebookDirectory ?? options.workspaceRoot,
        privateRoot: options.privateRoot,
        // A working copy overlapping the file store would publish its objects as notes.
        ...(typeof options.store === "string" && options.store.startsWith("file:")
          ? { storeDirectory: options.store.slice(5) }
          : {}),
        homeDirectory: homedir(),
        commitRetries: options.commitRetries ?? 8,
        checkpointPacks: options.checkpointPacks ?? 1024,
        retainedCheckpoints: options.retainedCheckpoints ?? 1,
        ...(options.checkpointBytes === undefined
          ? {}
          : { checkpointBytes: options.checkpointBytes }),
        ...(options.allowMassDelete === undefined
          ? {}
          : { allowMassDelete: options.allowMassDelete }),
        ...(options.pathSets === undefined ? {} : { pathSets: options.pathSets }),
      },
    }),
  );
  const author = options.author ?? { name: "library", version: "" };
  const sets = options.pathSets ?? noPathSets;
  /** The value of `effect`, or its domain error as the error object; a defect rejects. */
  const answer = async <A>(effect: Effect.Effect<A, DomainError>): Promise<A | ErrorStructured> => {
    const exit = await Effect.runPromiseExit(effect);
    if (Exit.isSuccess(exit)) return exit.value;
    const failure = Cause.failureOption(exit.cause);
    if (Option.isNone(failure))
      throw new Error(`quire: internal failure: ${Cause.pretty(exit.cause)}`);
    return errorEnvelope(failure.value, await Effect.runPromise(ids.diagnosticId), sets).structured;
  };
  const run = (effect: Effect.Effect<SyncReport, DomainError>): Promise<CallResult> =>
    answer(effect.pipe(Effect.map((report) => successEnvelope(report, sets).structured)));
  /** `use` of the checked arguments of call `name`, or the error object naming the bad one. */
  const called = <A, I, R>(
    name: string,
    schema: Schema.Schema<A, I>,
    value: unknown,
    use: (args: A) => Promise<R | ErrorStructured>,
  ): Promise<R | ErrorStructured> => {
    const args = checkCall(name, schema, value);
    return Either.isLeft(args) ? answer(Effect.fail(args.left)) : use(args.right);
  };
  const at = (path: string | undefined) => (path === undefined ? {} : { path });
  return {
    service,
    pull: (path) => called("pull", PathCall, at(path), (args) => run(service.pull(at(args.path)))),
    commit: (message, path) =>
      called("commit", CommitCall, { message, ...at(path) }, (args) =>
        run(service.commit({ message: args.message, author, ...at(args.path) })),
      ),
    log: (request = {}) =>
      called("log", LogCall, request, (args) =>
        answer(
          service
            .log({
              limit: args.limit ?? defaultLogLimit,
              ...at(args.path),
              ...(args.file === undefined ? {} : { file: args.file }),
            })
            .pipe(Effect.map((log) => ({ code: "OK" as const, ...logObject(log) }))),
        ),
      ),
    diff: (request = {}) =>
      called("diff", DiffCall, request, (args) =>
        answer(
          service
            .diff({ files: args.files ?? [], ...at(args.path) })
            .pipe(Effect.map((diff) => ({ code: "OK" as const, ...diff }))),
        ),
      ),
    show: (request) =>
      called("show", ShowCall, request, (args) =>
        answer(
          service
            .show({ generation: args.generation, files: args.files ?? [], ...at(args.path) })
            .pipe(Effect.map((shown) => ({ code: "OK" as const, ...shown }))),
        ),
      ),
    restore: (request) =>
      called("restore", RestoreCall, request, (args) =>
        answer(
          service
            .restore({
              generation: args.generation,
              files: args.files,
              force: args.force === true,
              ...at(args.path),
            })
            .pipe(Effect.map((restored) => ({ code: "OK" as const, ...restored }))),
        ),
      ),
    revert: (request) =>
      called("revert", RevertCall, request, (args) =>
        answer(
          service
            .revert({ generation: args.generation, ...at(args.path) })
            .pipe(Effect.map((reverted) => ({ code: "OK" as const, ...reverted }))),
        ),
      ),
    status: (path) =>
      called("status", PathCall, at(path), (args) =>
        answer(
          service
            .status(at(args.path))
            .pipe(Effect.map((status) => ({ code: "OK" as const, ...status }))),
        ),
      ),
    close: async () => {
      await Effect.runPromise(tidyUpsDone);
      await opened.release();
    },
  };
};
