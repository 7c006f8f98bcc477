/**
 * What a killed process of ours leaves in a working copy, and how a scan tidies it
 * (ports/FileSystem.ts): temp files of atomic writes never renamed, and files a guarded
 * replace or remove set aside (`.<name>.quire-<id>.aside`) and never unlinked or put back.
 * A scan runs under the copy's lock, so no write of ours is in flight when it looks.
 */
import { Effect, Option } from "effect";
import { contentId, decodeText, maxFileBytes } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import { splitLines } from "../../../domain/lines.js";
import { nameOf } from "../../../domain/paths.js";
import {
  leftoverTempName,
  setAsideName,
  type Expectation,
  type RootedTree,
  type WalkEntry,
} from "../../../ports/FileSystem.js";
import { localFailure } from "../shared/failures.js";
import { putBeside } from "./putBeside.js";

/**
 * What quire knows of the versions of a copy's notes, for a set-aside file found beside
 * a file of its name (rare: the effect resolving it may read private state).
 */
export interface KeptVersions {
  /**
   * Whether quire keeps content `id` (domain/content.ts) as a version of the note at
   * `path`: the copy's baseline or merge base, or what the scan of a rewrite or commit
   * still in flight read there (its intent's O, in a durable cached pack).
   */
  readonly keeps: (path: string, id: string) => boolean;
  /**
   * The bytes a rewrite or commit still in flight was writing at `path` (its intent's
   * T); `None` when none names it, or it was removing the note, or they cannot be read.
   */
  readonly writing: (path: string) => Effect.Effect<Option.Option<Uint8Array>>;
}

/** {@link KeptVersions} of a copy, resolved only when a scan needs them. */
export type OwnVersions = Effect.Effect<KeptVersions>;

/** For a scan that knows no version of any note (a copy never pulled, a test). */
export const noOwnVersions: OwnVersions = Effect.succeed({
  keeps: () => false,
  writing: () => Effect.succeed(Option.none()),
});

/**
 * Every name of our own making contains this: a cheap test before the patterns, since
 * a scan of 10,000 notes otherwise spends more on them than on anything but `lstat`.
 */
const ours = ".quire-";

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
 * - one beside a file of its name is removed when it holds a version quire keeps of that
 *   note (`own`) and the file at the name still holds all of it, or all of what the
 *   interrupted rewrite was writing there (line by line, in order: later lines may have
 *   been added anywhere). It is then the old version of a replace that finished (killed
 *   after linking the new file, before unlinking the old), and nothing of it is lost. A
 *   file at the name that holds neither may be a newcomer made after a kill that came
 *   before the link (`>>` creates the file it appends to), and the set-aside file the
 *   only copy of the person's edit. The removal is guarded: a write reaching the file
 *   meanwhile is put back under its set-aside name (or beside the note), never dropped.
 * Any other stays where it is, for the scan to report (INVALID_NAME) and the person to
 * look at: quire never deletes what it cannot prove is kept elsewhere. Answers what it
 * did ({@link Tidied}). LOCAL_IO when putting a file back fails (a removal that fails
 * leaves the file to be reported).
 */
export const tidySetAside = (
  tree: RootedTree,
  entries: ReadonlyArray<WalkEntry>,
  own: OwnVersions,
): Effect.Effect<Tidied, DomainError> =>
  Effect.gen(function* () {
    let present: Set<string> | undefined;
    let kept: KeptVersions | undefined;
    let tidied = false;
    let removed = false;
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
      kept ??= yield* own;
      if (yield* dropOwnVersion(tree, entry.relativePath, original, kept)) {
        tidied = true;
        removed = true;
      }
    }
    return { walkAgain: tidied, removed };
  });

/** What {@link tidySetAside} did. */
export interface Tidied {
  /** Something was put back or removed: the walk must be redone. */
  readonly walkAgain: boolean;
  /** A set-aside file was removed: its late writes are to be kept ({@link keepLateWrites}). */
  readonly removed: boolean;
}

/**
 * Keeps what reached set-aside files {@link tidySetAside} removed after their removal
 * (a process that had one open, writing a little late: ports/FileSystem.ts
 * `lateWrites`): back under the set-aside name, for the next scan to report, or beside
 * the note. Asked at the end of the scan that removed them; the tree is the call's own,
 * so no other replace of ours is watched yet. Never fails (a failure to check is logged:
 * the files were checked when removed).
 */
