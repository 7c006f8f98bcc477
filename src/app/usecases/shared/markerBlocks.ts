/**
 * The files of a working copy that still hold complete conflict marker blocks (SPEC
 * §6.3): what a commit refuses, what a revert refuses to merge into, and what a pull
 * leaves as it is when the notebook changed such a file again.
 */
import { Effect } from "effect";
import type { DomainError, FileIssue } from "../../../domain/errors.js";
import { findMarkerBlocks } from "../../../domain/markers.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import type { Tree } from "../../../domain/tree.js";
import type { BlobSource } from "../workingCopy/blobs.js";
import { loadText } from "../pull/mergeRun.js";
import { forEachPooled } from "./pooled.js";

/**
 * Each of `paths` whose content in `local` holds complete marker blocks, as a
 * MARKER_BLOCK issue with the blocks' ranges, sorted by path; a path `local` lacks is
 * skipped. Only those files are read. Fails as {@link loadText} does for content that is
 * not text.
 */
export const filesWithBlocks = (
  blobs: BlobSource,
  local: Tree,
  paths: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<FileIssue>, DomainError> =>
  Effect.gen(function* () {
    const found: FileIssue[] = [];
    yield* forEachPooled(
      paths,
      (path) => {
        const id = local.get(path);
        return id === undefined
          ? Effect.void
          : loadText(blobs, id).pipe(
              Effect.map((text) => {
                const ranges = findMarkerBlocks(text);
                if (ranges.length > 0) found.push({ path, reason: "MARKER_BLOCK", ranges });
              }),
            );
      },
      { workers: 8, itemsPerWorker: 1 },
    );
    return found.sort((a, b) => compareCodeUnits(a.path, b.path));
  });
