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
import { loadIntent } from "./rewriteIntent.js";
import { scanWorkingCopy } from "./workingCopy.js";

/**
 * Whether the working copy holds nothing but published notes, so that removing it and
 * its private state loses nothing: never pulled and without any entry but directories,
 * or every entry a note exactly as last pulled or committed (the baseline), no other
 * entry of any kind (an ignored `.git`, a symlink, a stray temp file, a directory nested
 * too deep to name — ports/FileSystem.ts `nameablePathBytes` — all count as something to
 * keep), and no interrupted rewrite or unsettled commit pending. A copy
 * that cannot be scanned cleanly holds something to keep. Reads only; fails only when
 * the directory cannot be listed.
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
    const files = listing.entries.filter((entry) => entry.kind !== "directory");
    if (Option.isNone(call.state)) return files.length === 0;
    const state = call.state.value;
    // A file held back from a rewrite holds an edit the next call still has to merge.
    if (state.recoveryRequired || state.held.size > 0) return false;
    if (Option.isSome(yield* loadIntent(call, state))) return false;
    if (files.length !== state.baseline.size) return false;
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const scan = yield* Effect.option(
      scanWorkingCopy(call.tree, stats.stamps, stats.recordedAtMs, call.blobs, state.baseline),
    );
    if (Option.isNone(scan) || scan.value.size !== state.baseline.size) return false;
    for (const [path, ref] of state.baseline) if (scan.value.get(path)?.id !== ref.id) return false;
    return true;
  });
