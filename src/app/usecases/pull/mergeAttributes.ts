/**
 * The attributes in force for one merge run (docs/merge.md, "Which attributes apply"):
 * those of the merged `.quireattributes` — merged first, as text — or, while that file
 * is itself in conflict, the working copy's own version. Read only when some file can
 * be union-merged, from content the merge has at hand.
 */
import { Effect } from "effect";
import {
  attributesPath,
  maxAttributesBytes,
  maxAttributesRules,
  noAttributes,
  parseAttributes,
  type Attributes,
} from "../../../domain/attributes.js";
import type { DomainError } from "../../../domain/errors.js";
import type { Tree } from "../../../domain/tree.js";
import type { TreeMergePlan } from "../../../domain/treeMerge.js";

/** How the attributes file itself came out of the run: its merged text, and whether it conflicted. */
export interface MergedAttributesFile {
  readonly text: string;
  readonly conflicted: boolean;
}

/**
 * Resolves the attributes in force, deterministically from the merge's inputs:
 * - the attributes file is in conflict (a text or add/add conflict of its own merge,
 *   `mergedFile.conflicted`, or a structural conflict the plan names it in): the local
 *   tree's version, none if local has no such file;
 * - else the merged tree's version: `mergedFile.text` when both sides changed it, the
 *   resolved content otherwise, none when the merged tree has no such file.
 * Malformed lines never apply (a commit refuses them in the copy's own file), nor do
 * lines past the file's limits (domain/attributes.ts; a warning says so). Loads at most
 * one content with `load`; its failures are the only ones.
 */
export const attributesInForce = (
  plan: TreeMergePlan,
  local: Tree,
  mergedFile: MergedAttributesFile | undefined,
  load: (id: string) => Effect.Effect<string, DomainError>,
): Effect.Effect<Attributes, DomainError> => {
  const loaded = (id: string | undefined) =>
    id === undefined ? Effect.succeed(noAttributes) : Effect.map(load(id), parseAttributes);
  const conflicted =
    (mergedFile?.conflicted ?? false) ||
    plan.conflicts.some((conflict) => conflict.path === attributesPath);
  const entry = plan.entries.get(attributesPath);
  const resolved = conflicted
    ? loaded(local.get(attributesPath))
    : mergedFile !== undefined
      ? Effect.succeed(parseAttributes(mergedFile.text))
      : loaded(entry?._tag === "Resolved" ? entry.id : undefined);
  return Effect.tap(resolved, warnBeyondLimit);
};

/**
 * Says that the attributes in force were read only up to their limits (a file published
 * by an older release, or made over the limits by a merge of two that were within):
 * the rules past them do not apply, so the files they name merge as text — never
 * refused, which would leave a notebook no participant could pull.
 */
const warnBeyondLimit = ({ beyondLimit }: Attributes): Effect.Effect<void> =>
  beyondLimit === undefined
    ? Effect.void
    : Effect.logWarning(
        `${attributesPath} is larger than quire reads; its rules from line ${beyondLimit.firstLine} on do not apply (the files they name merge as text)`,
      ).pipe(
        Effect.annotateLogs({
          limit:
            beyondLimit.limit === "rules"
              ? `${maxAttributesRules} rules`
              : `${maxAttributesBytes} bytes`,
        }),
      );
