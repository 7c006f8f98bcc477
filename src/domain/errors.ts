/**
 * The domain error taxonomy (SPEC §3): closed sets of codes, reasons, actions, file
 * reasons and ENGINE_FAILED details, defined once here and documented in
 * docs/errors.md (test/domain/errors-doc.test.ts keeps the two identical).
 */
import { Data } from "effect";
import type { LineRange } from "./tree.js";

/** Every action token: the caller's next step. */
export const errorActions = [
  "FIX_REQUEST",
  "PULL_FIRST",
  "EDIT_FILES",
  "COMMIT_AGAIN",
  "RETRY_LATER",
  "CHECK_CONFIGURATION",
  "PULL_TO_VERIFY",
  "PULL_AGAIN",
  "CONTACT_OPERATOR",
] as const;

/** A stable token naming the caller's next step. */
export type ErrorAction = (typeof errorActions)[number];

/** What each action asks of the caller (documentation; may be reworded). */
export const actionMeanings: { readonly [A in ErrorAction]: string } = {
  FIX_REQUEST: "Change the call's arguments (or the working copy it names) and call again.",
  PULL_FIRST: "Call notes_pull on this working copy, then repeat the call.",
  EDIT_FILES: "Edit the listed files as their file reasons say, then call notes_commit again.",
  COMMIT_AGAIN:
    "The offending files were reset; call notes_commit again to publish the permitted changes.",
  RETRY_LATER: "Repeat the same call after a short wait.",
  CHECK_CONFIGURATION: "An operator must fix the store configuration, credentials or permissions.",
  PULL_TO_VERIFY:
    "Call notes_pull and check whether the changes were published before committing again.",
  PULL_AGAIN: "Call notes_pull to resynchronise the working copy, then redo any lost edits.",
  CONTACT_OPERATOR: "Nothing the caller can do fixes this; report the diagnosticId to an operator.",
};

/** One row of the taxonomy: what a (code, reason) pair means for the caller. */
export interface ErrorEntry {
  /** The caller's next step. */
  readonly action: ErrorAction;
  /** Whether repeating the same call can help. */
  readonly retryable: boolean;
  /** One line: when this error happens. */
  readonly when: string;
  /** One line: what to do about it. */
  readonly remedy: string;
}

/**
 * The single source of truth: code → reason → action, retryable, when, remedy. Every
 * other export of this module is derived from it.
 */
