/** Three-way merge of notebook trees (SPEC §6.3), before any file content is read. */
import { Either } from "effect";
import {
  caseFoldKey,
  forEachDirectory,
  maxPathBytes,
  maxSegmentBytes,
  normalizeNotebookPath,
} from "./paths.js";
import type { Tree } from "./tree.js";

/** What the merged tree holds at one path. */
export type MergeEntry =
  /** The content with this id, as is. */
  | { readonly _tag: "Resolved"; readonly id: string }
  /** Both sides changed the file (or both added it, `base` undefined): merge the texts. */
  | {
      readonly _tag: "NeedsTextMerge";
      readonly base: string | undefined;
      readonly local: string;
      readonly remote: string;
    };

/** A side of a merge: `local` the working copy, `remote` the other state merged into it. */
export type MergeSide = "local" | "remote";

/**
 * A structural conflict found by the tree merge.
 * - `DELETE_MODIFY`: one side deleted the file the other modified; the modified file is kept.
 * - `FILE_DIRECTORY`: one side has a file where the other has a directory; the directory
 *   stays (`keptAs`) and the file moves to `movedTo` (`<path>~local` or `<path>~remote`).
 * - `CASE_COLLISION`: the sides brought paths (or directories) equal under case folding;
 *   the remote spelling stays (`keptAs`) and the other file moves to `movedTo`
 *   (`<path>~local`, or for a directory spelt differently `<dir>~local/<rest>`).
 *
 * A moved conflict carries `movedTo`, `side` and `keptAs` together, so that whoever
 * reads it learns where each side's version now is, not only that something clashed.
 */
export interface TreeConflict {
  /** The path as the side that caused the conflict wrote it. */
  readonly path: string;
  readonly reason: "DELETE_MODIFY" | "FILE_DIRECTORY" | "CASE_COLLISION";
  /** Where the file was put instead of `path`, when it had to move aside. */
  readonly movedTo?: string;
  /** With `movedTo`: whose file moved aside. */
  readonly side?: MergeSide;
  /**
   * With `movedTo`: what stayed in place of it, as the merged tree spells it: the
   * directory (FILE_DIRECTORY), the other file or the kept directory spelling
   * (CASE_COLLISION).
   */
  readonly keptAs?: string;
}

/** The plan of a tree merge: the merged tree's entries and the structural conflicts. */
export interface TreeMergePlan {
  /** Every path of the merged tree (a path not present is deleted). */
  readonly entries: ReadonlyMap<string, MergeEntry>;
  /** Structural conflicts, sorted by path; text conflicts are found later by mergeText. */
  readonly conflicts: ReadonlyArray<TreeConflict>;
}

type Side = MergeSide;

const resolved = (id: string): MergeEntry => ({ _tag: "Resolved", id });

/** Per path three-way decision; records delete/modify conflicts. */
const mergePath = (
  base: string | undefined,
  local: string | undefined,
  remote: string | undefined,
  path: string,
  conflicts: Map<string, TreeConflict>,
): MergeEntry | undefined => {
  if (local === remote) return local === undefined ? undefined : resolved(local);
  if (local === base) return remote === undefined ? undefined : resolved(remote);
  if (remote === base) return local === undefined ? undefined : resolved(local);
  // Both changed, differently.
  if (local === undefined || remote === undefined) {
    conflicts.set(path, { path, reason: "DELETE_MODIFY" });
    return resolved(local ?? remote ?? "");
  }
  return { _tag: "NeedsTextMerge", base, local, remote };
};

const depth = (path: string): number => {
  let count = 0;
  for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1)) count++;
  return count;
};

/**
 * Every folded name in use, files and directories alike, to pick free names. Folded
 * with the path rules' own caseFoldKey (`ß` ≡ `ss`), so a merge never brings together
 * two names every later scan and commit would refuse as a CASE_COLLISION.
 */
const foldedNames = (entries: ReadonlyMap<string, MergeEntry>): Set<string> => {
  const names = new Set<string>();
  for (const path of entries.keys()) {
    const folded = caseFoldKey(path);
    names.add(folded);
    forEachDirectory(path, folded, (_spelling, directory) => names.add(directory));
  }
  return names;
};

const utf8 = new TextEncoder();
const bytesOf = (text: string): number => utf8.encode(text).length;

/** The longest run of whole code points of `name` that fits in `budget` UTF-8 bytes. */
const cutTo = (name: string, budget: number): string => {
  if (bytesOf(name) <= budget) return name;
  let cut = "";
  let used = 0;
  for (const character of name) {
    const size = bytesOf(character);
    if (used + size > budget) break;
    cut += character;
    used += size;
  }
  return cut;
};

/**
 * `path` with `tail` appended to its last segment, the segment cut (whole code points)
 * so that it stays within {@link maxSegmentBytes} and the whole within `room` bytes; a
 * valid notebook path or `undefined` (no room in that directory).
 */
