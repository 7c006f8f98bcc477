/**
 * The end of `serve`'s own session directory (SPEC §9: without `--workspace-root`,
 * serve creates `$TMPDIR/quire-<random>/notebook`). Every serve start makes a fresh
 * one, and a pulled notebook is a full copy of it, so keeping them all would fill the
 * temp directory; deleting one that holds the agent's unpublished notes would lose
 * them. A session copy is therefore removed only when everything in it is published.
 */
import { Effect, Either, Option } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import type { CopyCall } from "../shared/context.js";
import { localFailure } from "../shared/failures.js";
import { forgetState, loadStats } from "./privateState.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import { contentId, maxFileBytes } from "../../../domain/content.js";
import { loadFirstPull, recordFirstPull, type FirstPullRecord } from "./firstPull.js";
import type { BlobRef, CopyState } from "./privateState.js";
import { acceptedTreeOf, loadIntent, type Intent } from "./rewriteIntent.js";
import { commitLanded } from "./commitFate.js";
import { scanWorkingCopy, type Scan } from "./workingCopy.js";
import { isLeftoverTemp, setAsideOriginal } from "./leftovers.js";
import { deepestFirst, materialise } from "./rewrite.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import type { FsError } from "../../../ports/FileSystem.js";

/**
 * What a copy's files may hold for removing it to lose nothing: per path, the published
 * contents a file there may have (`allowed`), and the paths whose file must be there
 * (`required`: its absence would be a deletion not published).
 */
interface Published {
  readonly allowed: ReadonlyMap<string, ReadonlySet<string>>;
  readonly required: ReadonlyArray<string>;
  /** The tree the scan takes as tracked (editors' files at other paths are skipped). */
  readonly tracked: ReadonlyMap<string, BlobRef>;
}

const only = (tree: Tree): ReadonlyMap<string, ReadonlySet<string>> =>
  new Map([...tree].map(([path, id]) => [path, new Set([id])]));

const settledOn = (baseline: ReadonlyMap<string, BlobRef>): Published => ({
  allowed: only(idsOf(baseline)),
  required: [...baseline.keys()],
  tracked: baseline,
});

/**
 * What the copy's files may hold, from its private state: `None` when that cannot be
 * known (a file held back from a rewrite; a commit not settled whose fate the store
 * cannot tell; a rewrite intent that cannot be read) or when an interrupted rewrite was
 * moving content of the copy's own.
 * - A commit stopped after its intent (commitFate.ts), before its settling began (an
 *   interrupted settling is its next call's): not landed, exactly the baseline; landed,
 *   exactly what its scan read (its accepted state but at the files it would rewrite).
 * - Settled (or a pull's intent written but no file touched: `recoveryRequired` unset):
 *   exactly the baseline.
 * - A pull's rewrite interrupted (`recoveryRequired`, its intent on disk): each file
 *   either as the baseline had it (not rewritten yet) or as the accepted state it was
 *   settling on has it (rewritten); one both have may not be missing. Only if every
 *   content the rewrite replaced or moved was published too: a person's note a merge
 *   moves aside (`~local`) is written under its new name before its old one is removed:
 *   killed in between, the copy holds it twice, and neither is published.
 * - Never pulled: nothing, or, if a first pull was interrupted
 *   (firstPull.ts), files as the state it was writing has them, any of them missing.
 */
const publishedContents = (call: CopyCall): Effect.Effect<Option.Option<Published>> =>
  Effect.gen(function* () {
    if (Option.isNone(call.state)) {
      const given = yield* loadFirstPull(call);
      const allowed = Option.getOrElse(given, (): FirstPullRecord => new Map());
      return Option.some({ allowed, required: [], tracked: new Map() });
    }
    const state = call.state.value;
    // A file held back from a rewrite holds an edit the next call still has to merge.
    if (state.held.size > 0) return Option.none();
    // Unreadable: what the copy may hold cannot be known, so it is kept.
    const read = yield* Effect.either(loadIntent(call, state));
    if (Either.isLeft(read)) return Option.none();
    const intent = read.right;
    if (Option.isNone(intent)) {
      return state.recoveryRequired ? Option.none() : Option.some(settledOn(state.baseline));
    }
    if (intent.value.publication !== null) {
      // A commit's intent names a publication only the store can confirm; a rewrite
      // interrupted before it (the flag) is the commit's next call's to settle.
      if (state.recoveryRequired) return Option.none();
      const landed = yield* commitLanded(call, intent.value);
      if (Option.isNone(landed)) return Option.none();
      // Not landed, and never to: the baseline is all of the copy that is published.
      if (!landed.value) return Option.some(settledOn(state.baseline));
      // Landed, and its settling had not begun (the flag is set before its first
      // write): the copy must hold exactly what the commit scanned and published. A
      // file back at its baseline content since would be an undo nobody published.
      return Option.some(settledOn(scannedTree(state, intent.value)));
    }
    // A pull's intent, written before the flag: no file was touched yet.
    if (!state.recoveryRequired) return Option.some(settledOn(state.baseline));
    return eitherState(state, intent.value);
  });

