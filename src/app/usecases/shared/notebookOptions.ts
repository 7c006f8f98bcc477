/**
 * The settings of a Notebook service, in a file of their own: every use case that reads
 * a setting imports them from here, not from the wiring (notebookLayer.ts), which
 * imports those use cases.
 */
import type { PathSets } from "../../../domain/pathSets.js";
import type { Failpoint } from "./failpoints.js";

/** The settings the use cases need, already validated by configuration. */
export interface NotebookOptions {
  /**
   * Absolute workspace root, canonical unless `workspaceRootResolved` is given: every
   * working copy is at or below it.
   */
  readonly workspaceRoot: string;
  /**
   * The canonical path `workspaceRoot` resolved to when the notebook was opened, when it
   * is not canonical itself (the library takes the root as its caller wrote it, say
   * through a symlinked temporary directory). A call whose root leads elsewhere since (a
   * directory above it swapped for a symlink) is refused; omitted, `workspaceRoot` is
   * that path.
   */
  readonly workspaceRootResolved?: string;
  /**
   * The workspace root as it was configured, when that spelling reaches the canonical
   * `workspaceRoot` through a symlink (`--workspace-root /tmp/ws` where /tmp is a link,
   * as on macOS, or a symlinked home): a call's path spelt below it names the same place
   * below `workspaceRoot`, since an agent spells paths as the root was given to it.
   */
  readonly workspaceRootSpelt?: string;
  /** Absolute notebook directory that an omitted/empty `path` means. */
  readonly notebookDirectory: string;
  /** Absolute private root (never at or below the workspace root). */
  readonly privateRoot: string;
  /** The file store's directory when the store is one: no working copy may overlap it. */
  readonly storeDirectory?: string;
  /** The user's home directory, for `~/` expansion. */
  readonly homeDirectory: string;
  /** Maximum CAS retries before REMOTE_BUSY (0..100). */
  readonly commitRetries: number;
  /** Increments after which a checkpoint is written. */
  readonly checkpointPacks: number;
  /** Previous checkpoint chains kept in the manifest (0..64). */
  readonly retainedCheckpoints: number;
  /** The writable and read-only path sets commits are confined to (none when omitted). */
  readonly pathSets?: PathSets;
  /**
   * Tail bytes (sum of the active increments' sizes) beyond which a checkpoint is
   * written even below `checkpointPacks`; default 64 MiB.
   */
  readonly checkpointBytes?: number;
  /** Publish commits that delete most or all of the notebook (default false: MASS_DELETE). */
  readonly allowMassDelete?: boolean;
  /**
   * Set when judging an ended session of a store other than this process's
   * (app/sessions.ts): the store then is a placeholder that refuses every request, so a
   * commit's fate there is unknown by design, not for a store that failed to answer.
   */
  readonly otherStoreSession?: boolean;
  /** Fault injection for tests: called at each failpoint stage; absent in production. */
  readonly failpoint?: Failpoint;
}