export const errorTable = {
  INVALID_REQUEST: {
    INVALID_ARGUMENT: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The call is malformed: arguments not a JSON object, an unknown or repeated field, a null, a wrong type, U+0000 or a lone surrogate, no or unknown tool (mcp.md).",
      remedy: "Send only the documented fields with valid values.",
    },
    PATH_OUTSIDE_ROOT: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The path resolves outside the workspace root (lexically or through a symlink).",
      remedy:
        "Omit path or pass a directory at or below the workspace root the message names (or start the server with another --workspace-root).",
    },
    PATH_NOT_ABSOLUTE: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The path is not absolute after expanding a leading ~/.",
      remedy: "Pass an absolute path, a path starting with ~/, or omit path.",
    },
    PATH_TOO_LONG: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The path is longer than 4,096 UTF-8 bytes, or one of its names longer than 255.",
      remedy: "Pass a shorter path or omit path.",
    },
    PATH_NOT_DIRECTORY: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The path, or a directory on the way to it, is not a directory: a file, a special file, or a symlink that leads to no directory.",
      remedy: "Pass the working-copy directory itself, or omit path.",
    },
    PATH_OVERLAPS_STATE: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The working copy would overlap the server's private state (--private-root) or the file store's directory (--store): one inside the other.",
      remedy: "Use a working copy outside both, or move the private root or the store elsewhere.",
    },
    MESSAGE_BLANK: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The commit message is empty or only Unicode white space.",
      remedy: "Write a message with visible text.",
    },
    MESSAGE_TOO_LONG: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The commit message is longer than 16,384 UTF-8 bytes.",
      remedy: "Shorten the message.",
    },
    NOT_PULLED: {
      action: "PULL_FIRST",
      retryable: false,
      when: "notes_commit on a working copy that was never pulled from this store.",
      remedy: "Call notes_pull on the working copy, then notes_commit.",
    },
    PULL_NEEDED: {
      action: "PULL_FIRST",
      retryable: false,
      when: "quire restore or revert on a working copy that must merge with the notebook first: a revert of a generation it has not pulled yet, or a restore or revert that a merge still to come would undo (an earlier pull or commit of the copy stopped part way, or a file the call would change is held: saved during an earlier call, or holding conflict blocks the notebook changed again). Nothing was written.",
      remedy:
        "Call quire pull (resolve by hand any conflict blocks it reports), then the restore or revert again; a held file may also be restored to the notebook's current version.",
    },
    GENERATION_PRUNED: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "quire show, restore or revert asked for the content of a generation whose packs the store no longer keeps (older than the retained checkpoints).",
      remedy:
        "Ask for a newer generation (quire log still lists the old one's record), or keep more history with --retained-checkpoints.",
    },
    UNPUBLISHED_CHANGES: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "quire restore would overwrite files with unpublished changes (listed), and --force was not given.",
      remedy:
        "Commit those changes first (or copy them aside), or repeat with --force to replace them.",
    },
    NESTED_WORKING_COPY: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The path is inside, or contains, another working copy already synchronised with this store; or it was last pulled from another store (another --store), whose state for it (or its first pull of it, stopped part way) is kept.",
      remedy:
        "Use the enclosing working copy itself, or a directory that does not overlap another copy; for a directory last pulled from another store, move it aside (or empty it) and pull again into the path, or, only if it holds that store's notes, call it with that store.",
    },
    MASS_DELETE: {
      action: "FIX_REQUEST",
      retryable: false,
      when: "The commit would delete every file of a non-empty notebook, or more than half of one with at least 20 files (the server was not started with --allow-mass-delete).",
      remedy:
        "Check the path; to get the files back, pull into a fresh directory; delete what is meant to go in smaller commits, or ask for --allow-mass-delete.",
    },
  },
  INVALID_CONTENT: {
    INVALID_FILES: {
      action: "EDIT_FILES",
      retryable: false,
      when: "The working copy holds something that is not notebook state (see the file reasons).",
      remedy: "Fix, rename or remove each listed file, then call again.",
    },
  },
  CONTENT_CONFLICT: {
    MERGE_CONFLICT: {
      action: "EDIT_FILES",
      retryable: false,
      when: "Local and remote changes overlap; conflict blocks were written into the listed files, or a file was moved aside (movedTo).",
      remedy: "Resolve each listed block or file as the message says, then call notes_commit.",
    },
    UNRESOLVED_MARKERS: {
      action: "EDIT_FILES",
      retryable: false,
      when: "notes_commit found complete conflict marker blocks in the listed files (or quire revert, in files it would merge); nothing was published or written.",
      remedy:
        "Resolve the blocks at the listed lines, then call notes_commit (or run the revert) again.",
    },
  },
  READ_ONLY_PATH: {
    PATH_SET_VIOLATION: {
      action: "COMMIT_AGAIN",
      retryable: true,
      when: "notes_commit changed files this server may not write; nothing was published and they were reset.",
      remedy:
        "Call notes_commit again to publish the permitted changes; write only writable paths.",
    },
  },
  REMOTE_BUSY: {
    CAS_RETRIES_EXHAUSTED: {
      action: "RETRY_LATER",
      retryable: true,
      when: "Other publications won the compare-and-swap more often than the configured retry bound.",
      remedy: "Call notes_commit again after a short wait; nothing was published.",
    },
  },
  STORAGE_FAILURE: {
    STORE_UNAVAILABLE: {
      action: "RETRY_LATER",
      retryable: true,
      when: "The object store could not be reached or failed before acting.",
      remedy: "Call again later; ask an operator if it persists.",
    },
    ACCESS_DENIED: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "The object store refused the credentials or the request.",
      remedy: "An operator must fix the credentials or the store permissions.",
    },
    TIMEOUT: {
      action: "RETRY_LATER",
      retryable: true,
      when: "A store request timed out before anything was changed.",
      remedy: "Call again later.",
    },
    TLS_FAILED: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "The TLS handshake with the store's endpoint failed before any request was sent: an https:// endpoint on a plain-HTTP port, or a certificate that is expired, self-signed, untrusted or for another host.",
      remedy:
        "An operator must fix the endpoint (http:// for a plain-HTTP port) or the server's certificate or trust store (NODE_EXTRA_CA_CERTS).",
    },
    THROTTLED: {
      action: "RETRY_LATER",
      retryable: true,
      when: "The object store asked the server to slow down.",
      remedy: "Call again after a pause.",
    },
    PUBLICATION_UNKNOWN: {
      action: "PULL_TO_VERIFY",
      retryable: false,
      when: "It is unproven whether the manifest write was accepted: its response was lost and a re-read did not settle it, or the serve process running it stopped answering.",
      remedy: "Call notes_pull; if the changes are not in the notebook, commit them again.",
    },
  },
  STORAGE_INTEGRITY: {
    CHECKSUM_MISMATCH: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "A stored pack's size or SHA-256 does not match its manifest descriptor.",
      remedy: "Report the diagnosticId; an operator must repair or restore the store.",
    },
    MANIFEST_INVALID: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "The current manifest failed strict validation, the store answered or refused it as malformed, or it does not continue the history this copy has seen (the store went back).",
      remedy: "Report the diagnosticId; an operator must repair or restore the store.",
    },
    PACK_MISSING: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "A pack the unchanged manifest references does not exist.",
      remedy: "Report the diagnosticId; an operator must restore the missing pack.",
    },
    PACK_INVALID: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "A pack with a correct checksum failed to decode or holds content that does not match its content id, or the store answered with malformed data.",
      remedy: "Report the diagnosticId; an operator must repair or restore the store.",
    },
    UNSUPPORTED_VERSION: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "The manifest or a pack has a format version this release does not know.",
      remedy: "An operator must upgrade quire on this host.",
    },
    STATE_INVALID: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "This working copy's private state record is corrupt or from an unknown version.",
      remedy:
        "An operator may delete the copy's private state; the next pull treats existing files as local additions.",
    },
  },
  RECOVERY_FAILURE: {
    UNEXPECTED_FAILURE: {
      action: "PULL_AGAIN",
      retryable: true,
      when: "An unexpected failure after the working copy started changing; recovery ran (see recovery), or the rewrite stopped part way for a local cause the message names (one `detail` classifies: a full disk, a permission, a read-only file system, too many open files, a name too long, a file too large) and nothing was half-written.",
      remedy:
        "Fix the cause the message names, if any; then call notes_pull, which completes the working copy; if recovery.remoteAccepted is not yes, check whether the changes were published.",
    },
    RECOVERY_PENDING: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "The working copy needs recovery and resynchronising it failed again, for a cause a caller cannot fix (not one `detail` classifies: a full disk, a permission, a read-only file system, too many open files, a name too long, a file too large).",
      remedy: "Report the diagnosticId; an operator must fix the underlying failure.",
    },
  },
  ENGINE_FAILED: {
    LOCAL_IO: {
      action: "RETRY_LATER",
      retryable: true,
      when: "A local file system operation failed before the working copy was changed (see detail: a full disk, too many open files…; a permission or a read-only file system is LOCAL_ACCESS), or stopped quire restore or revert part way (what it wrote is in changed).",
      remedy: "Fix the cause named in detail (disk space, open files), then call again.",
    },
    LOCAL_ACCESS: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "A local file system operation was refused for a permission (EACCES, EPERM: detail `permission denied`) or a read-only file system (EROFS: detail `read-only file system`) before the working copy was changed, or stopped quire restore or revert part way (what it wrote is in changed). Repeating the call fails the same way.",
      remedy:
        "Make the directory or file the message names writable by the server's user (chmod u+w, chown) or its file system read-write, or choose another working copy or --private-root; then call again.",
    },
    ROOT_CHANGED: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "The workspace root was deleted or moved since quire resolved it, or a directory on the way to it was replaced (by a symlink to another place, say): found at the call's start, nothing was read or written; found by a pull or a read-only call whose files vanished under it, what the call wrote there went with the root. Repeating the call fails the same way.",
      remedy:
        "Put the directory back where it was (or create it again, then pull), or start quire again on the path meant (--workspace-root).",
    },
    BUSY: {
      action: "RETRY_LATER",
      retryable: true,
      when: "Another process holds this working copy's lock, or is pulling the same directory for the first time from another store, or (a first pull of a directory emptied from another store) a call with that store is at work there.",
      remedy:
        "Call again once the other process has finished. Where the message names the holder and its lock file (a first pull, or a call of another store), and that is no quire process at work there, remove that file.",
    },
    INTERNAL: {
      action: "CONTACT_OPERATOR",
      retryable: false,
      when: "An unexpected internal failure (a bug).",
      remedy: "Report the diagnosticId; the log record with the same id has the cause.",
    },
  },
  INCOMPATIBLE_STORE: {
    NO_CONDITIONAL_CREATE: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: a create with If-None-Match * succeeded over an existing key.",
      remedy:
        "Use a store that supports conditional create (for S3-compatible services, check the version).",
    },
    NO_CONDITIONAL_REPLACE: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: a write with a wrong If-Match succeeded, a right one failed, or writes are answered without their ETag.",
      remedy: "Use a store that supports conditional replace with If-Match.",
    },
    IF_MATCH_CREATES: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: a write with If-Match on a key that does not exist succeeded or created the key.",
      remedy:
        "Use a store whose If-Match fails on a missing key (MinIO: RELEASE.2025-09-07 or later).",
    },
    NO_READ_AFTER_WRITE: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: a read after a write did not return the written object and ETag.",
      remedy: "Use a store with strong read-after-write consistency.",
    },
    ACCESS_DENIED: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: the store refused the credentials or a probe request.",
      remedy: "Fix the credentials or grant read, write and delete below the prefix.",
    },
    BUCKET_MISSING: {
      action: "CHECK_CONFIGURATION",
      retryable: false,
      when: "Startup probe: the configured bucket does not exist.",
      remedy: "Create the bucket or fix the --store URL.",
    },
  },
} as const satisfies { readonly [code: string]: { readonly [reason: string]: ErrorEntry } };