/**
 * What a commit's scan read, from its intent: the accepted state it settles on, but at
 * each of its targets the content the copy had there (`before`; none: no file).
 */
const scannedTree = (state: CopyState, intent: Intent): ReadonlyMap<string, BlobRef> => {
  const scanned = new Map(acceptedTreeOf(intent, state.baseline));
  for (const [path, before] of intent.targets)
    if (before === null) scanned.delete(path);
    else scanned.set(path, before);
  return scanned;
};

/**
 * A copy moving from its baseline to the accepted state `intent` names: each file as
 * either has it, one both have not missing; `None` when a content the move replaced is
 * published in neither (see publishedContents).
 */
const eitherState = (state: CopyState, intent: Intent): Option.Option<Published> => {
  const accepted = acceptedTreeOf(intent, state.baseline);
  const allowed = new Map<string, Set<string>>();
  for (const tree of [state.baseline, accepted])
    for (const [path, ref] of tree) allowed.set(path, (allowed.get(path) ?? new Set()).add(ref.id));
  for (const [path, before] of intent.targets)
    if (before !== null && allowed.get(path)?.has(before.id) !== true) return Option.none();
  const required = [...state.baseline.keys()].filter((path) => accepted.has(path));
  return Option.some({ allowed, required, tracked: new Map([...state.baseline, ...accepted]) });
};

/** What {@link publishedOnly} found a copy holding only published notes to be made of. */
export interface Removal {
  /** Every note, as the scan judged it: removed only while it still is what it was. */
  readonly files: Scan;
  /** Temp files of quire's own killed writes. */
  readonly leftovers: ReadonlyArray<string>;
  readonly directories: ReadonlyArray<string>;
}

/**
 * Whether the working copy holds nothing but published notes, so that removing it and
 * its private state loses nothing: every file a note exactly as the notebook published
 * it (see publishedContents: the baseline; for a rewrite or a first pull that a killed
 * process left half done, the states it was moving between), no published note missing
 * that the copy had, and no other entry of any kind (an ignored `.git`, a symlink, a
 * directory nested too deep to name — ports/FileSystem.ts `nameablePathBytes` — all
 * count as something to keep). Temp files of a killed write of ours are not the copy's
 * content (the scan removes them); a file a killed replace set aside counts as its
 * original path's, and one holding published content beside a file of that name that
 * is published too is removed (the scan would otherwise refuse the copy). A copy that cannot be scanned
 * cleanly holds something to keep. Some: what removePublished removes (the scan's files
 * as they were judged, quire's own temp files, the directories); None: keep the copy.
 * Fails only when the directory cannot be listed.
 */
export const publishedOnly = (call: CopyCall): Effect.Effect<Option.Option<Removal>, DomainError> =>
  Effect.gen(function* () {
    const listing = yield* call.tree
      .walk()
      .pipe(Effect.mapError((error) => localFailure(error, "listing the working copy")));
    // Directories too deep to name are kept (and could not be removed by name either).
    if (
      listing.undecodable.length > 0 ||
      listing.tooDeepDirectories > 0 ||
      listing.tooDeep.length > 0
    )
      return keep;
    const known = yield* publishedContents(call);
    if (Option.isNone(known)) return keep;
    const { allowed, required, tracked } = known.value;
    const files: Array<string> = [];
    const setAside: Array<readonly [string, string]> = [];
    const leftovers: Array<string> = [];
    const directories: Array<string> = [];
    for (const entry of listing.entries) {
      if (entry.kind === "directory") directories.push(entry.relativePath);
      else if (isLeftoverTemp(entry.relativePath)) leftovers.push(entry.relativePath);
      if (entry.kind === "directory" || isLeftoverTemp(entry.relativePath)) continue;
      const original = setAsideOriginal(entry.relativePath);
      if (original !== undefined && entry.kind === "file")
        setAside.push([entry.relativePath, original]);
      else files.push(entry.relativePath);
    }
    if (files.some((path) => !allowed.has(path))) return keep;
    const present = new Set(files);
    for (const [path, original] of setAside) {
      if (!(yield* isPublishedAt(call, path, allowed.get(original)))) return keep;
      // Beside a file of its name the scan reports it; alone the scan puts it back. It
      // goes only when the file at its name is published too: otherwise the copy is kept
      // (that file is not published), and the set-aside file may be the note that file
      // took the place of, a newcomer made after a kill freed the name.
      if (!present.has(original)) present.add(original);
      else if (yield* isPublishedAt(call, original, allowed.get(original)))
        yield* dropSetAside(call, path);
      else return keep;
    }
    if (required.some((path) => !present.has(path))) return keep;
    const removal = (files: Scan): Option.Option<Removal> =>
      Option.some({ files, leftovers, directories });
    if (present.size === 0) return removal(new Map());
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const scan = yield* Effect.option(
      scanWorkingCopy(call.tree, stats.stamps, stats.recordedAtMs, call.blobs, tracked),
    );
    if (Option.isNone(scan)) return keep;
    for (const path of present) if (!scan.value.has(path)) return keep;
    for (const [path, file] of scan.value)
      if (allowed.get(path)?.has(file.id) !== true) return keep;
    return removal(scan.value);
  });

