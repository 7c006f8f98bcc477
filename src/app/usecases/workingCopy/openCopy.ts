/**
 * Opening the working copy a call names (SPEC §2.1, §4.1): the caller's raw path is
 * checked, expanded and resolved to a canonical directory at or below the workspace root,
 * and opened as a rooted tree through the workspace root's own tree, one component at a
 * time without following symlinks. A missing directory is created (pull) only once the
 * whole path is proven to lie inside the root, through the same tree, so nothing is ever
 * created outside it; a symlink on the way is followed only by resolving it and checking
 * its target again, never by the walk itself.
 */
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { Effect, Option, type Scope } from "effect";
import { textFault, textFaultMessage } from "../../../domain/content.js";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { utf8Length } from "../../../domain/paths.js";
import type { FileSystemService, FsError, RootedTree } from "../../../ports/FileSystem.js";
import { localFailure, pathForMessage } from "../shared/failures.js";

/** The settings path resolution needs. */
export interface PathSettings {
  readonly workspaceRoot: string;
  /** What `workspaceRoot` resolved to, when it is not canonical itself (NotebookOptions). */
  readonly workspaceRootResolved?: string;
  /** The root as configured, when it reaches `workspaceRoot` through a symlink (NotebookOptions). */
  readonly workspaceRootSpelt?: string;
  readonly notebookDirectory: string;
  readonly homeDirectory: string;
  /** The private root: no working copy may overlap it. */
  readonly privateRoot: string;
  /** The file store's directory, when the store is one: no working copy may overlap it. */
  readonly storeDirectory?: string;
}

/** A resolved working copy: its canonical path and, when it exists, its open tree. */
export interface OpenedCopy {
  readonly path: string;
  readonly tree: Option.Option<RootedTree>;
  /**
   * Removes the directories this resolution created, if they are still empty (a call
   * that fails before writing anything leaves nothing behind); never fails.
   */
  readonly undoCreated: Effect.Effect<void>;
  /**
   * The copy's own directory was missing and this resolution made it: whatever private
   * state is kept for the path described a directory that is gone (moved or deleted).
   */
  readonly created: boolean;
}

type PathReason =
  | "PATH_OUTSIDE_ROOT"
  | "PATH_NOT_ABSOLUTE"
  | "PATH_TOO_LONG"
  | "PATH_NOT_DIRECTORY"
  | "PATH_OVERLAPS_STATE"
  | "INVALID_ARGUMENT";

const invalidPath = (reason: PathReason, message: string): DomainError =>
  domainError({ code: "INVALID_REQUEST", reason, message });

/** Whether the absolute path `path` is `root` or lies below it (lexically). */
export const isAtOrBelow = (path: string, root: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

const outsideRoot = (root: string, how: string): DomainError =>
  invalidPath(
    "PATH_OUTSIDE_ROOT",
    `The path ${how} the workspace root ${root}; use a path below it, or start the server with another --workspace-root.`,
  );

/**
 * `path` moved onto the canonical workspace root when it is spelt below the root as it
 * was configured (`workspaceRootSpelt`, a spelling through a symlink); as it is
 * otherwise. Lexical only: the walk from the root's tree still checks every component.
 */
const onCanonicalRoot = (path: string, settings: PathSettings): string => {
  const spelt = settings.workspaceRootSpelt;
  return spelt === undefined ||
    isAtOrBelow(path, settings.workspaceRoot) ||
    !isAtOrBelow(path, spelt)
    ? path
    : join(settings.workspaceRoot, relative(spelt, path));
};

/**
 * Fails when the root's configured spelling no longer leads to the canonical root (a
 * symlink on the way was moved since the start): a path spelt through it would
 * otherwise be taken to the old place while the agent works in the new one, and its
 * commits would publish what it never edited. One `realpath` per call that uses the
 * spelling.
 */
const spellingStillLeadsToRoot = (
  fs: FileSystemService,
  settings: PathSettings,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const spelt = settings.workspaceRootSpelt;
    if (spelt === undefined) return;
    const now = yield* fs.realPath(spelt).pipe(Effect.option);
    if (Option.isNone(now) || now.value !== settings.workspaceRoot)
      return yield* Effect.fail(rootReplaced(spelt));
  });

/** How many symlinks one resolution follows before giving up (as the kernel's ELOOP). */
const maxLinks = 40;