/** The table's type, with every key and value literal. */
type ErrorTable = typeof errorTable;

/** A stable error category. */
export type ErrorCode = keyof ErrorTable;

/** The reasons that belong to `C`. */
export type ReasonOf<C extends ErrorCode> = keyof ErrorTable[C] & string;

/** A stable token one level below the code (any code's reason). */
export type ErrorReason = { readonly [C in ErrorCode]: ReasonOf<C> }[ErrorCode];

/** Every error code, in table order. */
export const errorCodes: ReadonlyArray<ErrorCode> = objectKeys(errorTable);

/** One flattened table row. */
export interface ErrorRow extends ErrorEntry {
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
}

/** Looks up the table entry of a (code, reason) pair; the types make it total. */
export const errorEntry = <C extends ErrorCode>(code: C, reason: ReasonOf<C>): ErrorEntry =>
  errorEntryOf(code, reason);

/** The reasons of one code, in table order. */
export const reasonsOf = <C extends ErrorCode>(code: C): ReadonlyArray<ReasonOf<C>> => {
  const keys: ReadonlyArray<ReasonOf<C>> = objectKeys(errorTable[code]);
  return keys;
};

/** Every (code, reason) row of the table, in table order (for docs and tests). */
export const errorRows: ReadonlyArray<ErrorRow> = errorCodes.flatMap((code) =>
  reasonsOf(code).map((reason) => ({ code, reason, ...errorEntry(code, reason) })),
);

