/**
 * Path-set enforcement at commit (SPEC §5): a commit that adds, modifies or deletes
 * any path resolving read-only publishes nothing; exactly those files are reset to the
 * accepted baseline in the working copy, and the error lists each one.
 */
import { Effect } from "effect";
import { domainError, type DomainError, type FileIssue } from "../../../domain/errors.js";
import { hasPathSets, resolveAccess, type PathSets } from "../../../domain/pathSets.js";
import { caseFoldKey, compareCodeUnits } from "../../../domain/paths.js";
import { diffTrees } from "../../../domain/treeDiff.js";
import type { Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { materialise } from "../workingCopy/rewrite.js";
import type { Scan } from "../workingCopy/workingCopy.js";

/**
 * Refuses the commit with READ_ONLY_PATH when the copy changed a read-only path
 * (`READ_ONLY` under a read-only entry, `NOT_WRITABLE` outside every writable entry),
 * after resetting those files: a deleted file comes back, an added file goes away, a
 * modified file gets the baseline content. Nothing else in the working copy is touched,
 * except a local file standing where a directory of a file to restore was: replacing
 * that directory removed read-only files, so it is part of the offending change, is
 * listed with their reason and removed (otherwise the restore could never succeed).
 * Costs nothing when no set is configured.
 */
export const enforcePathSets = (
  call: CopyCall,
  sets: PathSets,
  scan: Scan,
  base: Tree,
  local: Tree,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    if (!hasPathSets(sets)) return;
    const offending: FileIssue[] = [];
    for (const path of diffTrees(base, local)) {
      const decision = resolveAccess(sets, path);
      if (decision.access === "read-only")
        offending.push({ path, reason: decision.fileReason, ranges: [] });
    }
    if (offending.length === 0) return;
    offending.push(...blockers(offending, base, local));
    offending.sort((a, b) => compareCodeUnits(a.path, b.path));
    const paths = offending.map((file) => file.path);
    const target = new Map<string, string>();
    for (const path of paths) {
      const id = base.get(path);
      if (id !== undefined) target.set(path, id);
    }
    // A file saved meanwhile is left as it was (workingCopy/rewrite.ts): the next commit
    // refuses it again.
    yield* materialise(call.tree, scan, target, paths, call.blobs);
    return yield* Effect.fail(
      domainError({
        code: "READ_ONLY_PATH",
        reason: "PATH_SET_VIOLATION",
        message:
          "These files are outside what this server may write; they were reset to the accepted version and nothing was published. Call notes_commit again to publish your other changes.",
        files: offending,
      }),
    );
  });

/**
 * Local files (not already offending) at an ancestor path of an offending file that the
 * baseline has, compared under case folding: restoring that file needs the directory
 * back. Each is reported with the reason of the first file it blocks.
 */
const blockers = (
  offending: ReadonlyArray<FileIssue>,
  base: Tree,
  local: Tree,
): ReadonlyArray<FileIssue> => {
  const localFiles = new Map<string, string>();
  for (const path of local.keys()) localFiles.set(caseFoldKey(path), path);
  const listed = new Set(offending.map((file) => caseFoldKey(file.path)));
  const found: FileIssue[] = [];
  for (const file of offending) {
    if (!base.has(file.path)) continue;
    const segments = file.path.split("/");
    for (let depth = 1; depth < segments.length; depth++) {
      const key = caseFoldKey(segments.slice(0, depth).join("/"));
      const blocking = localFiles.get(key);
      if (blocking === undefined || listed.has(key)) continue;
      listed.add(key);
      found.push({ path: blocking, reason: file.reason, ranges: [] });
    }
  }
  return found;
};
