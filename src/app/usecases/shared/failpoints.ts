/**
 * Failpoints: named moments of a call at which tests (and the torture harness) inject a
 * failure or a crash through {@link NotebookOptions.failpoint}. In production the hook
 * is absent and every failpoint is a no-op.
 */
import { Effect } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import { FsError, type RootedTree } from "../../../ports/FileSystem.js";

/**
 * The local stages a call can be stopped at:
 * - `after-pack-upload`: the pack is in the store, `current` not yet written;
 * - `after-cas`: `current` names the publication, nothing local has changed yet;
 * - `mid-materialisation`: the working copy is partly rewritten;
 * - `before-state-record`: the working copy is rewritten, the new baseline not recorded;
 * - `before-checkpoint-cas`: a checkpoint pack is uploaded, the manifest not yet replaced;
 * - `before-cleanup`: a checkpoint was published, old packs not yet deleted.
 */
export type FailpointStage =
  | "after-pack-upload"
  | "after-cas"
  | "mid-materialisation"
  | "before-state-record"
  | "before-checkpoint-cas"
  | "before-cleanup";

/** Every failpoint stage, in the order a commit passes them. */
export const failpointStages: ReadonlyArray<FailpointStage> = [
  "after-pack-upload",
  "after-cas",
  "mid-materialisation",
  "before-state-record",
  "before-checkpoint-cas",
  "before-cleanup",
];

/**
 * The hook: called at each stage; it may succeed (carry on), fail with a domain error
 * (an unexpected failure at that stage) or die / interrupt (a crash: nothing after it
 * runs, no recovery).
 */
export type Failpoint = (stage: FailpointStage) => Effect.Effect<void, DomainError>;

/** Runs the hook for `stage`, or nothing when there is no hook. */
export const reach = (
  hook: Failpoint | undefined,
  stage: FailpointStage,
): Effect.Effect<void, DomainError> => (hook === undefined ? Effect.void : hook(stage));

/**
 * A view of `tree` that reaches `mid-materialisation` once, right after the first file of
 * the working copy was written or removed, so a stop there leaves it half rewritten. A
 * hook failure surfaces as an `FsError` (reason `Other`), as a real I/O failure at that
 * moment would; a die or an interrupt is a crash. Without a hook it is `tree` itself.
 */
export const materialisationTree = (tree: RootedTree, hook: Failpoint | undefined): RootedTree => {
  if (hook === undefined) return tree;
  let reached = false;
  const stop: Effect.Effect<void, FsError> = Effect.suspend(() => {
    if (reached) return Effect.void;
    reached = true;
    return hook("mid-materialisation").pipe(
      Effect.mapError(
        (error) =>
          new FsError({ reason: "Other", path: "", message: `failpoint: ${error.message}` }),
      ),
    );
  });
  return {
    ...tree,
    replaceFile: (path, bytes, expected, mode) =>
      tree.replaceFile(path, bytes, expected, mode).pipe(Effect.zipLeft(stop)),
    removeFile: (path, expected) => tree.removeFile(path, expected).pipe(Effect.zipLeft(stop)),
  };
};
