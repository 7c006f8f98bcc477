/**
 * Files whose conflict blocks are still unresolved when the notebook changed them again
 * (SPEC §6.3). Why: merging such a file again merges its old marker lines as ordinary
 * text and writes new blocks around and inside them — nested blocks, which the marker
 * scanner does not count as complete (by SPEC they are text), so the commit that
 * followed published them with OK. A pull leaves such a file exactly as it is instead,
 * keeps its merge base for the next call (as for a held file), and reports its blocks
 * again; once they are resolved, the commit merges the newer change.
 */
import type { Effect } from "effect";
import type { DomainError, FileIssue } from "../../../domain/errors.js";
import type { Tree } from "../../../domain/tree.js";
import { filesWithBlocks } from "../shared/markerBlocks.js";
import type { BlobSource } from "../workingCopy/blobs.js";

/**
 * The files of `local` that hold complete marker blocks and that a merge with `remote`
 * on `base` would merge as text (both sides changed them, differently), each as a
 * MARKER_BLOCK issue with its blocks' ranges, sorted by path. Only those files are read,
 * so the cost follows the change. Fails as the merge would for content that is not text.
 */
export const unresolvedBlocks = (
  blobs: BlobSource,
  base: Tree,
  local: Tree,
  remote: Tree,
): Effect.Effect<ReadonlyArray<FileIssue>, DomainError> => {
  const both: string[] = [];
  for (const [path, mine] of local) {
    const theirs = remote.get(path);
    const before = base.get(path);
    if (theirs !== undefined && theirs !== mine && mine !== before && theirs !== before)
      both.push(path);
  }
  return filesWithBlocks(blobs, local, both);
};

/**
 * `remote` with each of `paths` taking its content in `local`: merged with that, the
 * file stays exactly as the copy holds it (identical changes on both sides).
 */
export const keepingLocal = (remote: Tree, local: Tree, paths: ReadonlyArray<string>): Tree => {
  if (paths.length === 0) return remote;
  const kept = new Map(remote);
  for (const path of paths) {
    const id = local.get(path);
    if (id !== undefined) kept.set(path, id);
  }
  return kept;
};
