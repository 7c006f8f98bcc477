/**
 * The ConfigFiles port: reading and atomically replacing the small configuration files
 * of other programs (MCP clients), which `quire mcp install` edits. Not notebook state:
 * no merging, no working-copy rules, just careful whole-file replacement.
 */
import { Context, Data, type Effect } from "effect";

/** Why a configuration file could not be read or written; nothing was written. */
export class ConfigFileError extends Data.TaggedError("ConfigFileError")<{
  /**
   * `CHANGED`: the file changed while we edited it; `IO`: the system refused;
   * `REFUSED`: quire could write it but must not ({@link ConfigFilesService.editable},
   * or its bytes are not UTF-8 text),
   * and `message` says why and what to do, without the path.
   */
  readonly reason: "IO" | "CHANGED" | "REFUSED";
  readonly path: string;
  readonly message: string;
}> {}

/** What a path is as a command to start ({@link ConfigFilesService.commandFile}). */
export type CommandFile = "executable" | "notExecutable" | "missing";

/**
 * Where a file may be edited: what the caller knows of the place the file belongs in,
 * which the file system alone cannot tell.
 */
export interface Placement {
  /**
   * A directory that must exist already: a missing one is refused, never created (the
   * home directory of a user-scope file: a mistyped HOME must not make a new tree of
   * settings nobody reads; the project of a project-scope one). Directories below it
   * on the way to the file are created.
   */
  readonly within: string;
  /**
   * Whether the file's real path (its symlinks, and those of the directories on its way,
   * followed) must stay inside `within`: a project's file, where a link a repository
   * planted must not send the edit (and the backup of what it points at) elsewhere.
   */
  readonly confined: boolean;
}

/** How to replace a file. */
export interface ReplaceOptions {
  /** Where the file may be edited ({@link Placement}); unchecked when absent. */
  readonly placement?: Placement;
  /** The content the edit was computed from (`undefined`: the file did not exist). */
  readonly expected: string | undefined;
  /**
   * Where the previous content is written first (only when the file existed), as a new
   * file that replaces whatever is there: a symlink at this path is replaced, never
   * followed. A failure there names this path and writes nothing else.
   */
  readonly backupPath: string;
}

/** File access for client configuration files. */
export interface ConfigFilesService {
  /**
   * The file's UTF-8 text, or `undefined` when it does not exist. Fails with `REFUSED`
   * when its bytes are not UTF-8 (decoding them would lose them), with `IO` when it is
   * not a regular file or cannot be read.
   */
  readonly read: (path: string) => Effect.Effect<string | undefined, ConfigFileError>;
  /**
   * Replaces `path` with `text`: fails with `CHANGED` (writing nothing) unless the file
   * still holds `expected` (`REFUSED` when it is not UTF-8); writes the previous content
   * to `backupPath`; writes a temporary file next to the target, flushes it, checks
   * `expected` again (`CHANGED`, the temporary file removed, when another program wrote
   * the file meanwhile; the caller may read it again and recompute its edit) and renames
   * it over the target, so a reader sees the old or the new file, never a part. Two
   * replacements of one file (by quire processes, or calls of this one) take turns from
   * that check to the rename, so the second sees the first one's edit (`CHANGED`); one
   * that waits too long for its turn fails with `IO`. A symlinked path is followed (the
   * link stays, its target is replaced); the target keeps its permission bits, and a new
   * file (with missing parent directories) gets 0600 (0700). Run as root, the new file,
   * the backup and the directories created get the owner of the file replaced, or of
   * the directory they are created in (root editing a user's settings, `sudo` keeping
   * HOME, must not leave them unreadable to that user). Checks {@link editable} first.
   */
  readonly replace: (
    path: string,
    text: string,
    options: ReplaceOptions,
  ) => Effect.Effect<void, ConfigFileError>;
  /**
   * Fails with `REFUSED` when `path` must not be replaced although the system would let
   * quire do it: it, or a directory on its way, is a symlink to nothing (writing would
   * create the link's target, anywhere), the file has other hard links (a rename would
   * leave them holding the old content), the file is read-only (a person made it so;
   * a rename would replace it all the same), or it is not where `placement` says it
   * must be (its `within` directory missing, or the real file outside a confined one).
   */
  readonly editable: (path: string, placement?: Placement) => Effect.Effect<void, ConfigFileError>;
  /**
   * What `path` (following symlinks) is as a command a client would start: `executable`
   * (a regular file this user may execute), `notExecutable` (something is there, but
   * not a regular file with execute permission) or `missing`. Never fails.
   */
  readonly commandFile: (path: string) => Effect.Effect<CommandFile>;
}

/** The ConfigFiles service tag. */
export class ConfigFiles extends Context.Tag("quire/ConfigFiles")<
  ConfigFiles,
  ConfigFilesService
>() {}
