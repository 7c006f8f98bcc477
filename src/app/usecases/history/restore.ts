/**
 * `quire restore` and `quire revert` (SPEC §11): bringing back files as they were at a
 * generation, or undoing one publication, in the working copy — never published by
 * these calls: the next commit publishes the result like any edit. Both write through
 * the rewrite's guard (workingCopy/rewrite.ts), so a file saved meanwhile is merged or
 * held, never overwritten.
 */
import { Effect, Option } from "effect";
import { conflictMessage } from "../../../domain/conflictMessage.js";
import type { LocalChange } from "../../../domain/copyStatus.js";
import {
  domainError,
  isReasonOf,
  withNote,
  type ChangedFile,
  type DomainError,
  type FileIssue,
} from "../../../domain/errors.js";
import { atOrBelowOneOf, type RestoredFiles } from "../../../domain/history.js";
import { compareCodeUnits, findCaseCollisions } from "../../../domain/paths.js";
import { fileDirectoryClashes, idsOf, type Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { runMerge } from "../pull/mergeRun.js";
import { filesWithBlocks } from "../shared/markerBlocks.js";
import { withoutHeld } from "../../../domain/treeDiff.js";
import { materialise } from "../workingCopy/rewrite.js";
import { readManifest } from "../commit/remote.js";
import type { CopyState } from "../workingCopy/privateState.js";
import { loadIntent, publicationLanded } from "../workingCopy/rewriteIntent.js";
import { notebookStateAt, publicationStates } from "./generations.js";
import { unpublished } from "./status.js";

/**
 * What stands in the copy where a note could not be written, sorted by path: what the
 * scan refused, and the editors' files it skipped (an emacs lock, a symlink, at a name
 * the call writes). The copy's view leaves both out, so a write at one could only be
 * held, as if someone had saved it during the call.
 */
const inTheWay = (
  issues: ReadonlyArray<FileIssue>,
  skipped: ReadonlyArray<FileIssue>,
): ReadonlyArray<FileIssue> =>
  [...issues, ...skipped].sort((a, b) => compareCodeUnits(a.path, b.path));

const changeOf = (path: string, from: Tree, to: Tree): "added" | "modified" | "deleted" =>
  !from.has(path) ? "added" : !to.has(path) ? "deleted" : "modified";

/** The first 20 of `paths` for a message, and how many more there are. */
const someOf = (paths: ReadonlyArray<string>): string =>
  paths.length <= 20
    ? paths.join(", ")
    : `${paths.slice(0, 20).join(", ")}, … (${(paths.length - 20).toLocaleString("en-US")} more)`;

/**
 * Writes `target` over the copy for `changed` paths; what was written and what held. A
 * failure part way (a full disk) names what was already written (stoppedPartWay).
 */
const write = (
  call: CopyCall,
  scan: Parameters<typeof materialise>[1],
  local: Tree,
  target: Tree,
  changed: ReadonlyArray<string>,
  generation: number,
): Effect.Effect<RestoredFiles, DomainError> =>
  Effect.suspend(() => {
    const written: string[] = [];
    // A file saved during the call merges again as text: see MergeRules.
    return materialise(call.tree, scan, target, changed, call.blobs, "text", (path) =>
      written.push(path),
    ).pipe(
      Effect.map(({ held }) => ({
        generation,
        files: changed
          .filter((path) => !held.includes(path))
          .map((path) => ({ path, change: changeOf(path, local, target) })),
        held,
      })),
      Effect.mapError((failure) =>
        written.length === 0
          ? failure
          : stoppedPartWay(
              failure,
              [...written]
                .sort(compareCodeUnits)
                .map((path) => ({ path, change: changeOf(path, local, target) })),
            ),
      ),
    );
  });

/**
 * `failure` of a restore or revert that had already changed `written`: they are named
 * (in the message, and as `changed` on an ENGINE_FAILED), since "a local file operation
 * failed" alone reads as "nothing was changed". Running the same command again once the
 * cause is fixed finishes it: the files already written read as restored (a revert's
 * conflict blocks among them must be resolved first, or it refuses them as unresolved).
 */
const stoppedPartWay = (failure: DomainError, written: ReadonlyArray<ChangedFile>): DomainError => {
  const paths = written.map((file) => file.path);
  const note = `It stopped part way: ${someOf(paths)} ${paths.length === 1 ? "was" : "were"} already written, the other files are as they were; fix the cause, then run the same command again to finish (after resolving any conflict blocks a revert wrote into them: until then it refuses those files).`;
  if (failure.code !== "ENGINE_FAILED" || !isReasonOf("ENGINE_FAILED", failure.reason))
    return withNote(failure, note);
  return domainError({
    code: "ENGINE_FAILED",
    reason: failure.reason,
    message: `${failure.message}${/[.!?]$/.test(failure.message) ? "" : "."} ${note}`,
    files: failure.files,
    ...(failure.detail === undefined ? {} : { detail: failure.detail }),
    ...(failure.hostCause === undefined ? {} : { hostCause: failure.hostCause }),
    changed: { files: written, held: [] },
  });
};

/** Fails INVALID_CONTENT/INVALID_FILES with `files` and `message`; succeeds when there are none. */
const refuseFiles = (
  message: string,
  files: ReadonlyArray<FileIssue>,
): Effect.Effect<void, DomainError> =>
  files.length === 0
    ? Effect.void
    : Effect.fail(
        domainError({ code: "INVALID_CONTENT", reason: "INVALID_FILES", message, files }),
      );

/**
 * INVALID_CONTENT/INVALID_FILES when a path the call would write holds something the
 * scan refused (a symlink, a FIFO, a file that is not notebook text, a set-aside file)
 * or skipped (an editor's file that is a symlink or not notebook text: `inTheWay`):
 * the write could only be held there, and "held" would read as a save made during the
 * call, which nobody made, however often it is run again. Nothing is written then.
 */
const refuseRefused = (
  issues: ReadonlyArray<FileIssue>,
  written: ReadonlyArray<string>,
): Effect.Effect<void, DomainError> => {
  // Each written path and its directories looked up among the refused paths, and each
  // refused path's directories among the written ones (a symlink inside a folder that
  // stands where a note is written): linear in both, not written × refused.
  const refused = new Set(issues.map((issue) => issue.path));
  const writing = new Set(written);
  const hit = new Set<string>();
  for (const path of written)
    for (let end = path.length; end > 0; end = path.lastIndexOf("/", end - 1)) {
      const prefix = path.slice(0, end);
      if (refused.has(prefix)) hit.add(prefix);
    }
  for (const path of refused)
    for (let end = path.lastIndexOf("/"); end > 0; end = path.lastIndexOf("/", end - 1))
      if (writing.has(path.slice(0, end))) hit.add(path);
  const blocked = issues.filter((issue) => hit.has(issue.path));
  return refuseFiles(
    "The working copy holds files here that a commit cannot take (listed, each with why: a symlink, a FIFO, not UTF-8 text…), so nothing was written over them; fix, rename or remove them, then run this again.",
    blocked,
  );
};

/**
 * INVALID_CONTENT/INVALID_FILES (each path CASE_COLLISION) when a file the call would
 * bring back equals, under case folding, another file the copy keeps (`x.md` restored,
 * or its deletion reverted, while `X.md` is there): on a case-insensitive disk one
 * would overwrite the other, and the next commit would be refused for it anyway.
 * Nothing is written then.
 */
const refuseCaseCollisions = (
  target: Tree,
  added: ReadonlyArray<string>,
): Effect.Effect<void, DomainError> => {
  if (added.length === 0) return Effect.void;
  const brought = new Set(added);
  const groups = findCaseCollisions(target.keys()).filter((group) =>
    group.some((path) => brought.has(path)),
  );
  return refuseFiles(
    "This would bring back files whose names equal other files' in the working copy except for case (listed), so nothing was written; rename or remove the ones in the working copy, then run this again.",
    groups.flat().map((path) => ({ path, reason: "CASE_COLLISION", ranges: [] })),
  );
};

/**
 * INVALID_CONTENT/INVALID_FILES (each path FILE_DIRECTORY_CLASH) when a file the call
 * would bring back needs a directory where the copy keeps a file (`a/b.md` restored
 * while `a` is a file), or stands where the copy keeps a directory of files: both could
 * not be written, and one would only be held as if saved during the call. Nothing is
 * written then.
 */
const refuseFileDirectoryClashes = (
  target: Tree,
  added: ReadonlyArray<string>,
): Effect.Effect<void, DomainError> =>
  refuseFiles(
    "This would bring back files where the working copy has a file of a directory's name, or a directory of a file's name (listed), so nothing was written; rename or remove the ones in the working copy, then run this again.",
    [...new Set(fileDirectoryClashes(target, added).flat())]
      .sort(compareCodeUnits)
      .map((path) => ({ path, reason: "FILE_DIRECTORY_CLASH", ranges: [] })),
  );

/**
 * Refuses what the call cannot write over or beside (the three refusals above).
 * `concerned`: the paths the call is about besides those it changes (a restore's FILEs,
 * the paths the reverted publication changed): a symlink or FIFO there is refused too,
 * though the copy's view, which leaves it out, already looks as asked — answering
 * "nothing to change" over it would be an OK for something never done.
 */
const refuseUnwritable = (
  issues: ReadonlyArray<FileIssue>,
  target: Tree,
  local: Tree,
  changed: ReadonlyArray<string>,
  concerned: ReadonlyArray<string>,
): Effect.Effect<void, DomainError> => {
  const added = changed.filter((path) => !local.has(path));
  return refuseRefused(issues, [...new Set([...changed, ...concerned])]).pipe(
    Effect.zipRight(refuseCaseCollisions(target, added)),
    Effect.zipRight(refuseFileDirectoryClashes(target, added)),
  );
};

/**
 * INVALID_REQUEST/INVALID_ARGUMENT, naming them, when some of the FILEs a restore names
 * is none of `present` (the paths at the generation or in the copy, what the scan
 * refused or skipped there, the copy's unpublished deletions) nor a directory of one: a
 * misspelt name, which answering OK for the others would hide. Nothing is written then.
 */
const refuseUnknownFiles = (
  files: ReadonlyArray<string>,
  present: ReadonlyArray<string>,
  generation: number,
): Effect.Effect<void, DomainError> => {
  // Every present path and each of its directories: a FILE is known when it is one.
  const known = new Set<string>();
  for (const path of present)
    for (let end = path.length; end > 0; end = path.lastIndexOf("/", end - 1)) {
      const prefix = path.slice(0, end);
      if (known.has(prefix)) break;
      known.add(prefix);
    }
  const unknown = [...new Set(files)].filter((file) => !known.has(file));
  return unknown.length === 0
    ? Effect.void
    : Effect.fail(
        domainError({
          code: "INVALID_REQUEST",
          reason: "INVALID_ARGUMENT",
          message: `These files exist neither at generation ${generation} nor in the working copy: ${someOf(unknown)}. Nothing was written; check their names (relative to the working copy's top, as quire status and quire log list them).`,
        }),
      );
};

/**
 * INVALID_REQUEST/UNPUBLISHED_CHANGES, each file listed as UNPUBLISHED_CHANGE, when
 * restoring the copy's `local` files to `target` would replace an unpublished change and
 * `force` is not set. Not such a change: a file deleted and not yet published (writing it back
 * replaces no text — its last content is the accepted one — and getting a deleted note
 * back is what a restore is most often for), nor an edit that already reads as the
 * restored text (so that a restore run twice in a row changes nothing the second time
 * instead of being refused). Nothing is written then.
 */
const refuseReplacingEdits = (
  changes: ReadonlyArray<LocalChange>,
  local: Tree,
  target: Tree,
  force: boolean,
): Effect.Effect<void, DomainError> => {
  if (force) return Effect.void;
  // Only the restored paths differ between the two.
  const replaced = changes
    .filter((c) => c.change !== "deleted" && local.get(c.path) !== target.get(c.path))
    .map((c) => c.path);
  return replaced.length === 0
    ? Effect.void
    : Effect.fail(
        domainError({
          code: "INVALID_REQUEST",
          reason: "UNPUBLISHED_CHANGES",
          message: `These files have unpublished changes that restoring would replace: ${someOf(replaced)}. Commit them first, or repeat with --force. Nothing was written.`,
          files: replaced.map((path) => ({ path, reason: "UNPUBLISHED_CHANGE", ranges: [] })),
        }),
      );
};

/** The copy's `local` with `paths` as they were in `after`: removed where `after` has none. */
const restoredTree = (local: Tree, after: Tree, paths: ReadonlyArray<string>): Tree => {
  const target = new Map(local);
  for (const path of paths) {
    const id = after.get(path);
    if (id === undefined) target.delete(path);
    else target.set(path, id);
  }
  return target;
};

/**
 * Writes `files` (notebook paths, or directories of them) as they were at `generation`
 * into the copy: recreated if deleted since, removed if they did not exist then.
 * INVALID_REQUEST/UNPUBLISHED_CHANGES when that would replace unpublished changes
 * (refuseReplacingEdits) and `force` is not set (nothing is written then); INVALID_ARGUMENT when none of them
 * exists at `generation` or in the copy; PULL_NEEDED when a merge still to come would undo
 * it (refusePendingMerge); GENERATION_PRUNED when its content is gone;
 * INVALID_CONTENT when one of them is held by something the scan refuses (refuseRefused),
 * would collide under case folding with a file the copy keeps (refuseCaseCollisions), or
 * clashes with a kept file as file and directory (refuseFileDirectoryClashes).
 */
export const restoreFiles = (
  call: CopyCall,
  generation: number,
  files: ReadonlyArray<string>,
  force: boolean,
): Effect.Effect<RestoredFiles, DomainError> =>
  Effect.gen(function* () {
    const { state, scan, local, changes, issues, skipped } = yield* unpublished(call);
    const refused = inTheWay(issues, skipped);
    const after = yield* notebookStateAt(call, generation, state);
    const named = atOrBelowOneOf(files);
    const paths = [...new Set([...after.keys(), ...local.keys()])]
      .filter(named)
      .sort(compareCodeUnits);
    // What the scan refused or skipped there (a symlink, a FIFO): not in the copy's
    // view, but there — a FILE naming one is known.
    const refusedHere = refused.map((issue) => issue.path).filter(named);
    // A file the copy deleted and has not published is in the notebook the copy last
    // saw, not a misspelt name: a restore that stopped part way (LOCAL_IO) and removed
    // it, as not there at GEN, must finish when run again, as its error says.
    const deletedHere = changes
      .filter((change) => change.change === "deleted")
      .map((change) => change.path)
      .filter(named);
    yield* refuseUnknownFiles(files, [...paths, ...refusedHere, ...deletedHere], generation);
    const target = restoredTree(local, after, paths);
    // A held file restored to the notebook's own version merges to it: nothing undone.
    const baseline = idsOf(state.baseline);
    yield* refusePendingMerge(
      call,
      state,
      [...state.held.keys()].filter(
        (path) => named(path) && target.get(path) !== baseline.get(path),
      ),
      "restore",
    );
    yield* refuseReplacingEdits(changes, local, target, force);
    const changed = paths.filter((path) => local.get(path) !== target.get(path));
    // A refused file in a named directory stops the restore (a commit would refuse it
    // too); an editor's skipped file there (a `.DS_Store`, a vim swap file) only where
    // the restore would write: a commit takes such a folder as it is.
    const blocking = issues.map((issue) => issue.path).filter(named);
    yield* refuseUnwritable(refused, target, local, changed, blocking);
    const written = yield* write(call, scan, local, target, changed, generation);
    // A file the copy deleted that GEN did not have stays deleted: said, not a bare
    // "restored already", which reads as if the file were back.
    const absentThen = deletedHere.filter((path) => !after.has(path) && !local.has(path));
    return absentThen.length === 0 ? written : { ...written, absentThen };
  });

/**
 * Applies the inverse of the publication at `generation` to the copy as a three-way
 * merge (base: the notebook just after it; theirs: just before it; ours: the copy), so
 * that later changes to the same files are kept. Conflicts are written as a pull writes
 * them (marker blocks, files moved aside) and answered CONTENT_CONFLICT/MERGE_CONFLICT
 * with the conflicts as `files` and every file written as `changed` (the clean changes
 * are written too); PULL_NEEDED when the copy has not pulled `generation` yet or a merge
 * still to come would undo it; GENERATION_PRUNED when its content is gone; INVALID_CONTENT as for restoreFiles
 * (a file it brings back clashing by case with a kept one included).
 */
export const revertPublication = (
  call: CopyCall,
  generation: number,
): Effect.Effect<RestoredFiles, DomainError> =>
  Effect.gen(function* () {
    const { state, scan, local, issues, skipped } = yield* unpublished(call);
    const { before, after } = yield* publicationStates(call, generation, state);
    yield* refuseNotPulledYet(state.generation, generation);
    const touched = [...new Set([...before.keys(), ...after.keys()])].filter(
      (path) => before.get(path) !== after.get(path),
    );
    yield* refuseUnresolvedMarkers(call, local, touched, generation);
    yield* refusePendingMerge(
      call,
      state,
      touched.filter((path) => state.held.has(path)),
      "revert",
    );
    // Only the paths the publication changed differ between base and theirs.
    const base = new Map(local);
    const theirs = new Map(local);
    for (const path of touched) {
      const [was, is] = [before.get(path), after.get(path)];
      if (is === undefined) base.delete(path);
      else base.set(path, is);
      if (was === undefined) theirs.delete(path);
      else theirs.set(path, was);
    }
    // As text, whatever the attributes say: see MergeRules (domain/attributes.ts).
    const { merged, conflicts } = yield* runMerge(base, local, theirs, call.blobs, "text");
    const changed = [...new Set([...merged.keys(), ...local.keys()])]
      .filter((path) => merged.get(path) !== local.get(path))
      .sort(compareCodeUnits);
    yield* refuseUnwritable(inTheWay(issues, skipped), merged, local, changed, touched);
    const written = yield* write(call, scan, local, merged, changed, generation);
    // A conflicted file someone saved during the call was left as saved (held): it holds
    // no blocks to resolve, and `held` names it.
    const unresolved = withoutHeld(conflicts, written.held);
    if (unresolved.length > 0)
      return yield* Effect.fail(revertConflict(generation, unresolved, written));
    return written;
  });

/**
 * CONTENT_CONFLICT/UNRESOLVED_MARKERS (each file MARKER_BLOCK with its blocks) when a
 * file the revert would merge still holds complete conflict marker blocks: a conflict
 * there would be written inside the old blocks (nested, so the scanner sees only the
 * innermost and nobody can tell the sides apart), and even a clean merge would carry the
 * old blocks along to be refused by the commit. Commit refuses such files the same way;
 * nothing is written. Only the files the publication changed are read.
 */
const refuseUnresolvedMarkers = (
  call: CopyCall,
  local: Tree,
  touched: ReadonlyArray<string>,
  generation: number,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const found = yield* filesWithBlocks(call.blobs, local, touched);
    if (found.length === 0) return;
    return yield* Effect.fail(
      domainError({
        code: "CONTENT_CONFLICT",
        reason: "UNRESOLVED_MARKERS",
        message: `These files still hold conflict marker blocks, and undoing generation ${generation} would merge into them; nothing was written. Resolve the blocks at the listed lines first, then run the revert again.`,
        files: found,
      }),
    );
  });