/** Every reason of any code, de-duplicated (ACCESS_DENIED and STORE_UNAVAILABLE occur twice). */
export const errorReasons: ReadonlyArray<ErrorReason> = [
  ...new Set(errorRows.map((row) => row.reason)),
];

/** What each per-file reason means, and the code it is reported under. */
export const fileReasonTable = {
  NOT_UTF8: { code: "INVALID_CONTENT", meaning: "The file's bytes are not valid UTF-8." },
  CONTAINS_NUL: { code: "INVALID_CONTENT", meaning: "The file contains U+0000." },
  SYMLINK: { code: "INVALID_CONTENT", meaning: "A symbolic link (never followed), at any depth." },
  SPECIAL_FILE: {
    code: "INVALID_CONTENT",
    meaning: "A socket, FIFO or device instead of a regular file.",
  },
  INVALID_NAME: {
    code: "INVALID_CONTENT",
    meaning:
      "The path breaks the notebook path rules (length, characters, reserved names), or is a file an interrupted rewrite set aside (`.<name>.quire-<id>.aside` or `.cut`) whose name is taken: check it, then rename or delete it.",
  },
  CASE_COLLISION: {
    code: "INVALID_CONTENT",
    meaning: "The path equals another path (or one of its directories) under Unicode case folding.",
  },
  FILE_DIRECTORY_CLASH: {
    code: "INVALID_CONTENT",
    meaning:
      "quire restore or revert would bring back a file where the working copy has a directory of that name, or below a name that is a file there; nothing was written.",
  },
  TOO_LARGE: {
    code: "INVALID_CONTENT",
    meaning:
      "The file is larger than the configured maximum file size, or a commit's merge with concurrent changes would make it so (nothing was published).",
  },
  INVALID_ATTRIBUTES: {
    code: "INVALID_CONTENT",
    meaning:
      "Malformed lines of `.quireattributes`, or its lines past the limits quire reads (1,000 rules, 64 KiB); the ranges are those lines, the message says why.",
  },
  TEXT_CONFLICT: {
    code: "CONTENT_CONFLICT",
    meaning: "Both sides changed overlapping lines; the ranges are the conflict blocks.",
  },
  DELETE_MODIFY: {
    code: "CONTENT_CONFLICT",
    meaning: "One side deleted the file, the other modified it.",
  },
  ADD_ADD: {
    code: "CONTENT_CONFLICT",
    meaning: "Both sides added the file with different content.",
  },
  FILE_DIRECTORY: {
    code: "CONTENT_CONFLICT",
    meaning:
      "One side has a file where the other has a directory of files: the directory stays (`keptAs`), the file was moved aside to `movedTo` (`~local` or `~remote` after its name).",
  },
  CASE_CONFLICT: {
    code: "CONTENT_CONFLICT",
    meaning:
      "The two sides named paths equal under case folding: one stays (`keptAs`; in a pull or commit, the notebook's), the other file was moved aside to `movedTo` (`~local` or `~remote` after its name, or after its directory's).",
  },
  MARKER_BLOCK: {
    code: "CONTENT_CONFLICT",
    meaning: "The file holds complete conflict marker blocks; the ranges are the blocks.",
  },
  UNPUBLISHED_CHANGE: {
    code: "INVALID_REQUEST",
    meaning:
      "quire restore would replace this file's unpublished change (an edit, or a file added since the last pull or commit), and --force was not given; nothing was written.",
  },
  READ_ONLY: {
    code: "READ_ONLY_PATH",
    meaning: "The change is under an entry of the read-only set; it was reset.",
  },
  NOT_WRITABLE: {
    code: "READ_ONLY_PATH",
    meaning: "The change is outside every entry of the writable set; it was reset.",
  },
} as const satisfies {
  readonly [reason: string]: { readonly code: ErrorCode; readonly meaning: string };
};

