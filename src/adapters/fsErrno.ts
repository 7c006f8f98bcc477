/**
 * The errno vocabulary shared by the file system adapters: node and memfs both report
 * failures as node-style errors carrying an errno `code`, so they classify them alike.
 */
import { FsError, type FsErrorReason } from "../ports/FileSystem.js";

const reasonByCode: Readonly<Record<string, FsErrorReason>> = {
  ENOENT: "NotFound",
  ENOTDIR: "NotADirectory",
  EISDIR: "IsADirectory",
  EEXIST: "Exists",
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  EROFS: "ReadOnly",
  ENOSPC: "NoSpace",
  EDQUOT: "NoSpace",
  EMFILE: "TooManyOpenFiles",
  ENFILE: "TooManyOpenFiles",
  ENAMETOOLONG: "NameTooLong",
  EFBIG: "TooLarge",
};

/** The errno `code` of a node-style error (`"ENOENT"`, …), or `undefined` for anything else. */
export const errnoCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;

/**
 * The port reason for an errno code. `opening` marks an open for reading with
 * `O_NOFOLLOW`: there ELOOP means the final component is a symlink and ENXIO that it is
 * a socket, so both are `NotRegularFile`. Unknown codes are `Other`.
 */
export const reasonForErrno = (code: string | undefined, opening: boolean): FsErrorReason => {
  if (code === undefined) return "Other";
  if (opening && (code === "ELOOP" || code === "ENXIO")) return "NotRegularFile";
  return reasonByCode[code] ?? "Other";
};

/** The failure a bounded read throws when a file holds more than its bound (EFBIG). */
export const tooLarge = (maxBytes: number): Error =>
  Object.assign(new Error(`EFBIG: the file holds more than ${maxBytes} bytes`), {
    code: "EFBIG",
  });

/** The message of a failure without its stack (node's messages already name the path). */
export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/**
 * Maps any failure of a node fs call on `path` to an {@link FsError}; an `FsError`
 * passes through unchanged. `opening` marks an `O_NOFOLLOW` open for reading (ELOOP and
 * ENXIO then mean "not a regular file"). The message never carries a stack.
 */
export const mapError = (error: unknown, path: string, opening = false): FsError =>
  error instanceof FsError
    ? error
    : new FsError({
        reason: reasonForErrno(errnoCode(error), opening),
        path,
        message: errorMessage(error),
      });