/**
 * The caller's path after `~` expansion, checked as SPEC §2.1 says: the byte bound
 * applies to the expanded string as given, before `..` and `//` are tidied away.
 */
const expand = (
  settings: PathSettings,
  raw: string | undefined,
): Effect.Effect<string, DomainError> => {
  const requested = raw === undefined || raw === "" ? settings.notebookDirectory : raw;
  // A lone surrogate has no UTF-8 form, so no file system can hold it: refused as MCP's
  // decode refuses it, not resolved into a path that names something else.
  const fault = textFault(requested);
  if (fault !== undefined)
    return Effect.fail(invalidPath("INVALID_ARGUMENT", `${textFaultMessage("The path", fault)}.`));
  const expanded =
    requested === "~"
      ? settings.homeDirectory
      : requested.startsWith("~/")
        ? `${settings.homeDirectory.replace(/\/+$/, "")}/${requested.slice(2)}`
        : requested;
  if (utf8Length(expanded) > 4096)
    return Effect.fail(
      invalidPath(
        "PATH_TOO_LONG",
        "The path is longer than 4,096 UTF-8 bytes (after ~ expansion).",
      ),
    );
  if (!isAbsolute(expanded))
    return Effect.fail(
      invalidPath("PATH_NOT_ABSOLUTE", "The path must be absolute (or start with ~/)."),
    );
  return Effect.succeed(expanded);
};

/** Where a walk of the path's components stopped. */
type Stop =
  | { readonly _tag: "Missing"; readonly at: number }
  | { readonly _tag: "Symlink"; readonly at: number }
  | { readonly _tag: "NotDirectory"; readonly at: number }
  | { readonly _tag: "Directory" };

const io = (doing: string) => (error: FsError) => localFailure(error, doing);

/**
 * The workspace root's path leads elsewhere than when the process resolved it: a
 * directory above it was swapped (for a symlink to another place, say). Nothing is
 * reached through it; the person who moved things decides where the notebook is.
 */
const rootReplaced = (workspaceRoot: string): DomainError =>
  domainError({
    code: "ENGINE_FAILED",
    // Only a person can put things back: retrying never helps (until 2026-12-07 LOCAL_IO).
    reason: "ROOT_CHANGED",
    message: `The workspace root ${pathForMessage(workspaceRoot)} no longer leads to the directory it named when quire resolved it: a directory on the way to it was replaced (by a symlink, say). Nothing was read or written. Put the directory back, or start quire again on the path meant.`,
  });

/**
 * The workspace root is gone (deleted, or a file in its place) since the server started:
 * the generic LOCAL_IO said only "a local file operation failed", and retrying never helps.
 */
const rootGone = (workspaceRoot: string): DomainError =>
  domainError({
    code: "ENGINE_FAILED",
    reason: "ROOT_CHANGED",
    message: `The workspace root ${pathForMessage(workspaceRoot)} no longer exists as a directory (it was deleted or moved). Nothing was read or written. Create it again (then pull), or start quire on another --workspace-root.`,
  });

/**
 * Whether the workspace root changed during a call that then failed with `error`: only
 * for a local failure of a missing file or directory (ENOENT, ENOTDIR: what operations
 * in a removed root fail with; `Moved` where paths are checked step by step, without
 * /proc/self/fd, as on macOS), the root is opened again, on this failure path only.
 * Gone or leading elsewhere now, the call answers ENGINE_FAILED/ROOT_CHANGED (not
 * retryable: every retry would fail the same way) instead of the retryable LOCAL_IO;
 * otherwise `error` as it is.
 */
export const rootChangedDuring = (
  fs: FileSystemService,
  settings: PathSettings,
  error: DomainError,
): Effect.Effect<DomainError> => {
  if (
    error.code !== "ENGINE_FAILED" ||
    error.reason !== "LOCAL_IO" ||
    !/^(NotFound|NotADirectory|Moved):/.test(error.hostCause ?? "")
  )
    return Effect.succeed(error);
  return Effect.scoped(openRoot(fs, settings)).pipe(
    Effect.as(error),
    Effect.catchAll((opening) =>
      Effect.succeed(
        opening.reason === "ROOT_CHANGED"
          ? domainError({
              code: "ENGINE_FAILED",
              reason: "ROOT_CHANGED",
              message: `The workspace root ${pathForMessage(settings.workspaceRoot)} was deleted, moved or replaced while this call worked in it, so the call could not finish; what it wrote there went with it. Put the directory back, or create it again and pull, or start quire on another --workspace-root.`,
            })
          : error,
      ),
    ),
  );
};

