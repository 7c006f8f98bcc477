/**
 * The Promise facade of the library API (SPEC §10) for callers that do not use
 * Effect: open a notebook on a chosen store and call `pull` / `commit`, getting the
 * same structured result and error objects as the MCP tools.
 */
import { homedir } from "node:os";
import { Cause, Effect, Exit, Option } from "effect";
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
import { noPathSets, type PathSets } from "../domain/pathSets.js";
import type { FileSystemService } from "../ports/FileSystem.js";
import type { ObjectStoreService } from "../ports/ObjectStore.js";
import type { Author, NotebookService, SyncReport } from "./Notebook.js";
import { makeNotebook } from "./usecases/notebookLayer.js";
import { probeStore } from "./usecases/probe.js";
import { tidyUpsDone } from "./usecases/afterAnswer.js";
import { ObjectStore } from "../ports/ObjectStore.js";
import { IdGenerator } from "../ports/IdGenerator.js";

/** Opens a store named `file:<absolute dir>` or `memory:`; rejects anything else. */
const openStore = async (spec: string): Promise<ObjectStoreService> => {
  if (spec === "memory:") return MemoryObjectStore.make();
  if (spec.startsWith("file:") && isAbsolute(spec.slice(5))) {
    return Effect.runPromise(FileObjectStore.make({ root: spec.slice(5) }));
  }
  throw new Error(
    `quire: unsupported store ${JSON.stringify(spec)} (use file:<absolute dir>, memory: or an ObjectStoreService)`,
  );
};

/** How to open a notebook in process. */
export interface OpenNotebookOptions {
  /**
   * The object store: `"file:<absolute dir>"`, `"memory:"`, or any ObjectStoreService
   * (e.g. built with an S3 adapter's Effect API).
   */
  readonly store: ObjectStoreService | string;
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
   * Resolves once the housekeeping that calls run after answering has ended (pruning
   * private state, the stat cache, releasing each working copy's lock): await it before
   * the process exits or the private root is removed. Housekeeping is process-wide, so
   * this also waits for other notebooks' calls in this process. Never rejects; the
   * notebook stays usable afterwards.
   */
  readonly close: () => Promise<void>;
}

/**
 * Opens a notebook. Rejects only when the store fails the compatibility probe (with
 * an Error whose message starts with `INCOMPATIBLE_STORE`). Each call resolves with the
 * structured result or error object; only a defect (a bug) rejects.
 */
export const openNotebook = async (options: OpenNotebookOptions): Promise<QuireNotebook> => {
  const ids = IdGeneratorAdapter.make();
  const store = typeof options.store === "string" ? await openStore(options.store) : options.store;
  if (options.probe ?? true) {
    const probed = await Effect.runPromiseExit(
      probeStore.pipe(
        Effect.provideService(ObjectStore, store),
        Effect.provideService(IdGenerator, ids),
      ),
    );
    if (Exit.isFailure(probed)) {
      const failure = Cause.failureOption(probed.cause);
      throw new Error(
        Option.isSome(failure)
          ? `${failure.value.code}/${failure.value.reason}: ${failure.value.message}`
          : "store probe failed",
      );
    }
  }
  const service = await Effect.runPromise(
    makeNotebook({
      store,
      fs: options.fileSystem ?? NodeFileSystem.make(),
      ids,
      options: {
        workspaceRoot: options.workspaceRoot,
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
  const run = async (effect: Effect.Effect<SyncReport, DomainError>): Promise<CallResult> => {
    const exit = await Effect.runPromiseExit(effect);
    if (Exit.isSuccess(exit)) return successEnvelope(exit.value, sets).structured;
    const failure = Cause.failureOption(exit.cause);
    if (Option.isNone(failure))
      throw new Error(`quire: internal failure: ${Cause.pretty(exit.cause)}`);
    return errorEnvelope(failure.value, await Effect.runPromise(ids.diagnosticId), sets).structured;
  };
  return {
    service,
    pull: (path) => run(service.pull(path === undefined ? {} : { path })),
    commit: (message, path) =>
      run(service.commit({ message, author, ...(path === undefined ? {} : { path }) })),
    close: () => Effect.runPromise(tidyUpsDone),
  };
};