/** A stable per-file reason. */
export type FileReason = keyof typeof fileReasonTable;

/** Every file reason, in table order. */
export const fileReasons: ReadonlyArray<FileReason> = objectKeys(fileReasonTable);

/** Every ENGINE_FAILED `detail`: fixed English descriptions of a classified local cause. */
export const engineDetails = [
  "disk full",
  "permission denied",
  "read-only file system",
  "too many open files",
  "name too long",
  "file too large",
] as const;

/** A classified cause of an ENGINE_FAILED error. */
export type EngineDetail = (typeof engineDetails)[number];

/** The local failure each detail classifies (documentation). */
export const engineDetailCauses: { readonly [D in EngineDetail]: string } = {
  "disk full": "No space left on the device, or a disk quota exceeded (ENOSPC, EDQUOT).",
  "permission denied":
    "The process may not read or write a file or directory it needs (EACCES, EPERM).",
  "read-only file system":
    "The working copy or private state is on a read-only file system (EROFS).",
  "too many open files": "The process or the system ran out of file descriptors (EMFILE, ENFILE).",
  "name too long": "A host path or name is longer than the file system allows (ENAMETOOLONG).",
  "file too large":
    "A file would be larger than the file system or the process's file size limit (ulimit -f) allows (EFBIG).",
};

