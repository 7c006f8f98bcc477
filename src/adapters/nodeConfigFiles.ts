/**
 * The ConfigFiles port on node:fs. A replacement is a temporary file in the target's
 * own directory (so the rename is atomic), written, fsync'd, then renamed over the
 * target; the previous content is written to the backup path the same way first (a new
 * file renamed over it, so a symlink planted at the backup path is replaced, never
 * followed). The expected content is checked before anything is written and again
 * after the replacement is flushed, right before the rename: another program that
 * writes the file in between makes the edit fail with `CHANGED` (the caller recomputes
 * it). What remains is the window between that last read and the rename, two system
 * calls; the backup keeps what was there before the edit.
 * Quire processes take turns on a file: from the check of the expected content to the
 * rename, a replacement holds a lock file beside the real target (symlinks resolved, so
 * two names of one file share it), `<target>.quire-lock`, created with O_EXCL and naming
 * its holder (lockFiles.ts: pid, host, boot id, token). Without it, two quires could both
 * pass their last check and the later rename dropped the other's edit, both reporting
 * success; with it, the second one's check sees the first one's edit (`CHANGED`, and the
 * caller reads the file again). A lock whose holder is gone (its pid dead on this host,
 * or a previous boot) is taken over; one older than {@link staleLockMs} too (an edit holds
 * it for well under a second); a live one is waited for {@link lockWaitMs}, then the edit
 * fails with `IO`, saying another quire is editing the file. The lock is removed when
 * the replacement ends, written or failed.
 * A file the system would let quire replace but a person would not (a dangling symlink,
 * a read-only file) is refused before anything is written, and so is a file that is not
 * UTF-8 text (decoding it would replace its other bytes with U+FFFD, and writing it back
 * would garble them).
 */
import { randomBytes } from "node:crypto";
import { isUtf8 } from "node:buffer";
import { constants as fsConstants, promises as fs, type Stats } from "node:fs";
import * as NodePath from "node:path";
import { Effect, Layer } from "effect";
import type { FsError } from "../ports/FileSystem.js";
import {
  ConfigFileError,
  ConfigFiles,
  type ConfigFilesService,
  type CommandFile,
  type Placement,
  type ReplaceOptions,
} from "../ports/ConfigFiles.js";
import { lock, stealLock } from "./lockFiles.js";
import { makeDirectories } from "./makeDirectories.js";

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;

/** Why a file Node cannot read into one string is refused (see {@link explained}). */
const tooLargeToEdit =
  "the file is too large to edit (no client writes settings this big); move it away or edit it by hand";

/** What an errno means for a person who has to fix it, for the ones a config file meets. */
const explained: Readonly<Record<string, string>> = {
  ENOTFILE: "it is not a regular file (a directory?); move it away or put the client's file there",
  EISDIR: "it is a directory; move it away or put the client's file there",
  EACCES: "permission denied; check the file's and its directory's owner and mode",
  EPERM: "operation not permitted; check the file's and its directory's owner and mode",
  EROFS: "the file system is read-only",
  ELOOP: "a symbolic link on the way points back at itself; fix the link",
  ENOTDIR: "a part of the path is a file, not a directory",
  ENOSPC: "the disk is full; free some space and run it again",
  EFBIG: "the file is larger than this process may write (ulimit -f?)",
  // Node's own refusals to read a file into one string (over 2 GiB, or over ~512 MiB
  // of text): no client writes settings this big, so the file is not what it should be.
  ERR_FS_FILE_TOO_LARGE: tooLargeToEdit,
  ERR_STRING_TOO_LONG: tooLargeToEdit,
};

/**
 * The same for the backup path: a directory there is in quire's way, not where the
 * client's file belongs, so the advice differs.
 */
const explainedForBackup: Readonly<Record<string, string>> = {
  ...explained,
  EISDIR: "it is a directory; move it away (quire keeps the previous file there) and run it again",
};

