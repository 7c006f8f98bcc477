/**
 * Wires the pull/commit use cases into the {@link Notebook} service.
 * STUB of the contract; being implemented.
 */
import { Layer } from "effect";
import { Notebook } from "../Notebook.js";
import type { FileSystem } from "../../ports/FileSystem.js";
import type { IdGenerator } from "../../ports/IdGenerator.js";
import type { ObjectStore } from "../../ports/ObjectStore.js";

/** The settings the use cases need, already validated by configuration. */
export interface NotebookOptions {
  /** Absolute, canonical workspace root: every working copy is at or below it. */
  readonly workspaceRoot: string;
  /** Absolute notebook directory that an omitted/empty `path` means. */
  readonly notebookDirectory: string;
  /** Absolute private root (never at or below the workspace root). */
  readonly privateRoot: string;
  /** The user's home directory, for `~/` expansion. */
  readonly homeDirectory: string;
  /** Maximum CAS retries before REMOTE_BUSY (0..100). */
  readonly commitRetries: number;
  /** Increments after which a checkpoint is written. */
  readonly checkpointPacks: number;
  /** Previous checkpoint chains kept in the manifest (0..64). */
  readonly retainedCheckpoints: number;
}

/** The Notebook service built from the ports. */
export const notebookLayer = (
  _options: NotebookOptions,
): Layer.Layer<Notebook, never, ObjectStore | FileSystem | IdGenerator> =>
  Layer.fail(new Error("not implemented yet")).pipe(Layer.orDie);
