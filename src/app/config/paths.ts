/** Host path helpers for configuration: `~` expansion, resolution, containment. */
import * as NodePath from "node:path";

/** Expands a leading `~` or `~/` against `home`; other paths are returned unchanged. */
export const expandHome = (path: string, home: string): string =>
  path === "~" ? home : path.startsWith("~/") ? NodePath.join(home, path.slice(2)) : path;

/** `~`-expands `path` and resolves it against `cwd` into a normalised absolute path. */
export const resolveHostPath = (path: string, cwd: string, home: string): string =>
  NodePath.resolve(cwd, expandHome(path, home));

/** Whether absolute `child` is `parent` itself or lies below it (lexically; no symlinks resolved). */
export const isAtOrBelow = (child: string, parent: string): boolean => {
  const relative = NodePath.relative(parent, child);
  return (
    relative === "" ||
    !(
      relative === ".." ||
      relative.startsWith(`..${NodePath.sep}`) ||
      NodePath.isAbsolute(relative)
    )
  );
};
