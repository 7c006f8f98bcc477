/**
 * The Promise facade of the library API (SPEC §10) for callers that do not use
 * Effect: open a notebook on a chosen store and call `pull` / `commit`, getting the
 * same structured result and error objects as the MCP tools.
 */
import { homedir } from "node:os";
import { Cause, Effect, Exit, Option } from "effect";
import * as IdGeneratorAdapter from "../adapters/idGenerator.js";
import * as NodeFileSystem from "../adapters/nodeFileSystem.js";
import {
  errorEnvelope,
  successEnvelope,
  type ErrorStructured,
  type SuccessStructured,
} from "../domain/envelope.js";
import type { DomainError } from "../domain/errors.js";
import { noPathSets } from "../domain/pathSets.js";
import type { FileSystemService } from "../ports/FileSystem.js";
import type { ObjectStoreService } from "../ports/ObjectStore.js";
import type { Author, NotebookService, SyncReport } from "./Notebook.js";
import { makeNotebook } from "./usecases/notebookLayer.js";
import { probeStore } from "./usecases/probe.js";
import { ObjectStore } from "../ports/ObjectStore.js";
import { IdGenerator } from "../ports/IdGenerator.js";

/** How to open a notebook in process. */
export interface OpenNotebookOptions {
  /** The object store (e.g. `memoryObjectStore.make()`, `fileObjectStore.make({ root })`). */
  readonly store: ObjectStoreService;
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
}

/**
 * Opens a notebook. Rejects only when the store fails the compatibility probe (with
 * an Error whose message starts with `INCOMPATIBLE_STORE`). Each call resolves with the
 * structured result or error object; only a defect (a bug) rejects.
 */
export const openNotebook = async (options: OpenNotebookOptions): Promise<QuireNotebook> => {
  const ids = IdGeneratorAdapter.make();
  if (options.probe ?? true) {
    const probed = await Effect.runPromiseExit(
      probeStore.pipe(
        Effect.provideService(ObjectStore, options.store),
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
      store: options.store,
      fs: options.fileSystem ?? NodeFileSystem.make(),
      ids,
      options: {
        workspaceRoot: options.workspaceRoot,
        notebookDirectory: options.notebookDirectory ?? options.workspaceRoot,
        privateRoot: options.privateRoot,
        homeDirectory: homedir(),
        commitRetries: options.commitRetries ?? 8,
        checkpointPacks: 1024,
        retainedCheckpoints: 1,
      },
    }),
  );
  const author = options.author ?? { name: "library", version: "" };
  const run = async (effect: Effect.Effect<SyncReport, DomainError>): Promise<CallResult> => {
    const exit = await Effect.runPromiseExit(effect);
    if (Exit.isSuccess(exit)) return successEnvelope(exit.value, noPathSets).structured;
    const failure = Cause.failureOption(exit.cause);
    if (Option.isNone(failure))
      throw new Error(`quire: internal failure: ${Cause.pretty(exit.cause)}`);
    return errorEnvelope(failure.value, await Effect.runPromise(ids.diagnosticId), noPathSets)
      .structured;
  };
  return {
    service,
    pull: (path) => run(service.pull(path === undefined ? {} : { path })),
    commit: (message, path) =>
      run(service.commit({ message, author, ...(path === undefined ? {} : { path }) })),
  };
};
