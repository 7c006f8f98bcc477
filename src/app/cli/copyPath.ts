/**
 * Where the CLI's PATH lies against the workspace root, settled before anything runs
 * (SPEC §9: PATH must be at or below the root, by default the current directory).
 *
 * The root is used canonical (symlinks resolved), while a person spells paths as their
 * shell does: `--workspace-root ~/notes` through a symlinked home, or `$PWD/copy` where
 * `$PWD` reached the current directory through a link (macOS's /tmp). Such a PATH is
 * inside the root and is rewritten onto the canonical root; only reading (realpath) is
 * done for it, and the use case still walks the result from the root, never following a
 * link it did not check. A PATH that is outside the root however it is spelt is a usage
 * error (exit 2), like every other wrong argument: nothing has run yet.
 */
import * as NodePath from "node:path";
import { Effect, Option } from "effect";
import type { FileSystemService } from "../../ports/FileSystem.js";
import type { WorkspaceConfig } from "../config.js";
import { StartupError } from "../layers.js";
import { isAtOrBelow } from "../usecases/workingCopy/openCopy.js";

/** `path`, which lies at or below `from`, moved to the same place below `to`. */
const rebase = (path: string, from: string, to: string): string =>
  NodePath.join(to, NodePath.relative(from, path));

/**
 * `path` with the symlinks of its longest existing ancestor resolved, or `undefined`
 * when no ancestor can be resolved for another reason than its absence.
 */
const resolvedThroughLinks = (
  fs: FileSystemService,
  path: string,
): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    for (let ancestor = path; ; ancestor = NodePath.dirname(ancestor)) {
      const real = yield* fs.realPath(ancestor).pipe(Effect.either);
      if (real._tag === "Right") return rebase(path, ancestor, real.right);
      const missing = real.left.reason === "NotFound" || real.left.reason === "NotADirectory";
      if (!missing || NodePath.dirname(ancestor) === ancestor) return undefined;
    }
  });

/**
 * The absolute PATH to hand the use case: as given when it lies at or below the
 * canonical root (symlinks below the root are the use case's to check), else rewritten
 * onto it when it reaches the root through a symlink. Fails with a `config`
 * {@link StartupError} (exit 2) when it lies outside the root. A root that cannot be
 * resolved is left to the workspace's preparation, which reports it.
 */
export const placeCopyPath = (
  fs: FileSystemService,
  path: string,
  workspace: WorkspaceConfig,
): Effect.Effect<string, StartupError> =>
  Effect.gen(function* () {
    if (workspace.kind !== "root") return path;
    const configured = NodePath.resolve(workspace.root);
    const canonical = yield* fs.realPath(configured).pipe(Effect.option);
    if (Option.isNone(canonical)) return path;
    const root = canonical.value;
    if (isAtOrBelow(path, root)) return path;
    if (isAtOrBelow(path, configured)) return rebase(path, configured, root);
    const throughLinks = yield* resolvedThroughLinks(fs, path);
    if (throughLinks !== undefined && isAtOrBelow(throughLinks, root)) return throughLinks;
    const origin = workspace.explicit ? "" : " (the current directory, by default)";
    return yield* new StartupError({
      kind: "config",
      message:
        `PATH ${path} is outside the workspace root ${configured}${origin}; PATH must be at or below it: ` +
        "run quire from a directory that holds PATH, or name one with --workspace-root DIR (or QUIRE_WORKSPACE_ROOT)",
    });
  });
