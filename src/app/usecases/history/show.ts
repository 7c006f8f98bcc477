/**
 * `quire show` (SPEC §11): one publication — its generation, time, author, message —
 * and the unified diff of each file it changed against the state just before it, from
 * the packs of the chain that holds it (history/generations.ts).
 */
import { Effect } from "effect";
import type { FileDiff } from "../../../domain/copyStatus.js";
import { countChanges } from "../../../domain/diffstat.js";
import type { DomainError } from "../../../domain/errors.js";
import { atOrBelowAny, type ShownPublication } from "../../../domain/history.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import { unifiedDiff } from "../../../domain/unifiedDiff.js";
import type { RemoteContext } from "../commit/remote.js";
import { publicationStates } from "./generations.js";
import { storedText } from "./storedText.js";

/**
 * The publication at `generation`, its diffs only of `files` (notebook paths or
 * directories) when any are given. GENERATION_PRUNED when its content is gone;
 * INVALID_ARGUMENT when no publication has that generation; STORAGE_INTEGRITY/
 * MANIFEST_INVALID when `current` does not continue the history of `copy` (the
 * generation and head the working copy has seen: a store rolled back, or replaced by
 * another notebook's), as status, restore and revert answer — its generation
 * `generation` may be another publication than the one the copy knows by that number.
 */
export const showPublication = (
  ctx: RemoteContext,
  generation: number,
  files: ReadonlyArray<string>,
  copy: { readonly generation: number; readonly head: string },
): Effect.Effect<ShownPublication, DomainError> =>
  Effect.gen(function* () {
    const { header, before, after } = yield* publicationStates(ctx, generation, copy);
    const paths = [...new Set([...header.puts.map((p) => p.path), ...header.deletes])]
      .filter(
        (path) =>
          before.get(path) !== after.get(path) && (files.length === 0 || atOrBelowAny(path, files)),
      )
      .sort(compareCodeUnits);
    const diffs = yield* Effect.forEach(
      paths,
      (path): Effect.Effect<FileDiff, DomainError> =>
        Effect.gen(function* () {
          const old = yield* storedText(ctx, before.get(path));
          const updated = yield* storedText(ctx, after.get(path));
          return {
            path,
            change: !before.has(path) ? "added" : !after.has(path) ? "deleted" : "modified",
            ...countChanges(old, updated),
            diff: unifiedDiff(path, old, updated),
          };
        }),
      { concurrency: 8 },
    );
    const publication = header.publication;
    return {
      generation,
      time: publication?.time ?? "",
      author: publication?.author ?? { name: "", version: "" },
      message: publication?.message ?? "",
      files: diffs,
    };
  });
