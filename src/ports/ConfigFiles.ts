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

/** How to replace a file. */
export interface ReplaceOptions {
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
   * file (with missing parent directories) gets 0600. Checks {@link editable} first.
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
   * leave them holding the old content), or the file is read-only (a person made it so;
   * a rename would replace it all the same).
   */
  readonly editable: (path: string) => Effect.Effect<void, ConfigFileError>;
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