/**
 * What each field of a `files[]` entry says (documentation; docs/errors.md lists exactly
 * these). `movedTo`, `side` and `keptAs` appear together, only on a conflict that moved
 * a file aside: without them a caller learns that something clashed but not where its
 * own note went.
 */
export const fileIssueFields = {
  path: "The file, relative to the working copy (for a moved file: where it was).",
  reason: "A file reason (below).",
  ranges: "One-based inclusive line ranges; `[]` when the reason is not about lines.",
  movedTo:
    "`FILE_DIRECTORY` and `CASE_CONFLICT` only: where the file that stood at `path` is now (it was moved aside).",
  side: "With `movedTo`: whose file was moved: `local` (the working copy's) or `remote` (the notebook's; for quire revert, the version from before the reverted generation).",
  keptAs:
    "With `movedTo`: what stayed in its place: the directory (`FILE_DIRECTORY`), or the other side's file or directory spelt differently (`CASE_CONFLICT`).",
  // Exactly FileIssue's fields: a field added there without its documentation (or the
  // reverse) does not compile.
} as const satisfies { readonly [F in keyof FileIssue]-?: string };

/** One affected file of an error (fields as {@link fileIssueFields} says). */
export interface FileIssue {
  readonly path: string;
  readonly reason: FileReason;
  readonly ranges: ReadonlyArray<LineRange>;
  /** Where the file at `path` is now, when a conflict moved it aside. */
  readonly movedTo?: string;
  /** With `movedTo`: whose file moved. */
  readonly side?: "local" | "remote";
  /** With `movedTo`: what stayed at `path` (or at its other spelling). */
  readonly keptAs?: string;
}

/** The recovery report of a RECOVERY_FAILURE. */
export interface RecoveryReport {
  readonly stage: string;
  readonly remoteAccepted: "yes" | "no" | "unknown";
  readonly resynchronized: boolean;
}

/** A file a call changed in the working copy, and how. */
export interface ChangedFile {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
}

/**
 * A domain error as every surface reports it. Build it with {@link domainError}, which
 * fills `action` and `retryable` from the table; `detail` is only meaningful for
 * ENGINE_FAILED, `recovery` only for RECOVERY_FAILURE, and `changed` with `held` only
 * for a CONTENT_CONFLICT after which the call had changed the working copy anyway (a
 * conflicting revert writes its clean changes too: the caller must learn of them), or an
 * ENGINE_FAILED that stopped a restore or revert part way (what it had written).
 */
export class DomainError extends Data.TaggedError("DomainError")<{
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
  readonly action: ErrorAction;
  readonly retryable: boolean;
  readonly message: string;
  readonly files: ReadonlyArray<FileIssue>;
  readonly detail?: EngineDetail;
  readonly recovery?: RecoveryReport;
  /** Every file the call changed in the working copy, the conflicted ones included. */
  readonly changed?: ReadonlyArray<ChangedFile>;
  /** With `changed`: files saved by someone during the call, left as they were. */
  readonly held?: ReadonlyArray<string>;
  /**
   * What the host reported for a local failure no `detail` classifies (its reason and
   * message): for the call's log record only, which errors.md promises holds the cause —
   * never in an answer (it may name private paths; the logger redacts them).
   */
  readonly hostCause?: string;
}> {}

