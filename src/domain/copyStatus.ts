/**
 * What `quire status` reports (SPEC §11, docs/history.md), and how it is printed: for
 * people as text, for scripts as one JSON object. Paths are notebook paths (valid names
 * only; a refused name is shown as the scan reports it, made terminal-safe).
 */
import type { FileIssue } from "./errors.js";
import type { FileDiff, RestoredFiles, ShownPublication } from "./history.js";
import { renderRecord } from "./logReport.js";
import { shownName, terminalSafe } from "./shownText.js";

/** One unpublished change. */
export interface LocalChange {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
}

/** What `quire status` reports. */
export interface CopyStatus {
  /** The generation the copy was last brought to (its baseline). */
  readonly generation: number;
  /** `current`'s generation (0: nothing published). */
  readonly remoteGeneration: number;
  /** Publications in `current` newer than the copy's generation. */
  readonly ahead: number;
  /**
   * Set when the copy is older than every chain `current` still names: `ahead` counts
   * what those chains hold, and more publications came before them.
   */
  readonly aheadAtLeast?: true;
  /** Unpublished changes, sorted by path. */
  readonly changes: ReadonlyArray<LocalChange>;
  /** Changed files holding complete conflict marker blocks (a commit refuses them). */
  readonly markers: ReadonlyArray<FileIssue>;
  /** Files a commit refuses as they are (INVALID_CONTENT's file reasons). */
  readonly invalid: ReadonlyArray<FileIssue>;
  /** An interrupted call left the copy to be resynchronised by the next pull or commit. */
  readonly recoveryPending: boolean;
  /**
   * Files an earlier call could not bring up to date because they changed while it ran
   * (held: docs/working-copy.md), sorted; the next pull or commit merges them. Absent
   * when there are none.
   */
  readonly held?: ReadonlyArray<string>;
  /**
   * The held files (among `held`) that an editor's or desktop's file the scan skips
   * stands in the way of — at the note's path or at one of its folders (a binary
   * `Thumbs.db` where the notebook has `Thumbs.db/n.md`), `by` naming it — sorted by
   * path. No pull brings these in until the person removes or renames that file.
   * Absent when there are none.
   */
  readonly keptOut?: ReadonlyArray<{ readonly path: string; readonly by: string }>;
}

export type { FileDiff } from "./history.js";

/** What `quire diff` reports. */
export interface CopyDiff {
  /** The generation the copy was last brought to. */
  readonly generation: number;
  /** Sorted by path. */
  readonly files: ReadonlyArray<FileDiff>;
}

/** Rendering options. */
export interface StatusRenderOptions {
  readonly color: boolean;
}

const letter = { added: "A", modified: "M", deleted: "D" } as const;

const ranges = (issue: FileIssue): string =>
  issue.ranges.length === 0
    ? ""
    : `  lines ${issue.ranges.map((r) => (r.start === r.end ? `${r.start}` : `${r.start}-${r.end}`)).join(", ")}`;

/**
 * The text of a status, every line LF-terminated:
 *
 * ```text
 * generation 12; the notebook is 3 publications ahead (quire pull brings them in)
 * unpublished changes:
 *   A notes/new.md
 *   M plan.md
 * unresolved conflict markers (resolve them before committing):
 *   plan.md  lines 3-7
 * cannot be committed as they are:
 *   .quireattributes  INVALID_ATTRIBUTES  lines 2, 5
 *   link.md  SYMLINK
 * ```
 *
 * or `nothing to commit` when there are no changes. With `color`, added and modified
 * are green, deleted and refused red.
 */