export const keepLateWrites = (tree: RootedTree): Effect.Effect<void> =>
  tree.lateWrites().pipe(
    Effect.flatMap((late) =>
      Effect.forEach(late, ({ path, bytes }) =>
        keepLateBytes(tree, path, setAsideOriginal(path) ?? path, bytes),
      ),
    ),
    Effect.catchAll((error) =>
      Effect.logWarning("could not check set-aside files removed for late writes").pipe(
        Effect.annotateLogs("error", error.message),
      ),
    ),
    Effect.asVoid,
  );

/**
 * Removes the set-aside file at `path` (beside `original`) when `kept` proves nothing of
 * it would be lost ({@link tidySetAside}), and only while it is what was read. `true`
 * when it was removed.
 */
const dropOwnVersion = (
  tree: RootedTree,
  path: string,
  original: string,
  kept: KeptVersions,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    // Unreadable or too large for a note: not a version of one; the scan reports it.
    const read = yield* Effect.option(tree.readFile(path, maxFileBytes));
    if (read._tag === "None") return false;
    const id = contentId(read.value.bytes);
    if (!kept.keeps(original, id)) return false;
    const now = yield* Effect.option(tree.readFile(original, maxFileBytes));
    if (now._tag === "None") return false;
    const holds = (bytes: Uint8Array) => containsLines(now.value.bytes, bytes);
    if (!holds(read.value.bytes)) {
      const writing = yield* kept.writing(original);
      if (Option.isNone(writing) || !holds(writing.value)) return false;
    }
    const { info } = read.value;
    const expected: Expectation = {
      _tag: "File",
      ino: info.ino,
      size: info.size,
      mtimeMs: info.mtimeMs,
      sameContent: (bytes) => contentId(bytes) === id,
    };
    const removal = yield* Effect.either(tree.removeFile(path, expected));
    if (removal._tag === "Left") {
      // Left where it is, for the scan to report (a read-only copy, say): a call that
      // only looks, such as `status`, must not fail on it.
      yield* Effect.logWarning("could not remove the old version of a note set aside").pipe(
        Effect.annotateLogs({ file: original, error: removal.left.message }),
      );
      return false;
    }
    const outcome = removal.right;
    switch (outcome._tag) {
      case "Changed":
        return false;
      case "Done":
        break;
      case "Overtaken":
        // A write reached it as it went: back under its name, for the scan to report.
        yield* keepLateBytes(tree, path, original, outcome.bytes);
        break;
      case "Displaced":
        // A newcomer took the set-aside name (left for the scan to report); what the
        // set-aside file held goes beside the note unless it was the version read.
        if (contentId(outcome.bytes) !== id)
          yield* keepLateBytes(tree, path, original, outcome.bytes);
        break;
    }
    yield* Effect.logWarning(
      "removed the old version of a note an interrupted rewrite had set aside beside it",
    ).pipe(Effect.annotateLogs("file", original));
    return true;
  });

/**
 * Puts bytes written into a set-aside file as it was removed back under its name, or
 * beside the note when that name was taken meanwhile.
 */
const keepLateBytes = (
  tree: RootedTree,
  path: string,
  original: string,
  bytes: Uint8Array,
): Effect.Effect<void> =>
  tree.replaceFile(path, bytes, { _tag: "Absent" }, 0o644).pipe(
    Effect.map((outcome) => outcome._tag === "Done"),
    Effect.orElseSucceed(() => false),
    Effect.flatMap((back) => (back ? Effect.void : putBeside(tree, original, bytes))),
  );

/**
 * Whether every line of `part` occurs in `whole`, in the same order (other lines may lie
 * between them), each with its terminator: then nothing of `part` is missing from
 * `whole`. Text only; linear.
 */
const containsLines = (whole: Uint8Array, part: Uint8Array): boolean => {
  const wholeText = decodeText(whole);
  const partText = decodeText(part);
  if (!("text" in wholeText) || !("text" in partText)) return false;
  const lines = splitLines(wholeText.text);
  const wanted = splitLines(partText.text);
  let at = 0;
  for (const line of wanted) {
    while (at < lines.length && lines[at] !== line) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
};