/**
 * The arguments of {@link domainError}: a union over codes, so `reason` must belong to
 * `code`, `detail` is accepted only for ENGINE_FAILED, `recovery` is required for
 * RECOVERY_FAILURE and refused elsewhere, and `changed` (with `held`) only for
 * CONTENT_CONFLICT and ENGINE_FAILED (a restore or revert stopped part way).
 */
export type DomainErrorInput = {
  readonly [C in ErrorCode]: {
    readonly code: C;
    readonly reason: ReasonOf<C>;
    readonly message: string;
    readonly files?: ReadonlyArray<FileIssue>;
    readonly hostCause?: string;
  } & (C extends "ENGINE_FAILED"
    ? { readonly detail?: EngineDetail }
    : { readonly detail?: never }) &
    (C extends "RECOVERY_FAILURE"
      ? { readonly recovery: RecoveryReport }
      : { readonly recovery?: never }) &
    (C extends "CONTENT_CONFLICT" | "ENGINE_FAILED"
      ? {
          readonly changed?: {
            readonly files: ReadonlyArray<ChangedFile>;
            readonly held: ReadonlyArray<string>;
          };
        }
      : { readonly changed?: never });
}[ErrorCode];

/** Builds a {@link DomainError}, taking `action` and `retryable` from the table. Never throws for typed input. */
export const domainError = (input: DomainErrorInput): DomainError => {
  const entry = errorEntryOf(input.code, input.reason);
  return new DomainError({
    code: input.code,
    reason: input.reason,
    action: entry.action,
    retryable: entry.retryable,
    message: input.message,
    files: input.files ?? [],
    ...(input.detail === undefined ? {} : { detail: input.detail }),
    ...(input.recovery === undefined ? {} : { recovery: input.recovery }),
    ...(input.hostCause === undefined ? {} : { hostCause: input.hostCause }),
    ...(input.changed === undefined
      ? {}
      : { changed: input.changed.files, held: input.changed.held }),
  });
};

/**
 * The note a failed commit or pull adds when it first settled the copy on an earlier
 * commit of its own whose publication had landed (its process stopped before the copy
 * was settled): the error must not read as "nothing of yours was published".
 */
export const earlierCommitLanded = (generation: number): string =>
  `An earlier commit of this working copy, interrupted after the notebook accepted it, is published as generation ${generation}, and the working copy was settled on it; only this call's own changes are concerned by the error.`;

/**
 * `error` with `note` added at the end of its message (after a full stop if it has
 * none) and, when given, `files` in place of its own, everything else as it was (the
 * log-only cause included): for a call that must also say what it did before it failed.
 */
export const withNote = (
  error: DomainError,
  note: string,
  files: ReadonlyArray<FileIssue> = error.files,
): DomainError =>
  new DomainError({
    code: error.code,
    reason: error.reason,
    action: error.action,
    retryable: error.retryable,
    message: `${error.message}${/[.!?]$/.test(error.message) ? "" : "."} ${note}`,
    files,
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.recovery === undefined ? {} : { recovery: error.recovery }),
    ...(error.changed === undefined ? {} : { changed: error.changed }),
    ...(error.held === undefined ? {} : { held: error.held }),
    ...(error.hostCause === undefined ? {} : { hostCause: error.hostCause }),
  });

/** Whether `reason` is one of `code`'s reasons (for decoding untrusted tokens). */
export const isReasonOf = <C extends ErrorCode>(code: C, reason: string): reason is ReasonOf<C> =>
  Object.prototype.hasOwnProperty.call(errorTable[code], reason);

// The union-typed lookup `domainError` needs: the correlation between code and reason
// is already enforced by DomainErrorInput, so a string-indexed read is total here.
function errorEntryOf(code: ErrorCode, reason: string): ErrorEntry {
  const reasons: { readonly [reason: string]: ErrorEntry } = errorTable[code];
  const entry = reasons[reason];
  if (entry === undefined) throw new Error(`unreachable: no error entry for ${code}/${reason}`);
  return entry;
}

// Object.keys typed by the literal keys of a table this module defines (no extra keys).
function objectKeys<T extends object>(table: T): Array<keyof T & string> {
  return Object.keys(table).filter((key): key is keyof T & string => key in table);
}