export const renderStatus = (status: CopyStatus, options: StatusRenderOptions): string => {
  const paint = (code: string, text: string) => (options.color ? `${code}${text}\u001b[0m` : text);
  const [green, red, yellow] = ["\u001b[32m", "\u001b[31m", "\u001b[33m"];
  const count = `${status.aheadAtLeast === true ? "at least " : ""}${status.ahead} publication${status.ahead === 1 && status.aheadAtLeast !== true ? "" : "s"}`;
  // A held file that still holds conflict blocks was kept by a pull because of them
  // (docs/merge.md): no pull brings the notebook's change in until they are resolved.
  const blocked = new Set(status.markers.map((m) => m.path));
  // One an editor's file stands in the way of is never brought in by a pull: the person
  // must move that file first (said apart, not as a file the next pull merges).
  const keptOut = status.keptOut ?? [];
  const inTheWay = new Set(keptOut.map((k) => k.path));
  const held = (status.held ?? []).filter((path) => !blocked.has(path) && !inTheWay.has(path));
  const waiting = (status.held ?? []).filter((path) => blocked.has(path));
  const files = (n: number) => `${n} file${n === 1 ? "" : "s"}`;
  const lines = [
    status.ahead > 0
      ? `generation ${status.generation}; the notebook is ${count} ahead (quire pull brings them in)`
      : held.length > 0
        ? `generation ${status.generation}; ${files(held.length)} still to be merged from the notebook (quire pull brings ${held.length === 1 ? "it" : "them"} in)`
        : waiting.length > 0
          ? `generation ${status.generation}; ${files(waiting.length)} still to be merged from the notebook once ${waiting.length === 1 ? "its" : "their"} conflict blocks are resolved`
          : keptOut.length > 0
            ? `generation ${status.generation}; ${files(keptOut.length)} of the notebook kept out of the working copy by files that are not notes`
            : `generation ${status.generation}; up to date with the notebook`,
  ];
  if (status.recoveryPending)
    lines.push(
      paint(
        yellow,
        "an interrupted call left this copy to be resynchronised by the next pull or commit",
      ),
    );
  if (held.length > 0) {
    lines.push(
      "changed while an earlier call ran, not yet merged (the next pull or commit merges them):",
    );
    for (const path of held) lines.push(`  ${paint(yellow, shownName(path))}`);
  }
  if (keptOut.length > 0) {
    lines.push(
      "kept out by a file that is not a note (move or remove that file; the next pull or commit then brings the note in):",
    );
    for (const k of keptOut)
      lines.push(`  ${paint(yellow, shownName(k.path))}  (${shownName(k.by)})`);
  }
  if (waiting.length > 0) {
    lines.push(
      "changed in the notebook again while holding conflict blocks (resolve them; the next pull or commit then merges the change):",
    );
    for (const path of waiting) lines.push(`  ${paint(yellow, shownName(path))}`);
  }
  if (status.changes.length === 0) lines.push("nothing to commit");
  else {
    lines.push("unpublished changes:");
    for (const c of status.changes)
      lines.push(
        `  ${paint(c.change === "deleted" ? red : green, letter[c.change])} ${shownName(c.path)}`,
      );
  }
  if (status.markers.length > 0) {
    lines.push("unresolved conflict markers (resolve them before committing):");
    for (const m of status.markers) lines.push(`  ${shownName(m.path)}${ranges(m)}`);
  }
  if (status.invalid.length > 0) {
    lines.push("cannot be committed as they are:");
    // Lines only where the reason is about lines (a malformed `.quireattributes`).
    for (const i of status.invalid)
      lines.push(`  ${shownName(i.path)}  ${paint(red, i.reason)}${ranges(i)}`);
  }
  return `${lines.join("\n")}\n`;
};

/** The JSON `quire status --json` prints (one line), with the copy's directory. */
export const statusJson = (status: CopyStatus & { readonly path: string }): string =>
  `${JSON.stringify({
    path: status.path,
    generation: status.generation,
    remoteGeneration: status.remoteGeneration,
    ahead: status.ahead,
    ...(status.aheadAtLeast === true ? { aheadAtLeast: true } : {}),
    changes: status.changes.map((c) => ({ path: c.path, change: c.change })),
    markers: status.markers.map((m) => ({ path: m.path, ranges: m.ranges })),
    invalid: status.invalid.map((i) => ({ path: i.path, reason: i.reason })),
    recoveryPending: status.recoveryPending,
    ...(status.held === undefined || status.held.length === 0 ? {} : { held: status.held }),
    ...(status.keptOut === undefined || status.keptOut.length === 0
      ? {}
      : { keptOut: status.keptOut }),
  })}\n`;