const withTail = (path: string, tail: string, room: number): string | undefined => {
  const at = path.lastIndexOf("/");
  const directory = path.slice(0, at + 1);
  const budget = Math.min(maxSegmentBytes, room - bytesOf(directory)) - bytesOf(tail);
  for (
    let cut = cutTo(path.slice(at + 1), budget);
    cut !== "";
    cut = [...cut].slice(0, -1).join("")
  ) {
    const candidate = `${directory}${cut}${tail}`;
    // Spelling is kept as the side wrote it (normalising is not the merge's business).
    if (Either.isRight(normalizeNotebookPath(candidate))) return candidate;
  }
  return undefined;
};

/**
 * A free name for `path` moved aside by `side`: `<path>~<side>`, or `~<side>~2`, `~3`…
 * when taken. The name always satisfies every rule of SPEC §4: its last segment is cut
 * to fit 255 bytes and the whole path (plus `below` bytes of paths under it, for a
 * directory) to fit 4,096; where its directory leaves no room, the name moves to the
 * notebook's top level. The chosen name becomes taken. `undefined` only when even a
 * top-level name leaves no room for `below` (a directory over a very deep tree); a file
 * (`below` 0) always gets one.
 */
const freeName = (path: string, side: Side, taken: Set<string>, below = 0): string | undefined => {
  const room = maxPathBytes - below;
  const name = path.slice(path.lastIndexOf("/") + 1);
  for (let counter = 1; ; counter++) {
    const tail = counter === 1 ? `~${side}` : `~${side}~${counter}`;
    const candidate = withTail(path, tail, room) ?? withTail(name, tail, room);
    if (candidate === undefined) return undefined;
    if (!taken.has(caseFoldKey(candidate))) {
      taken.add(caseFoldKey(candidate));
      return candidate;
    }
  }
};

/** {@link freeName} for a file: a top-level name always fits its whole 4,096 bytes. */
const freeFileName = (path: string, side: Side, taken: Set<string>): string =>
  freeName(path, side, taken) ?? path;

/** Where a file moves: its new path, whose it is, and what stays where it was. */
interface Move {
  readonly to: string;
  readonly side: Side;
  readonly keptAs: string;
}

/** Moves the entry at `from` and records the conflict under the original path. */
const move = (
  entries: Map<string, MergeEntry>,
  conflicts: Map<string, TreeConflict>,
  from: string,
  reason: TreeConflict["reason"],
  { to, side, keptAs }: Move,
): void => {
  const entry = entries.get(from);
  if (entry === undefined) return;
  entries.delete(from);
  entries.set(to, entry);
  conflicts.set(from, { path: from, reason, movedTo: to, side, keptAs });
};

/**
 * Directories spelt differently by the two sides ("Notes/a" and "notes/b"): the
 * spelling remote uses stays, every file under another spelling moves to a renamed
 * directory (`Notes~local/a`). Outer directories first; a directory under one already
 * renamed no longer collides.
 */
const renameCaseTwinDirectories = (
  entries: Map<string, MergeEntry>,
  remote: Tree,
  conflicts: Map<string, TreeConflict>,
): void => {
  // Folded directory → its spellings → whether remote uses that spelling.
  const spellings = new Map<string, Map<string, boolean>>();
  for (const path of entries.keys()) {
    const usedByRemote = remote.has(path);
    forEachDirectory(path, caseFoldKey(path), (spelling, folded) => {
      let variants = spellings.get(folded);
      if (variants === undefined) {
        variants = new Map();
        spellings.set(folded, variants);
      }
      variants.set(spelling, (variants.get(spelling) ?? false) || usedByRemote);
    });
  }
  const collisions = [...spellings].filter(([, variants]) => variants.size > 1);
  if (collisions.length === 0) return;
  collisions.sort(([a], [b]) => depth(a) - depth(b) || compareCodeUnits(a, b));

  const taken = foldedNames(entries);
  // The longest remainder below each colliding spelling: a renamed directory must leave
  // room for every path under it.
  const below = new Map<string, number>();
  for (const path of entries.keys()) {
    for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1)) {
      const rest = bytesOf(path.slice(slash));
      const spelling = path.slice(0, slash);
      if (rest > (below.get(spelling) ?? 0)) below.set(spelling, rest);
    }
  }
  // Spelling → its new name, the side it is named after, and the spelling that stays.
  const renames = new Map<string, Move>();
  const renamedAbove = (spelling: string): boolean => {
    for (
      let slash = spelling.indexOf("/");
      slash !== -1;
      slash = spelling.indexOf("/", slash + 1)
    ) {
      if (renames.has(spelling.slice(0, slash))) return true;
    }
    return false;
  };
  for (const [, variants] of collisions) {
    const candidates = [...variants]
      .filter(([spelling]) => !renamedAbove(spelling))
      .sort(([a], [b]) => compareCodeUnits(a, b));
    if (candidates.length < 2) continue;
    const keeper = (candidates.find(([, usedByRemote]) => usedByRemote) ?? candidates[0])?.[0];
    for (const [spelling, usedByRemote] of candidates) {
      if (spelling === keeper || keeper === undefined) continue;
      const side = usedByRemote ? "remote" : "local";
      // A directory over a tree too deep for any longer name joins the keeper's
      // spelling instead; the files that then clash are separated one by one.
      const to = freeName(spelling, side, taken, below.get(spelling) ?? 0) ?? keeper;
      renames.set(spelling, { to, side, keptAs: keeper });
    }
  }

  const moves: Array<[string, Move]> = [];
  for (const path of entries.keys()) {
    for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1)) {
      const renamed = renames.get(path.slice(0, slash));
      if (renamed !== undefined) {
        moves.push([path, { ...renamed, to: renamed.to + path.slice(slash) }]);
        break;
      }
    }
  }
  for (const [from, renamed] of moves) {
    // Joined into the keeper's directory onto a file of the same spelling: beside it,
    // and that file is what stays.
    if (entries.has(renamed.to)) {
      const side = remote.has(from) ? "remote" : "local";
      const to = freeFileName(renamed.to, side, taken);
      move(entries, conflicts, from, "CASE_COLLISION", { to, side, keptAs: renamed.to });
    } else move(entries, conflicts, from, "CASE_COLLISION", renamed);
  }
};

