/**
 * `quire diff` (SPEC §11): the unified diff of a working copy's unpublished changes
 * against what its next commit merges against (domain/unifiedDiff.ts), per file with its
 * line counts. One scan, as `quire status`; no read of the store; nothing written to the
 * copy (the stat cache, after the answer, as status saves it).
 */
import { Effect } from "effect";
import type { CopyDiff, FileDiff } from "../../../domain/copyStatus.js";
import { countChanges } from "../../../domain/diffstat.js";
import type { DomainError } from "../../../domain/errors.js";
import { unifiedDiff } from "../../../domain/unifiedDiff.js";
import { atOrBelowAny } from "../../../domain/history.js";
import type { CopyCall } from "../shared/context.js";
import { loadText } from "../pull/mergeRun.js";
import { unpublished } from "./status.js";
import { rememberSurvey } from "../workingCopy/settle.js";

/**
 * The diff of the copy `call` holds, only of `files` (notebook paths, or directories of
 * them) when any are given. NOT_PULLED for a copy never pulled; ENGINE_FAILED/LOCAL_IO
 * when it cannot be scanned.
 */
export const copyDiff = (
  call: CopyCall,
  files: ReadonlyArray<string>,
): Effect.Effect<CopyDiff, DomainError> =>
  Effect.gen(function* () {
    const { state, base, scan, cached, local, changes, issues } = yield* unpublished(call);
    yield* rememberSurvey(call, scan, cached, issues);
    const text = (id: string | undefined) =>
      id === undefined ? Effect.succeed(undefined) : loadText(call.blobs, id);
    const diffs = yield* Effect.forEach(
      changes.filter((c) => files.length === 0 || atOrBelowAny(c.path, files)),
      (c): Effect.Effect<FileDiff, DomainError> =>
        Effect.gen(function* () {
          const before = yield* text(base.get(c.path));
          const after = yield* text(local.get(c.path));
          return {
            path: c.path,
            change: c.change,
            ...countChanges(before, after),
            diff: unifiedDiff(c.path, before, after),
          };
        }),
      { concurrency: 8 },
    );
    return { generation: state.generation, files: diffs };
  });