const ioError =
  (path: string, action: string, reasons: Readonly<Record<string, string>> = explained) =>
  (error: unknown) => {
    const code = errnoOf(error);
    const why = code === undefined ? undefined : reasons[code];
    return new ConfigFileError({
      reason: "IO",
      path,
      message: `cannot ${action} ${path}: ${
        why === undefined
          ? (code ?? (error instanceof Error ? error.message : String(error)))
          : `${code}: ${why}`
      }`,
    });
  };

const refused = (path: string, message: string): ConfigFileError =>
  new ConfigFileError({ reason: "REFUSED", path, message });

const changed = (path: string): ConfigFileError =>
  new ConfigFileError({
    reason: "CHANGED",
    path,
    message: `${path} changed while quire was editing it; nothing was written, run the command again`,
  });

/** The file's bytes, or `undefined` when it does not exist. */
const readBytes = async (path: string): Promise<Buffer | undefined> => {
  try {
    const stats = await fs.stat(path);
    if (!stats.isFile()) throw Object.assign(new Error("not a regular file"), { code: "ENOTFILE" });
    return await fs.readFile(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
};

/**
 * The file's text, or `undefined` when it does not exist; refused (as `shown`) when it
 * is not UTF-8: decoding would turn the other bytes into U+FFFD, and an edit would
 * write that back in place of what the person or another program put there.
 */
const readText = async (path: string, shown: string = path): Promise<string | undefined> => {
  const bytes = await readBytes(path);
  if (bytes === undefined) return undefined;
  if (!isUtf8(bytes))
    throw refused(
      shown,
      "it is not UTF-8 text (quire would garble its other bytes); convert it to UTF-8 (for example with iconv) and run the command again, or edit it by hand",
    );
  return bytes.toString("utf8");
};

/** Removes a temporary file after a failure; a second failure must not hide the first. */
const discard = (temporary: string): Promise<void> =>
  fs.rm(temporary, { force: true }).catch(() => undefined);

/**
 * Writes `content` to a new file beside `destination` (created with `wx`, so nothing
 * that already exists there, a symlink included, is opened), sets `mode`, flushes it
 * and returns its path; removes it again when any of that fails (a full disk).
 */
const writeTemporary = async (
  destination: string,
  content: string | Uint8Array,
  mode: number,
  owner: Owner | undefined,
): Promise<string> => {
  const temporary = NodePath.join(
    NodePath.dirname(destination),
    `.${NodePath.basename(destination)}.quire-${randomBytes(6).toString("hex")}.tmp`,
  );
  const handle = await fs.open(temporary, "wx", mode);
  try {
    try {
      await handle.writeFile(content);
      if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await discard(temporary);
    throw error;
  }
  return temporary;
};

/**
 * Replaces `destination` with a new file holding `content`: a rename replaces whatever
 * is at `destination` (a symlink too, instead of writing where it points), atomically.
 */
const writeReplacing = async (
  destination: string,
  content: string | Uint8Array,
  mode: number,
  owner: Owner | undefined,
): Promise<void> => {
  const temporary = await writeTemporary(destination, content, mode, owner);
  try {
    await fs.rename(temporary, destination);
  } catch (error) {
    await discard(temporary);
    throw error;
  }
};

/** The entry at `path` without following a final symlink; `undefined` when there is none. */
const entryAt = async (path: string): Promise<Stats | undefined> => {
  try {
    return await fs.lstat(path);
  } catch (error) {
    // ENOTDIR: a file on the way, which a later step reports as such.
    if (errnoOf(error) === "ENOENT" || errnoOf(error) === "ENOTDIR") return undefined;
    throw error;
  }
};

/** How old a temporary file of ours must be before a later edit removes it. */
const staleTemporaryMs = 60 * 60 * 1000;

/** Whether `name` is that of a temporary file {@link writeTemporary} makes beside `destination`. */
const isTemporaryOf = (destination: string, name: string): boolean => {
  const prefix = `.${NodePath.basename(destination)}.quire-`;
  if (!name.startsWith(prefix) || !name.endsWith(".tmp")) return false;
  return /^[0-9a-f]{12}$/.test(name.slice(prefix.length, -".tmp".length));
};

/** The lock file of a replacement of `target` (the real file, symlinks resolved). */
const lockPathOf = (target: string): string => `${target}.quire-lock`;

/** How long a replacement waits for another quire's turn at the same file. */
const lockWaitMs = 5_000;

/**
 * How old a lock file of ours must be before a later edit takes it over, whoever its
 * holder: an edit holds it for well under a second, so one this old was left by a
 * holder that cannot be checked from here (another host) or by a killed quire whose
 * pid was given to another process since.
 */
const staleLockMs = 3 * 60 * 1000;

/** Whether `name` is that of a lock file {@link stealLock} set aside (and its holder did not remove). */
const isSetAsideOf = (lockPath: string, name: string): boolean => {
  const prefix = NodePath.basename(lockPath);
  return name.startsWith(prefix) && /^(?:\.stale-[0-9a-f]{12})+$/.test(name.slice(prefix.length));
};

/**
 * Removes temporary files of ours beside the `destinations` (a file and its backup) that
 * a killed edit left (one killed between writing its temporary file and renaming it),
 * older than an hour: an edit in progress takes well under a second, so a younger one
 * may be another quire's and stays. Each directory is listed once. Only plain files of
 * exactly those names are removed; any failure is ignored (tidying never stops an edit).
 * `lockPath`, the lock beside the first destination, is removed when it is older than
 * {@link staleLockMs}, by the lock's own steal (renamed aside, removed only if it is
 * still the file judged stale), and so is a set-aside copy of it that a killed steal
 * left, once as old.
 */
const tidyStaleTemporaries = async (
  destinations: ReadonlyArray<string>,
  lockPath: string,
  nowMs: number,
): Promise<void> => {
  // One whose holder is gone is taken over by the lock itself; this is the one it waits for.
  const lockStats = await entryAt(lockPath).catch(() => undefined);
  if (lockStats?.isFile() === true && nowMs - lockStats.mtimeMs > staleLockMs)
    await stealLock(lockPath, lockStats.ino).catch(() => undefined);
  const byDirectory = new Map<string, Array<string>>();
  for (const destination of destinations) {
    const directory = NodePath.dirname(destination);
    byDirectory.set(directory, [...(byDirectory.get(directory) ?? []), destination]);
  }
  for (const [directory, beside] of byDirectory) {
    const names = await fs.readdir(directory).catch(() => []);
    for (const name of names) {
      const setAside = directory === NodePath.dirname(lockPath) && isSetAsideOf(lockPath, name);
      if (!setAside && !beside.some((destination) => isTemporaryOf(destination, name))) continue;
      const path = NodePath.join(directory, name);
      const stats = await entryAt(path).catch(() => undefined);
      const staleMs = setAside ? staleLockMs : staleTemporaryMs;
      if (stats?.isFile() === true && nowMs - stats.mtimeMs > staleMs) await discard(path);
    }
  }
};

/** What `path` leads to, following symlinks; `undefined` when that is nothing. */
const followed = async (path: string): Promise<Stats | undefined> => {
  try {
    return await fs.stat(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT" || errnoOf(error) === "ENOTDIR") return undefined;
    throw error;
  }
};

/** `0644`: a mode's permission bits as `ls` and `chmod` spell them. */
const modeText = (mode: number): string => `0${(mode & 0o777).toString(8).padStart(3, "0")}`;

/**
 * Why a symlink to nothing at `link` (the file itself, or a directory on its way) stops
 * the edit: writing through it would create its target and that target's directories,
 * wherever it points (outside HOME too), which nobody asked for.
 */
const danglingLink = async (path: string, link: string): Promise<string> => {
  const target = NodePath.resolve(NodePath.dirname(link), await fs.readlink(link));
  const where =
    (await entryAt(target)) === undefined
      ? "which does not exist"
      : "which leads to nothing that exists";
  return link === path
    ? `it is a symbolic link to ${target}, ${where}; create ${target} (an empty file will do) or remove the link, then run the command again`
    : `the directory ${link} on its way is a symbolic link to ${target}, ${where}; create that directory or remove the link, then run the command again`;
};

/**
 * The real path `path` would be written at: its symlinks, and those of the directories
 * on its way, followed; for a file or directories still missing, the real path of the
 * nearest existing directory with the rest of the path after it.
 */
const realDestination = async (path: string): Promise<string> => {
  let existing = NodePath.resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      return NodePath.join(await fs.realpath(existing), ...rest);
    } catch (error) {
      const code = errnoOf(error);
      if ((code !== "ENOENT" && code !== "ENOTDIR") || NodePath.dirname(existing) === existing)
        return NodePath.resolve(path);
      rest.unshift(NodePath.basename(existing));
      existing = NodePath.dirname(existing);
    }
  }
};

/**
 * Whether `path` is `directory` or below it (both absolute, resolved). The adapter's own
 * twin of app/config/paths.ts `isAtOrBelow` (adapters do not import the app layer).
 */
const isWithin = (path: string, directory: string): boolean => {
  const relative = NodePath.relative(directory, path);
  return (
    relative === "" ||
    !(
      relative === ".." ||
      relative.startsWith(`..${NodePath.sep}`) ||
      NodePath.isAbsolute(relative)
    )
  );
};

/** Why `path` is not where `placement` says it must be, or `undefined`. */
const misplaced = async (path: string, placement: Placement): Promise<string | undefined> => {
  const { within } = placement;
  const found = await followed(within);
  if (found === undefined)
    return `the directory ${within} does not exist, and quire creates the client's directories below it, never it (a mistyped HOME?); create it or fix the variable that names it, then run the command again`;
  if (!found.isDirectory())
    return `${within} is not a directory, and the file belongs below it; fix the variable that names it, then run the command again`;
  if (!placement.confined) return undefined;
  const real = await realDestination(path);
  const home = await fs.realpath(within);
  return isWithin(real, home)
    ? undefined
    : `it leads to ${real} (through a symbolic link), outside ${within}: a project's file is edited only inside the project, so a link in a repository cannot send the edit (and a backup of what it points at) elsewhere; replace the link with the file itself, or register quire in the user scope, then run the command again`;
};

/**
 * Why `path` must not be replaced though the system would let quire do it, or
 * `undefined`: a dangling symlink at the nearest existing entry on its way, a file with
 * other hard links (the rename would leave them with the old content), or a file
 * nobody may write (a person made it read-only on purpose; the rename that replaces it
 * needs only its directory's permission, so the system would not stop quire).
 */
const refusalOf = async (
  path: string,
  placement: Placement | undefined,
): Promise<string | undefined> => {
  if (placement !== undefined) {
    const where = await misplaced(path, placement);
    if (where !== undefined) return where;
  }
  let existing = NodePath.resolve(path);
  for (; ; existing = NodePath.dirname(existing)) {
    const found = await entryAt(existing);
    if (found !== undefined) {
      if (found.isSymbolicLink() && (await followed(existing)) === undefined)
        return danglingLink(path, existing);
      break;
    }
    if (NodePath.dirname(existing) === existing) break;
  }
  const file = await followed(path);
  // A missing file is created (with its missing directories) below the nearest existing
  // directory, which must be writable; anything but a file is refused by the read.
  if (file === undefined)
    return await unwritableDirectory(
      existing,
      "so the file cannot be created there",
      "run the command again",
    );
  if (!file.isFile()) return undefined;
  const real = await fs.realpath(path);
  const subject = real === NodePath.resolve(path) ? "it" : `its target ${real}`;
  // A replacement is a new file renamed over the path: the file's other hard links would
  // keep the old content, and a client reading one of them would never see the change.
  // Writing in place instead could leave a half-written file, so it is refused.
  if (file.nlink > 1)
    return `${subject} has ${file.nlink} hard links (other names for the same file), which a replacement would leave with the old content; make it a single file (cp -p ${real} ${real}.tmp && mv ${real}.tmp ${real}; make the other names symlinks to it if they are needed) and run the command again, or edit it by hand`;
  const fix = `make it writable (chmod u+w ${real}) and run the command again, or edit it by hand`;
  if ((file.mode & 0o222) === 0)
    return `${subject} is read-only (mode ${modeText(file.mode)}); ${fix}`;
  try {
    await fs.access(real, fsConstants.W_OK);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "EACCES" || code === "EPERM")
      return `${subject} is not writable by this user (mode ${modeText(file.mode)}); ${fix}`;
    if (code === "EROFS") return `${subject} is on a read-only file system; ${readOnlyFix}`;
    // Anything else: the write reports it.
  }
  // A replacement is a new file renamed over the path: its directory must be writable.
  return await unwritableDirectory(
    NodePath.dirname(real),
    "and the file is replaced by a new one renamed there",
    "run the command again, or edit the file by hand",
  );
};

/** What to do about a configuration file on a read-only mount: no write can succeed there. */
const readOnlyFix =
  "remount it read-write (or register quire in another scope) and run the command again";

/**
 * Why `directory` cannot take a new file from this user (EACCES, EPERM, a read-only file
 * system), or `undefined` (other failures are reported by the write itself).
 */
const unwritableDirectory = async (
  directory: string,
  why: string,
  then: string,
): Promise<string | undefined> => {
  const stat = await fs.stat(directory).catch(() => undefined);
  // Not a directory (a file where one is needed): the write says so.
  if (stat === undefined || !stat.isDirectory()) return undefined;
  try {
    await fs.access(directory, fsConstants.W_OK | fsConstants.X_OK);
    return undefined;
  } catch (error) {
    const code = errnoOf(error);
    if (code === "EROFS")
      return `the directory ${directory} is on a read-only file system, ${why}; ${readOnlyFix}`;
    if (code !== "EACCES" && code !== "EPERM") return undefined;
    return `the directory ${directory} is not writable by this user (mode ${modeText(stat.mode)}), ${why}; make it writable (chmod u+wx ${directory}) and ${then}`;
  }
};

/** The path a write must replace: the final target of a symlink chain, else `path` itself. */
const targetOf = async (path: string): Promise<string> => {
  try {
    return await fs.realpath(path);
  } catch (error) {
    // Missing: created there (a dangling link was refused before).
    if (errnoOf(error) === "ENOENT") return path;
    throw error;
  }
};

/** A file's owner. */
interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/**
 * The owner the files and directories an edit creates must get, or `undefined` to leave
 * them as created: only a process running as root gives them away — to the owner of the
 * file it replaces, or (for a new file) of the nearest existing directory on its way —
 * since root editing a user's settings (`sudo quire mcp install` keeping HOME) would
 * otherwise leave them owned by root, mode 0600, and the user's client could no longer
 * read them. Anyone else creates files as themselves, as any editor does.
 */
const ownerToKeep = async (
  target: string,
  existing: Stats | undefined,
): Promise<Owner | undefined> => {
  if (!runAsRoot()) return undefined;
  let found = existing;
  for (let directory = NodePath.dirname(target); found === undefined;) {
    found = await followed(directory);
    const parent = NodePath.dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  if (found === undefined || (found.uid === 0 && found.gid === 0)) return undefined;
  return { uid: found.uid, gid: found.gid };
};

/** Whether this process runs as root (the only one that gives files away). */
const runAsRoot = (): boolean => process.getuid?.() === 0;

/**
 * The file's stat, for one just read: a file removed meanwhile (by the client, say) is
 * `CHANGED`, which the caller retries, not an I/O failure.
 */
const statOfRead = (target: string, path: string): Promise<Stats> =>
  fs.stat(target).catch((error: unknown) => {
    if (errnoOf(error) === "ENOENT") throw changed(path);
    throw error;
  });

/** Gives `owner` the directories from `first` (the topmost one created) down to `last`. */
const chownCreated = async (first: string, last: string, owner: Owner): Promise<void> => {
  for (let directory = last; ; directory = NodePath.dirname(directory)) {
    await fs.chown(directory, owner.uid, owner.gid);
    if (directory === first || NodePath.dirname(directory) === directory) return;
  }
};

/** What the tests may run inside {@link makeNodeConfigFiles}'s replace. */
export interface NodeConfigFilesOptions {
  /**
   * Runs after the replacement is written and flushed, before the target is checked
   * against the expected content the last time: where another program's write would
   * make the edit fail with `CHANGED`. Tests use it to be that program; it must not fail.
   */
  readonly beforeLastCheck?: (target: string) => Promise<void>;
  /**
   * Runs after that last check, right before the rename: the window only the lock
   * covers. Tests start another replacement of the same file there; it must not fail.
   */
  readonly beforeRename?: (target: string) => Promise<void>;
  /** How long to wait for another quire's lock on the file (default {@link lockWaitMs}). */
  readonly lockWaitMs?: number;
}

/**
 * What a replacement does before it takes the file's lock: refuses a file quire must
 * not replace, checks the expected content (a cheap early `CHANGED`, nothing written),
 * creates the missing directories and tidies what killed edits left. Returns the real
 * target.
 */
const prepareReplace = async (
  path: string,
  replaceOptions: ReplaceOptions,
): Promise<{ readonly target: string; readonly owner: Owner | undefined }> => {
  const refusal = await refusalOf(path, replaceOptions.placement);
  if (refusal !== undefined) throw refused(path, refusal);
  const target = await targetOf(path);
  const current = await readText(target, path);
  if (current !== replaceOptions.expected) throw changed(path);
  // Missing directories on the way get the owner the file will have (run as root).
  const owner = runAsRoot()
    ? await ownerToKeep(target, current === undefined ? undefined : await statOfRead(target, path))
    : undefined;
  const directory = NodePath.dirname(target);
  const created = await makeDirectories(directory, 0o700);
  if (created !== undefined && owner !== undefined) await chownCreated(created, directory, owner);
  await tidyStaleTemporaries([target, replaceOptions.backupPath], lockPathOf(target), Date.now());
  return { target, owner };
};

/** The replacement itself, with the lock of `target` held (see the module comment). */
const replaceLocked =
  (options: NodeConfigFilesOptions) =>
  async (
    path: string,
    target: string,
    text: string,
    replaceOptions: ReplaceOptions,
  ): Promise<void> => {
    // A symlink changed meanwhile: the lock held is not the one of the file now meant.
    if ((await targetOf(path)) !== target) throw changed(path);
    const current = await readText(target, path);
    if (current !== replaceOptions.expected) throw changed(path);
    const existing = current === undefined ? undefined : await statOfRead(target, path);
    const owner = await ownerToKeep(target, existing);
    let mode = 0o600;
    if (existing !== undefined && current !== undefined) {
      mode = existing.mode & 0o7777;
      const { backupPath } = replaceOptions;
      // The backup holds what the file holds, so it gets the file's permission bits.
      await writeReplacing(backupPath, current, mode & 0o777, owner).catch((error: unknown) => {
        throw ioError(backupPath, "write the backup", explainedForBackup)(error);
      });
    }
    const temporary = await writeTemporary(target, text, mode, owner);
    try {
      await options.beforeLastCheck?.(target);
      // Another program may have written the file while ours was being written:
      // renaming now would drop its change. (Another quire cannot: it waits for the lock.)
      if ((await readText(target, path)) !== replaceOptions.expected) throw changed(path);
      await options.beforeRename?.(target);
      await fs.rename(temporary, target);
    } catch (error) {
      await discard(temporary);
      throw error;
    }
  };

/** Why the lock of `path`'s file could not be taken. */
const lockError =
  (path: string, lockPath: string, waitedMs: number) =>
  (error: FsError): ConfigFileError =>
    new ConfigFileError({
      reason: "IO",
      path,
      message:
        error.reason === "Busy"
          ? `cannot write ${path}: another quire (${error.holder ?? "another process"}) is editing it and did not finish within ${waitedMs / 1000} s; run the command again (if no quire is running, remove ${lockPath})`
          : `cannot write ${path}: cannot take its lock ${lockPath}: ${error.message}`,
    });

/** A failure of `path`'s edit as a {@link ConfigFileError}. */
const editError =
  (path: string) =>
  (error: unknown): ConfigFileError =>
    error instanceof ConfigFileError ? error : ioError(path, "write")(error);

/**
 * Replaces `path` (see the port): prepared, then written under the lock of its real
 * target, which is released whatever happens. The locked part is not interruptible: its
 * writes are promises that go on once started, and a release on interruption would let
 * another quire in while the rename is still to come (the lost update the lock is for).
 * Run as root, the lock file gets the owner the file keeps, so that the user's own quire
 * can read it (to wait for it, or to take it over from a killed holder).
 */
const replaceWith =
  (options: NodeConfigFilesOptions) =>
  (
    path: string,
    text: string,
    replaceOptions: ReplaceOptions,
  ): Effect.Effect<void, ConfigFileError> =>
    Effect.gen(function* () {
      const { target, owner } = yield* Effect.tryPromise({
        try: () => prepareReplace(path, replaceOptions),
        catch: editError(path),
      });
      const lockPath = lockPathOf(target);
      const waitMs = options.lockWaitMs ?? lockWaitMs;
      yield* Effect.acquireUseRelease(
        Effect.mapError(lock(lockPath, waitMs), lockError(path, lockPath, waitMs)),
        () =>
          Effect.tryPromise({
            try: async () => {
              if (owner !== undefined)
                await fs.chown(lockPath, owner.uid, owner.gid).catch(() => undefined);
              await replaceLocked(options)(path, target, text, replaceOptions);
            },
            catch: editError(path),
          }).pipe(Effect.uninterruptible),
        (release) => release,
      );
    });

/**
 * What `path` is as a command a client would start; never rejects. A dangling symlink
 * or a path through a file is `missing`; anything that is there but is not a regular
 * file with execute permission (a directory, a script without `chmod +x`) is
 * `notExecutable`: the client's start would fail with EACCES.
 */
const commandFileAt = async (path: string): Promise<CommandFile> => {
  const stats = await followed(path).catch(() => undefined);
  if (stats === undefined) return "missing";
  if (!stats.isFile()) return "notExecutable";
  // access(X_OK) decides as execve does (for root: any execute bit).
  return fs.access(path, fsConstants.X_OK).then(
    () => "executable" as const,
    () => "notExecutable" as const,
  );
};

/**
 * The service on the real file system, with `options` for tests (none in production).
 * Never throws; every failure is a {@link ConfigFileError}.
 */
export const makeNodeConfigFiles = (options: NodeConfigFilesOptions = {}): ConfigFilesService => ({
  read: (path) =>
    Effect.tryPromise({
      try: () => readText(path),
      catch: (error) => (error instanceof ConfigFileError ? error : ioError(path, "read")(error)),
    }),
  replace: replaceWith(options),
  editable: (path, placement) =>
    Effect.tryPromise({
      try: () => refusalOf(path, placement),
      catch: ioError(path, "check"),
    }).pipe(
      Effect.flatMap((refusal) =>
        refusal === undefined ? Effect.void : Effect.fail(refused(path, refusal)),
      ),
    ),
  commandFile: (path) => Effect.promise(() => commandFileAt(path)),
});

/** The service on the real file system ({@link makeNodeConfigFiles} without test options). */
export const nodeConfigFiles: ConfigFilesService = makeNodeConfigFiles();

/** The ConfigFiles layer on node:fs. */
export const layer: Layer.Layer<ConfigFiles> = Layer.succeed(ConfigFiles, nodeConfigFiles);
