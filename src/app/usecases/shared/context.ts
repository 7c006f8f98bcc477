/**
 * What every use case of one working copy works with during one call: the ports, the
 * resolved directories, the loaded private state and the operation's content source.
 */
import type { Effect, Option } from "effect";
import type { FileSystemService, RootedTree } from "../../../ports/FileSystem.js";
import type { IdGeneratorService } from "../../../ports/IdGenerator.js";
import type { ObjectStoreService } from "../../../ports/ObjectStore.js";
import type { BlobSource } from "../workingCopy/blobs.js";
import type { PendingWrites } from "../workingCopy/pendingWrites.js";
import type { CopyState, PrivateStateMemo } from "../workingCopy/privateState.js";
import type { NotebookOptions } from "./notebookOptions.js";

/** The ports and settings a Notebook service was built with. */
export interface Services {
  readonly store: ObjectStoreService;
  readonly fs: FileSystemService;
  readonly ids: IdGeneratorService;
  readonly options: NotebookOptions;
}

/** One call on one locked working copy. */
export interface CopyCall extends Services {
  /** Canonical absolute working-copy directory (keys and messages; never used to reach files). */
  readonly dir: string;
  /** The working copy, open without following symlinks: every access to L goes through it. */
  readonly tree: RootedTree;
  /** Its private-state directory. */
  readonly copyDir: string;
  readonly blobs: BlobSource;
  /** The private state as loaded at the start of the call (`None`: never pulled). */
  readonly state: Option.Option<CopyState>;
  /** What this process remembers of decoded private state (see workingCopy/privateState.ts). */
  readonly memo: PrivateStateMemo;
  /** Cache writes of downloaded packs still in flight (see workingCopy/pendingWrites.ts). */
  readonly cacheWrites: PendingWrites;
  /**
   * Schedules housekeeping under `key` for after the call has answered, while the copy
   * is still held (afterAnswer.ts), in the order scheduled; it replaces what was
   * scheduled earlier under the same key (only a call's last stat cache is worth
   * writing). `tidy` must not fail; it may be cut short by a shutdown, so it must leave
   * nothing a later call could misread.
   */
  readonly afterAnswer: (key: string, tidy: Effect.Effect<void>) => void;
}