/**
 * Makes the merged tree valid after the per-path merge: directories spelt differently
 * by the sides are separated, a file where there is also a directory moves aside
 * (the directory stays), and of files equal under case folding the remote one stays.
 * Only called when some merged path is new relative to the base: a valid base cannot
 * clash with itself. Linear in the number of merged paths times their depth.
 */
const separateClashes = (
  entries: Map<string, MergeEntry>,
  local: Tree,
  remote: Tree,
  conflicts: Map<string, TreeConflict>,
): void => {
  renameCaseTwinDirectories(entries, remote, conflicts);

  const sideOf = (path: string): Side =>
    remote.has(path) && !local.has(path) ? "remote" : "local";
  const files = new Map<string, Array<string>>();
  // Folded directory → a spelling of it (the first seen: once twin directories are
  // separated, a directory has one spelling), to say which directory stayed.
  const directories = new Map<string, string>();
  for (const path of entries.keys()) {
    const folded = caseFoldKey(path);
    const same = files.get(folded);
    if (same === undefined) files.set(folded, [path]);
    else same.push(path);
    forEachDirectory(path, folded, (spelling, directory) => {
      if (!directories.has(directory)) directories.set(directory, spelling);
    });
  }
  const taken = new Set<string>([...files.keys(), ...directories.keys()]);

  // File versus directory: the directory stays, the file moves aside.
  for (const [folded, paths] of files) {
    const directory = directories.get(folded);
    if (directory === undefined) continue;
    for (const path of [...paths].sort(compareCodeUnits)) {
      const side = sideOf(path);
      const to = freeFileName(path, side, taken);
      move(entries, conflicts, path, "FILE_DIRECTORY", { to, side, keptAs: directory });
    }
    files.delete(folded);
  }

  // Files equal under case folding: keep the one remote has, move the others aside.
  for (const paths of files.values()) {
    if (paths.length < 2) continue;
    const sorted = [...paths].sort(compareCodeUnits);
    const keeper = sorted.find((path) => remote.has(path)) ?? sorted[0];
    if (keeper === undefined) continue;
    for (const path of sorted) {
      if (path === keeper) continue;
      const side = sideOf(path);
      const to = freeFileName(path, side, taken);
      move(entries, conflicts, path, "CASE_COLLISION", { to, side, keptAs: keeper });
    }
  }
};

const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Plans the three-way merge of trees. Per path: an unchanged side takes the other;
 * identical changes (including both deleting) are not conflicts; both changed
 * differently → `NeedsTextMerge` (base undefined for add/add); delete vs modify keeps
 * the modified file and reports DELETE_MODIFY. Then the merged tree is made valid:
 * a file where the other side has a directory moves to `<path>~local`/`<path>~remote`
 * (FILE_DIRECTORY); of two paths equal under case folding the remote one stays and the
 * other moves to `<path>~local`, and a directory spelt differently by the sides moves
 * to `<dir>~local` (CASE_COLLISION, per moved file); a taken name gets `~2`, `~3`…
 * One conflict per original path (a move supersedes DELETE_MODIFY), sorted by path.
 * Pure and deterministic; one pass over the union of paths, plus passes over the
 * merged paths only when some merged path is new relative to the base.
 */
export const planTreeMerge = (base: Tree, local: Tree, remote: Tree): TreeMergePlan => {
  const entries = new Map<string, MergeEntry>();
  const conflicts = new Map<string, TreeConflict>();
  let anyNew = false;
  const visit = (path: string): void => {
    const entry = mergePath(base.get(path), local.get(path), remote.get(path), path, conflicts);
    if (entry === undefined) return;
    entries.set(path, entry);
    if (!base.has(path)) anyNew = true;
  };
  for (const path of local.keys()) visit(path);
  for (const path of remote.keys()) if (!local.has(path)) visit(path);
  for (const path of base.keys()) if (!local.has(path) && !remote.has(path)) visit(path);

  if (anyNew) separateClashes(entries, local, remote, conflicts);

  const sorted = [...conflicts.values()].sort((a, b) => compareCodeUnits(a.path, b.path));
  return { entries, conflicts: sorted };
};