/**
 * A file's unified diff with its name shown in the file header lines (`diff --git`,
 * `--- a/`, `+++ b/`, before the first hunk) as every report shows a name
 * ({@link shownName}): an invisible character there would make it read as another
 * file's. The hunks are the file's text and stay as they are.
 */
const withShownHeader = (file: FileDiff): string => {
  const shown = shownName(file.path);
  if (shown === file.path) return file.diff;
  const hunks = file.diff.indexOf("\n@@");
  const cut = hunks === -1 ? file.diff.length : hunks;
  const header = file.diff
    .slice(0, cut)
    .split("\n")
    .map((line) =>
      line === `diff --git a/${file.path} b/${file.path}`
        ? `diff --git a/${shown} b/${shown}`
        : line === `--- a/${file.path}`
          ? `--- a/${shown}`
          : line === `+++ b/${file.path}`
            ? `+++ b/${shown}`
            : line,
    )
    .join("\n");
  return `${header}${file.diff.slice(cut)}`;
};

/**
 * The text of `quire diff`: the files' unified diffs one after another (with `color`:
 * removed lines red, added green, hunk headers cyan, file headers bold, as git colours
 * them), made terminal-safe, the names in the file headers shown as reports show names.
 */
export const renderDiff = (diff: CopyDiff, options: StatusRenderOptions): string =>
  diff.files
    .map((f) => terminalSafe(withShownHeader(f), true))
    .join("")
    .split("\n")
    .map((line) => {
      if (!options.color || line === "") return line;
      const code = /^(diff --git|new file|deleted file|--- |\+\+\+ )/.test(line)
        ? "\u001b[1m"
        : line.startsWith("@@")
          ? "\u001b[36m"
          : line.startsWith("-")
            ? "\u001b[31m"
            : line.startsWith("+")
              ? "\u001b[32m"
              : "";
      return code === "" ? line : `${code}${line}\u001b[0m`;
    })
    .join("\n");

/**
 * The text of `quire diff --stat`, as git prints it: one line per file, ` path | N +-`
 * with the bars scaled to at most 40 columns (every changed file gets at least one),
 * then ` K files changed, I insertions(+), D deletions(-)`.
 */
export const renderDiffStat = (diff: CopyDiff, options: StatusRenderOptions): string => {
  if (diff.files.length === 0) return "";
  const paint = (code: string, text: string) =>
    options.color && text !== "" ? `${code}${text}\u001b[0m` : text;
  // Aligned on the names as shown: U+FFFD may stand for two code units (a tag character).
  const rows = diff.files.map((f) => ({ ...f, shown: shownName(f.path) }));
  const width = Math.max(...rows.map((f) => f.shown.length));
  const most = Math.max(...diff.files.map((f) => f.insertions + f.deletions));
  const digits = String(most).length;
  const scale = most > 40 ? 40 / most : 1;
  const bar = (count: number) => (count === 0 ? 0 : Math.max(1, Math.round(count * scale)));
  const lines = rows.map((f) =>
    ` ${f.shown.padEnd(width)} | ${String(f.insertions + f.deletions).padStart(digits)} ${paint("\u001b[32m", "+".repeat(bar(f.insertions)))}${paint("\u001b[31m", "-".repeat(bar(f.deletions)))}`.trimEnd(),
  );
  const insertions = diff.files.reduce((n, f) => n + f.insertions, 0);
  const deletions = diff.files.reduce((n, f) => n + f.deletions, 0);
  const parts = [`${diff.files.length} file${diff.files.length === 1 ? "" : "s"} changed`];
  if (insertions > 0) parts.push(`${insertions} insertion${insertions === 1 ? "" : "s"}(+)`);
  if (deletions > 0) parts.push(`${deletions} deletion${deletions === 1 ? "" : "s"}(-)`);
  return `${lines.join("\n")}\n ${parts.join(", ")}\n`;
};