/**
 * INVALID_REQUEST/PULL_NEEDED (as {@link refuseNotPulledYet}) when the
 * copy still has a merge to make that would undo what the call writes, and nothing is
 * written: `held` files it would change (left as they were by an earlier call — saved
 * during it, or still holding conflict blocks the notebook changed again: the next pull
 * or commit merges them against their older base, which brings the notebook's change
 * back over a restored text, and a revert merged against them finds nothing of the
 * change to undo), or a stopped pull or commit that the next call recovers (`status`'s
 * `recoveryPending`: the rewrite rolled forward, or the landed publication settled, over
 * a file restored to the old text). Reads `current` only when a commit's intent is there.
 */
const refusePendingMerge = (
  call: CopyCall,
  state: CopyState,
  held: ReadonlyArray<string>,
  what: "restore" | "revert",
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const intent = yield* loadIntent(call, state);
    const landed =
      Option.isSome(intent) &&
      intent.value.publication !== null &&
      publicationLanded(intent, (yield* readManifest(call.store)).manifest);
    const some = held.slice(0, 5).join(", ") + (held.length > 5 ? ", …" : "");
    const pending =
      state.recoveryRequired || landed
        ? "an earlier pull or commit of this working copy stopped part way and is not settled yet"
        : held.length > 0
          ? `${held.length === 1 ? "a file" : `${held.length} files`} it would change (${some}) ${held.length === 1 ? "is" : "are"} held: left as ${held.length === 1 ? "it was" : "they were"} by an earlier call (saved during it, or holding conflict blocks the notebook changed again) and not merged with the notebook yet`
          : undefined;
    if (pending === undefined) return;
    return yield* Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "PULL_NEEDED",
        message: `Nothing was written: ${pending}, and that merge would undo the ${what}. Call quire pull first (it merges a file saved during a call; conflict blocks must be resolved by hand), then ${what} again${what === "restore" ? " — or restore such a file to the notebook's current version, which nothing undoes" : ""}.`,
      }),
    );
  });

/**
 * INVALID_REQUEST/PULL_NEEDED when the copy has not pulled `generation` yet: its
 * files do not hold that publication's changes, so undoing them would find nothing to
 * undo and answer "undone already" while the notebook still has them.
 */
const refuseNotPulledYet = (
  copyGeneration: number,
  generation: number,
): Effect.Effect<void, DomainError> =>
  generation <= copyGeneration
    ? Effect.void
    : Effect.fail(
        domainError({
          code: "INVALID_REQUEST",
          reason: "PULL_NEEDED",
          message: `This working copy is at generation ${copyGeneration} and has not pulled generation ${generation} yet, so there is nothing of it here to undo; call quire pull first, then revert it.`,
        }),
      );

/**
 * The conflict of a revert, with `changed` and `held`: its clean changes were written
 * too, and an answer listing only the conflicted files would hide them.
 */
const revertConflict = (
  generation: number,
  conflicts: ReadonlyArray<FileIssue>,
  written: RestoredFiles,
): DomainError =>
  domainError({
    code: "CONTENT_CONFLICT",
    reason: "MERGE_CONFLICT",
    message: conflictMessage({ _tag: "Revert", generation }, conflicts),
    files: conflicts,
    changed: { files: written.files, held: written.held },
  });
