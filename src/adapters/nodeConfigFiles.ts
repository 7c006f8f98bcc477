/**
 * The ConfigFiles port on node:fs. A replacement is a temporary file in the target's
 * own directory (so the rename is atomic), fsync'd, then renamed over the target; the
 * previous content is copied to the backup path first. Between the last check of the
 * expected content and the rename another program could still write the file: the
 * window is a few system calls, and the backup keeps what was there before the edit.
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import * as NodePath from "node:path";
import { Effect, Layer } from "effect";
import {
  ConfigFileError,
  ConfigFiles,
  type ConfigFilesService,
  type ReplaceOptions,
} from "../ports/ConfigFiles.js";

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;

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
};

const ioError = (path: string, action: string) => (error: unknown) => {
  const code = errnoOf(error);
  const why = code === undefined ? undefined : explained[code];
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

const readText = async (path: string): Promise<string | undefined> => {
  try {
    const stats = await fs.stat(path);
    if (!stats.isFile()) throw Object.assign(new Error("not a regular file"), { code: "ENOTFILE" });
    return await fs.readFile(path, "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
};

/** The path a write must replace: the final target of a symlink chain, else `path` itself. */
const targetOf = async (path: string): Promise<string> => {
  try {
    return await fs.realpath(path);
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
    // A dangling link keeps pointing where it pointed; a missing file is created.
    try {
      const link = await fs.readlink(path);
      return NodePath.resolve(NodePath.dirname(path), link);
    } catch {
      return path;
    }
  }
};

const replace = async (path: string, text: string, options: ReplaceOptions): Promise<void> => {
  const target = await targetOf(path);
  const current = await readText(target);
  if (current !== options.expected)
    throw new ConfigFileError({
      reason: "CHANGED",
      path,
      message: `${path} changed while quire was editing it; nothing was written, run the command again`,
    });
  const directory = NodePath.dirname(target);
  await fs.mkdir(directory, { recursive: true, mode: 0o700 });
  let mode = 0o600;
  if (current !== undefined) {
    mode = (await fs.stat(target)).mode & 0o7777;
    await fs.copyFile(target, options.backupPath);
  }
  const temporary = NodePath.join(
    directory,
    `.${NodePath.basename(target)}.quire-${randomBytes(6).toString("hex")}.tmp`,
  );
  const handle = await fs.open(temporary, "wx", mode);
  try {
    await handle.writeFile(text, "utf8");
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(temporary, target);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
};

/** The service on the real file system. */
export const nodeConfigFiles: ConfigFilesService = {
  read: (path) => Effect.tryPromise({ try: () => readText(path), catch: ioError(path, "read") }),
  replace: (path, text, options) =>
    Effect.tryPromise({
      try: () => replace(path, text, options),
      catch: (error) => (error instanceof ConfigFileError ? error : ioError(path, "write")(error)),
    }),
  isFile: (path) =>
    Effect.promise(() =>
      fs.stat(path).then(
        (stats) => stats.isFile(),
        () => false,
      ),
    ),
};

/** The ConfigFiles layer on node:fs. */
export const layer: Layer.Layer<ConfigFiles> = Layer.succeed(ConfigFiles, nodeConfigFiles);