const keep = Option.none<Removal>();

/** Whether the file at `path` holds one of `contents` (read whole; never fails). */
const isPublishedAt = (
  call: CopyCall,
  path: string,
  contents: ReadonlySet<string> | undefined,
): Effect.Effect<boolean> =>
  contents === undefined
    ? Effect.succeed(false)
    : call.tree.readFile(path, maxFileBytes).pipe(
        Effect.map(({ bytes }) => contents.has(contentId(bytes))),
        Effect.orElseSucceed(() => false),
      );

/** Removes a set-aside file holding published content. LOCAL_IO when it cannot. */
const dropSetAside = (call: CopyCall, path: string): Effect.Effect<void, DomainError> =>
  call.tree
    .removeLeftover(path)
    .pipe(Effect.mapError((error) => localFailure(error, "removing a file set aside")));

/**
 * Removes what {@link publishedOnly} found in a working copy, and the copy's directory.
 * First its state goes, leaving a first-pull record of the baseline in its place
 * (firstPull.ts): a removal stopped part way (a kill, a failure) then leaves a copy that
 * reads as never pulled — whose notes missing are nobody's deletions, whose next pull
 * brings them back and whose commit asks for that pull first — and whose remaining files
 * are judged again against what was published.
 *
 * Each note is removed only while it still is what the judgement read (the rewrite's
 * guarded removal: a note saved meanwhile is left as it was saved, and so is one written
 * into it a little late), directories only while empty: whatever a person or a process
 * put there since the judgement stays. `true` when the copy is gone; `false` when
 * something was left (the private directory must then stay: its record still says
 * what was published). LOCAL_IO when a step fails.
 */
export const removePublished = (
  call: CopyCall,
  removal: Removal,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    if (Option.isSome(call.state)) {
      // What the copy holds, all of it published (the judgement): a removal stopped
      // part way leaves files a later judgement must find allowed, whether they are
      // the baseline's or a landed commit's.
      yield* recordFirstPull(call, idsOf(removal.files));
      yield* forgetState(call.fs, call.copyDir);
    }
    const notes = [...removal.files.keys()].sort(compareCodeUnits);
    const done = yield* materialise(call.tree, removal.files, new Map(), notes, call.blobs);
    const io = (doing: string) => Effect.mapError((error: FsError) => localFailure(error, doing));
    for (const path of removal.leftovers)
      yield* call.tree.removeLeftover(path).pipe(io("removing a temp file"));
    for (const directory of deepestFirst(removal.directories))
      yield* call.tree.removeEmptyDirectory(directory).pipe(io("removing the working copy"));
    if (done.held.length > 0) return false;
    // Anything there now came after the judgement: someone's, kept.
    const left = yield* call.tree.walk().pipe(io("listing the working copy"));
    if (
      left.entries.length > 0 ||
      left.undecodable.length > 0 ||
      left.tooDeepDirectories > 0 ||
      left.tooDeep.length > 0
    )
      return false;
    yield* call.tree.removeEmptyDirectory("").pipe(io("removing the working copy"));
    // Still there: something was saved in it after that listing, or its path leads
    // elsewhere now (a symlink swapped in). Kept, with its record.
    const still = yield* call.fs.info(call.dir).pipe(io("checking the working copy"));
    return Option.isNone(still);
  });
