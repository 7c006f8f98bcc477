/**
 * The end of `serve`'s own session directory (SPEC §9: without `--workspace-root`,
 * serve creates `$TMPDIR/quire-<random>/notebook`). Every serve start makes a fresh
 * one, and a pulled notebook is a full copy of it, so keeping them all would fill the
 * temp directory; deleting one that holds the agent's unpublished notes would lose
 * them. A session copy is therefore removed only when everything in it is published.
 */
import { Effect, Option } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import type { CopyCall } from "../shared/context.js";
import { localFailure } from "../shared/failures.js";
import { loadStats } from "./privateState.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import { leftoverTempName } from "../../../ports/FileSystem.js";
import { loadFirstPull } from "./firstPull.js";
import type { BlobRef } from "./privateState.js";
import { acceptedTreeOf, loadIntent } from "./rewriteIntent.js";
import { scanWorkingCopy } from "./workingCopy.js";

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

/**
 * What the copy's files may hold, from its private state: `None` when that cannot be
 * known without the store (a file held back from a rewrite, a commit not settled).
 * - Settled: exactly the baseline.
 * - A rewrite interrupted (`recoveryRequired`, its intent on disk): each file either as
 *   the baseline had it (not rewritten yet) or as the accepted state it was settling on
 *   has it (rewritten); one both have may not be missing.
 * - Never pulled: nothing, or, if a first pull was interrupted (firstPull.ts), files
 *   as the state it was writing has them, any of them missing.
 */
const publishedContents = (call: CopyCall): Effect.Effect<Option.Option<Published>> =>
  Effect.gen(function* () {
    if (Option.isNone(call.state)) {
      const given = yield* loadFirstPull(call);
      const tree = Option.getOrElse(given, (): Tree => new Map());
      return Option.some({ allowed: only(tree), required: [], tracked: new Map() });
    }
    const state = call.state.value;
    // A file held back from a rewrite holds an edit the next call still has to merge.
    if (state.held.size > 0) return Option.none();
    const intent = yield* loadIntent(call, state);
    if (!state.recoveryRequired) {
      // An intent of this baseline not being recovered is a commit's, maybe accepted.
      if (Option.isSome(intent)) return Option.none();
      return Option.some({
        allowed: only(idsOf(state.baseline)),
        required: [...state.baseline.keys()],
        tracked: state.baseline,
      });
    }
    // Only a pull's rewrite settles on a state known published; a commit's names a
    // publication only the store can confirm.
    if (Option.isNone(intent) || intent.value.publication !== null) return Option.none();
    const accepted = acceptedTreeOf(intent.value, state.baseline);
    const allowed = new Map<string, Set<string>>();
    for (const tree of [state.baseline, accepted])
      for (const [path, ref] of tree)
        allowed.set(path, (allowed.get(path) ?? new Set()).add(ref.id));
    const required = [...state.baseline.keys()].filter((path) => accepted.has(path));
    return Option.some({ allowed, required, tracked: new Map([...state.baseline, ...accepted]) });
  });

/** A temp file of an atomic write of ours that a killed process never renamed. */
const isLeftoverTemp = (path: string): boolean =>
  leftoverTempName.test(path.slice(path.lastIndexOf("/") + 1));

/**
 * Whether the working copy holds nothing but published notes, so that removing it and
 * its private state loses nothing: every file a note exactly as the notebook published
 * it (see publishedContents: the baseline; for a rewrite or a first pull that a killed
 * process left half done, the states it was moving between), no published note missing
 * that the copy had, and no other entry of any kind (an ignored `.git`, a symlink, a
 * file set aside, a directory nested too deep to name — ports/FileSystem.ts
 * `nameablePathBytes` — all count as something to keep). Temp files of a killed write of
 * ours are not the copy's content (the scan removes them). A copy that cannot be scanned
 * cleanly holds something to keep. Fails only when the directory cannot be listed.
 */
export const holdsOnlyPublished = (call: CopyCall): Effect.Effect<boolean, DomainError> =>
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
      return false;
    const files = listing.entries.filter(
      (entry) => entry.kind !== "directory" && !isLeftoverTemp(entry.relativePath),
    );
    const known = yield* publishedContents(call);
    if (Option.isNone(known)) return false;
    const { allowed, required, tracked } = known.value;
    if (files.some((file) => !allowed.has(file.relativePath))) return false;
    if (files.length === 0) return required.length === 0;
    const present = new Set(files.map((file) => file.relativePath));
    if (required.some((path) => !present.has(path))) return false;
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const scan = yield* Effect.option(
      scanWorkingCopy(call.tree, stats.stamps, stats.recordedAtMs, call.blobs, tracked),
    );
    if (Option.isNone(scan) || scan.value.size !== files.length) return false;
    for (const [path, file] of scan.value)
      if (allowed.get(path)?.has(file.id) !== true) return false;
    return true;
  });