/**
 * Opens the workspace root's tree: ROOT_CHANGED when the root is gone (deleted, or not a
 * directory) or its path leads elsewhere than when it was resolved, LOCAL_IO otherwise.
 */
const openRoot = (
  fs: FileSystemService,
  settings: PathSettings,
): Effect.Effect<RootedTree, DomainError, Scope.Scope> =>
  fs
    .openTree(settings.workspaceRoot, settings.workspaceRootResolved)
    .pipe(
      Effect.mapError((error) =>
        error.reason === "Moved"
          ? rootReplaced(settings.workspaceRoot)
          : error.reason === "NotFound" || error.reason === "NotADirectory"
            ? rootGone(settings.workspaceRoot)
            : io("opening the workspace root")(error),
      ),
    );

/** The first component of `parts` (from the root's tree) that is not a real directory. */
const firstStop = (
  root: RootedTree,
  parts: ReadonlyArray<string>,
): Effect.Effect<Stop, DomainError> =>
  Effect.gen(function* () {
    for (let at = 0; at < parts.length; at++) {
      const info = yield* root
        .info(parts.slice(0, at + 1).join("/"))
        .pipe(Effect.mapError(io("resolving the path")));
      if (Option.isNone(info)) return { _tag: "Missing", at };
      if (info.value.kind === "symlink") return { _tag: "Symlink", at };
      if (info.value.kind !== "directory") return { _tag: "NotDirectory", at };
    }
    return { _tag: "Directory" };
  });

/**
 * Resolves and opens the working copy `raw` names (omitted/empty = the notebook directory;
 * `~/` = home): absolute, at most 4,096 bytes after expansion, at or below the workspace
 * root also after resolving symlinks, never overlapping the private root or the file
 * store. With `create` a missing directory is created (pull), through the tree; without
 * it a missing one is returned with no tree. Errors: INVALID_REQUEST (PATH_* reasons),
 * ENGINE_FAILED/LOCAL_IO when the file system fails, ENGINE_FAILED/ROOT_CHANGED when the
 * workspace root is gone or no longer leads to the directory it named.
 */
export const openWorkingCopy = (
  fs: FileSystemService,
  settings: PathSettings,
  raw: string | undefined,
  create: boolean,
): Effect.Effect<OpenedCopy, DomainError, Scope.Scope> =>
  Effect.gen(function* () {
    const expanded = yield* expand(settings, raw);
    const workspaceRoot = settings.workspaceRoot;
    const lexical = onCanonicalRoot(resolve(expanded), settings);
    if (lexical !== resolve(expanded)) yield* spellingStillLeadsToRoot(fs, settings);
    if (!isAtOrBelow(lexical, workspaceRoot))
      return yield* Effect.fail(outsideRoot(workspaceRoot, "is outside"));
    const root = yield* openRoot(fs, settings);
    let parts = relative(workspaceRoot, lexical)
      .split(sep)
      .filter((part) => part !== "");
    for (let round = 0; ; round++) {
      // Each round follows one symlink, or finds the path changed under it: bounded.
      if (round > maxLinks)
        return yield* Effect.fail(
          invalidPath(
            "PATH_NOT_DIRECTORY",
            "The path goes through too many symlinks, or kept changing while it was resolved.",
          ),
        );
      // No host file system has names longer than this: refused, never tried.
      if (parts.some((part) => utf8Length(part) > 255))
        return yield* Effect.fail(
          invalidPath("PATH_TOO_LONG", "A name in the path is longer than 255 UTF-8 bytes."),
        );
      const stop = yield* firstStop(root, parts);
      if (stop._tag === "Symlink") {
        // Resolved by name, then checked and walked again without following anything: a
        // swap meanwhile only makes the walk stop again.
        const link = [workspaceRoot, ...parts.slice(0, stop.at + 1)].join(sep);
        const target = yield* fs
          .realPath(link)
          .pipe(
            Effect.catchTag("FsError", (error) =>
              error.reason === "NotFound" || error.reason === "NotADirectory"
                ? Effect.fail(
                    invalidPath(
                      "PATH_NOT_DIRECTORY",
                      "The path goes through a symlink that leads to no directory.",
                    ),
                  )
                : Effect.fail(localFailure(error, "resolving the path")),
            ),
          );
        if (!isAtOrBelow(target, workspaceRoot))
          return yield* Effect.fail(outsideRoot(workspaceRoot, "leads through a symlink outside"));
        parts = [
          ...relative(workspaceRoot, target)
            .split(sep)
            .filter((part) => part !== ""),
          ...parts.slice(stop.at + 1),
        ];
        continue;
      }
      if (stop._tag === "NotDirectory")
        return yield* Effect.fail(
          invalidPath(
            "PATH_NOT_DIRECTORY",
            stop.at === parts.length - 1
              ? "The path is not a directory."
              : "The path lies below something that is not a directory.",
          ),
        );
      const canonical = parts.length === 0 ? workspaceRoot : [workspaceRoot, ...parts].join(sep);
      yield* refuseOverlaps(fs, settings, canonical);
      if (stop._tag === "Missing") {
        if (!create)
          return {
            path: canonical,
            tree: Option.none(),
            undoCreated: Effect.void,
            created: false,
          };
        const made = yield* Effect.either(root.makeDirectories(parts.join("/"), 0o755));
        // A symlink or file planted on the way meanwhile: resolve again from the top.
        if (made._tag === "Left") {
          if (made.left.reason === "NotADirectory" || made.left.reason === "Moved") continue;
          return yield* Effect.fail(localFailure(made.left, "creating the working copy"));
        }
      }
      const opened = yield* Effect.either(root.subtree(parts.join("/")));
      if (opened._tag === "Right")
        return {
          path: canonical,
          tree: Option.some(opened.right),
          undoCreated: stop._tag === "Missing" ? removeCreated(root, parts, stop.at) : Effect.void,
          created: stop._tag === "Missing",
        };
      if (opened.left.reason !== "NotADirectory" && opened.left.reason !== "NotFound")
        return yield* Effect.fail(localFailure(opened.left, "opening the working copy"));
    }
  });

