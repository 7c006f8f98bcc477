/**
 * What a killed process of ours leaves in a working copy, and how a scan tidies it
 * (ports/FileSystem.ts): temp files of atomic writes never renamed, and files a guarded
 * replace or remove set aside (`.<name>.quire-<id>.aside`) and never unlinked or put back.
 * A scan runs under the copy's lock, so no write of ours is in flight when it looks.
 */
import { Effect } from "effect";
import { contentId, maxFileBytes } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import {
  leftoverTempName,
  setAsideName,
  type Expectation,
  type FsError,
  type RootedTree,
  type WalkEntry,
} from "../../../ports/FileSystem.js";
import { localFailure } from "../shared/failures.js";
import { putBeside } from "./putBeside.js";

/**
 * Whether quire holds content `id` (domain/content.ts) as a version of the note at `path`
 * itself, where it cannot be lost: the copy's baseline and merge base (in its cached
 * packs and the notebook), and what the scan of an interrupted rewrite or commit read
 * there (its intent's O, in a durable cached pack: rewriteIntent.ts). Decided only when
 * a set-aside file is found beside a file of its name, which is rare: the effect may read
 * private state.
 */
export type OwnVersions = Effect.Effect<(path: string, id: string) => boolean>;

/** For a scan that knows no version of any note (a copy never pulled, a test). */
export const noOwnVersions: OwnVersions = Effect.succeed(() => false);

/**
 * Every name of our own making contains this: a cheap test before the patterns, since
 * a scan of 10,000 notes otherwise spends more on them than on anything but `lstat`.
 */
const ours = ".quire-";

const nameOf = (path: string): string => path.slice(path.lastIndexOf("/") + 1);

/**
 * The path a file set aside by a guarded replace or remove of ours had, when its name
 * tells it (`.aside`; a `.cut` name keeps only part of it); `undefined` for any other.
 */
export const setAsideOriginal = (path: string): string | undefined => {
  if (!path.includes(ours)) return undefined;
  const match = setAsideName.exec(nameOf(path));
  if (match === null || match[2] !== "aside" || match[1] === undefined) return undefined;
  const at = path.lastIndexOf("/");
  return at < 0 ? match[1] : `${path.slice(0, at)}/${match[1]}`;
};

/** Whether `path` names a temp file of an atomic write of ours (ports/FileSystem.ts). */
export const isLeftoverTemp = (path: string): boolean =>
  path.includes(ours) && leftoverTempName.test(nameOf(path));

/** Whether `path` is (or lies below) a set-aside entry of ours that could not be put back. */
export const belowSetAside = (path: string): boolean =>
  path.includes(ours) && path.split("/").some((segment) => setAsideName.test(segment));

/** Whether `path` names a set-aside entry itself (not something below one). */
export const isSetAside = (path: string): boolean =>
  path.includes(ours) && setAsideName.test(nameOf(path));

/**
 * Tidies what a replace of ours set aside when its process was killed in the middle:
 * - a set-aside file whose name is free again goes back under it;
 * - one beside a file of its name (killed after linking the new version, before
 *   unlinking the old) is removed when it holds a version quire keeps of that note
 *   (`own`): it is then the old version of a replace that finished, and took no write
 *   since. The removal is guarded: a write reaching it meanwhile is put beside the note
 *   (`<name>.displaced`), never dropped.
 * Any other stays where it is, for the scan to report (INVALID_NAME) and the person to
 * look at: it may have taken a write, or be a file of theirs named like one, and quire
 * never deletes what it cannot prove it holds. `true` when anything was put back or
 * removed (the walk must be redone). LOCAL_IO when the file system fails.
 */
export const tidySetAside = (
  tree: RootedTree,
  entries: ReadonlyArray<WalkEntry>,
  own: OwnVersions,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    let present: Set<string> | undefined;
    let isOwn: ((path: string, id: string) => boolean) | undefined;
    let tidied = false;
    for (const entry of entries) {
      const original = setAsideOriginal(entry.relativePath);
      if (original === undefined) continue;
      if (entry.kind !== "file" && entry.kind !== "directory") continue;
      present ??= new Set(entries.map((e) => e.relativePath));
      if (!present.has(original)) {
        const back = yield* tree
          .restoreName(entry.relativePath, original)
          .pipe(Effect.mapError((e) => localFailure(e, "restoring a file set aside")));
        if (!back) continue;
        tidied = true;
        present.add(original);
        yield* Effect.logWarning("put back a file an interrupted rewrite had set aside").pipe(
          Effect.annotateLogs("file", original),
        );
        continue;
      }
      if (entry.kind !== "file") continue;
      isOwn ??= yield* own;
      if (yield* dropOwnVersion(tree, entry.relativePath, original, isOwn)) tidied = true;
    }
    return tidied;
  });

/**
 * Removes the set-aside file at `path` (beside `original`) if it holds a version of
 * `original` that `isOwn` names, and only while it does; what a write put in it meanwhile
 * goes beside the note. `true` when it was removed.
 */
const dropOwnVersion = (
  tree: RootedTree,
  path: string,
  original: string,
  isOwn: (path: string, id: string) => boolean,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    const io = (doing: string) => Effect.mapError((e: FsError) => localFailure(e, doing));
    // Unreadable or too large for a note: not a version of one; the scan reports it.
    const read = yield* Effect.option(tree.readFile(path, maxFileBytes));
    if (read._tag === "None") return false;
    const id = contentId(read.value.bytes);
    if (!isOwn(original, id)) return false;
    const { info } = read.value;
    const expected: Expectation = {
      _tag: "File",
      ino: info.ino,
      size: info.size,
      mtimeMs: info.mtimeMs,
      sameContent: (bytes) => contentId(bytes) === id,
    };
    const outcome = yield* tree
      .removeFile(path, expected)
      .pipe(io("removing the old version of a note set aside"));
    switch (outcome._tag) {
      case "Changed":
        return false;
      case "Done":
        break;
      case "Overtaken":
        yield* putBeside(tree, original, outcome.bytes);
        break;
      case "Displaced":
        // A newcomer took the set-aside name (left for the scan to report); what the
        // set-aside file held goes beside the note unless it was the version quire holds.
        if (contentId(outcome.bytes) !== id) yield* putBeside(tree, original, outcome.bytes);
        break;
    }
    yield* Effect.logWarning(
      "removed the old version of a note an interrupted rewrite had set aside beside it",
    ).pipe(Effect.annotateLogs("file", original));
    return true;
  });