/** A file diff with exactly its fields, in their documented order (for JSON). */
const fileDiffFields = (f: FileDiff): FileDiff => ({
  path: f.path,
  change: f.change,
  insertions: f.insertions,
  deletions: f.deletions,
  diff: f.diff,
});

/** The JSON `quire diff --json` prints (one line), with the copy's directory. */
export const diffJson = (diff: CopyDiff & { readonly path: string }): string =>
  `${JSON.stringify({
    path: diff.path,
    generation: diff.generation,
    files: diff.files.map(fileDiffFields),
  })}\n`;

/**
 * The text of `quire show`: the publication's header line and whole message as the log
 * prints them, a blank line, then each file's unified diff (coloured as `quire diff`).
 */
export const renderShown = (
  shown: ShownPublication,
  options: { readonly color: boolean },
): string =>
  // The record's text ends with the blank line that separates it from its files.
  `${renderRecord({ ...shown, publicationId: "", files: [] }, { ...options, full: true })}${renderDiff({ generation: shown.generation, files: shown.files }, options)}`;

/** The JSON `quire show --json` prints (one line), with the copy's directory. */
export const shownJson = (shown: ShownPublication & { readonly path: string }): string =>
  `${JSON.stringify({
    path: shown.path,
    generation: shown.generation,
    time: shown.time,
    author: { name: shown.author.name, version: shown.author.version },
    message: shown.message,
    files: shown.files.map(fileDiffFields),
  })}\n`;

/**
 * What `quire restore` or `quire revert` prints: one line per file written
 * (`  A path`, `M`, `D`), the files held because someone saved them during the call,
 * and what to do next (commit).
 */
export const renderRestored = (restored: RestoredFiles, what: "Restore" | "Revert"): string => {
  const letter = { added: "A", modified: "M", deleted: "D" } as const;
  const verb =
    what === "Restore"
      ? `restored from generation ${restored.generation}`
      : `generation ${restored.generation} undone`;
  const lines = [
    restored.files.length > 0
      ? `${verb}:`
      : restored.held.length > 0
        ? `nothing written: every file it would change was saved during the call`
        : restored.absentThen !== undefined && restored.absentThen.length > 0
          ? `nothing to change: not in generation ${restored.generation}, so left deleted:`
          : `nothing to change: ${verb} already`,
    ...restored.files.map((f) => `  ${letter[f.change]} ${shownName(f.path)}`),
  ];
  // Named files the copy deleted that GEN did not have: they stay deleted.
  if (restored.absentThen !== undefined && restored.absentThen.length > 0) {
    if (restored.files.length > 0 || restored.held.length > 0)
      lines.push(`not in generation ${restored.generation}, so left deleted:`);
    lines.push(...restored.absentThen.map((path) => `  ${shownName(path)}`));
  }
  if (restored.held.length > 0)
    lines.push(
      "saved by someone during the call, left as they were (run it again):",
      ...restored.held.map((path) => `  ${shownName(path)}`),
    );
  if (restored.files.length > 0) lines.push("quire commit publishes it");
  return `${lines.join("\n")}\n`;
};

/** The JSON `quire restore --json` and `quire revert --json` print (one line). */
export const restoredJson = (restored: RestoredFiles & { readonly path: string }): string =>
  `${JSON.stringify({
    path: restored.path,
    generation: restored.generation,
    files: restored.files.map((f) => ({ path: f.path, change: f.change })),
    held: restored.held,
    ...(restored.absentThen === undefined ? {} : { absentThen: restored.absentThen }),
  })}\n`;