/** Removes `parts[0..]` down to index `from`, deepest first, each only while empty. */
const removeCreated = (
  root: RootedTree,
  parts: ReadonlyArray<string>,
  from: number,
): Effect.Effect<void> =>
  Effect.forEach(
    parts
      .map((_, at) => parts.slice(0, at + 1).join("/"))
      .slice(from)
      .reverse(),
    (directory) => root.removeEmptyDirectory(directory),
    { discard: true },
  ).pipe(Effect.ignore);

/** Whether a working copy at `copy` and a file store at `store` overlap (either inside the other). */
export const overlapsStore = (copy: string, store: string): boolean =>
  isAtOrBelow(store, copy) || isAtOrBelow(copy, store);

/** INVALID_REQUEST/PATH_OVERLAPS_STATE for a working copy overlapping the file store. */
export const storeOverlapError = (): DomainError =>
  invalidPath(
    "PATH_OVERLAPS_STATE",
    "The path overlaps the file store's directory (--store); choose a working copy outside it.",
  );

/** The canonical form of a directory that may not exist yet (itself when missing). */
const canonicalOrAsIs = (
  fs: FileSystemService,
  path: string,
  what: string,
): Effect.Effect<string, DomainError> =>
  fs
    .realPath(path)
    .pipe(
      Effect.catchTag("FsError", (error) =>
        error.reason === "NotFound"
          ? Effect.succeed(resolve(path))
          : Effect.fail(localFailure(error, `resolving ${what}`)),
      ),
    );

/**
 * Refuses a working copy that overlaps the private root or the file store's directory
 * (either inside the other): its notes would be private state or store objects, and a
 * rewrite could overwrite them (SPEC §4.1).
 */
const refuseOverlaps = (
  fs: FileSystemService,
  settings: PathSettings,
  canonical: string,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const privateRoot = yield* canonicalOrAsIs(fs, settings.privateRoot, "the private root");
    if (isAtOrBelow(privateRoot, canonical) || isAtOrBelow(canonical, privateRoot))
      return yield* Effect.fail(
        invalidPath(
          "PATH_OVERLAPS_STATE",
          "The path overlaps the server's private state (--private-root); choose a working copy outside it.",
        ),
      );
    if (settings.storeDirectory === undefined) return;
    const store = yield* canonicalOrAsIs(fs, settings.storeDirectory, "the file store");
    if (overlapsStore(canonical, store)) return yield* Effect.fail(storeOverlapError());
  });
