/**
 * The CLI's printed report (SPEC §9): a git-style diffstat on success, the candid error
 * text on a domain error. Whether to colour is the caller's decision (TTY, NO_COLOR).
 */
import type { DomainError } from "./errors.js";
import { errorTextLines, type SuccessReport } from "./envelope.js";
import type { PathSets } from "./pathSets.js";
import { compareCodeUnits } from "./paths.js";
import type { RedactOptions } from "./redact.js";
import { shownName, terminalSafe } from "./shownText.js";
import type { FileChange } from "./treeDiff.js";

/** Rendering options. */
export interface CliRenderOptions {
  /** Emit ANSI colour escapes (only on a TTY and when NO_COLOR is empty or unset). */
  readonly color: boolean;
}

const ansi = {
  green: "\u001b[32m",
  red: "\u001b[31m",
  yellow: "\u001b[33m",
  boldRed: "\u001b[1;31m",
  bold: "\u001b[1m",
  reset: "\u001b[0m",
} as const;

/**
 * The success report, every line LF-terminated:
 *
 * ```text
 * OK  generation 18
 *   archive/old.md  -3
 *   notes/a.md  +1 -1
 *   notes/c.md  +2
 * 3 files changed, 3 insertions(+), 4 deletions(-)
 * ```
 *
 * Files are sorted by path; `+0`/`-0` are omitted, and a file with no line change (an
 * empty file added or deleted) shows `0`. The summary follows `git diff --shortstat`:
 * singular forms for 1, a zero count omitted unless both are zero, and just
 * `0 files changed` for a no-op. A call that first completed an earlier interrupted
 * commit (`interruptedCommit`) says so on the second line, naming its generation; a
 * commit's no-op summary then reads `nothing more to publish: 0 files changed`. Configured path sets
 * follow as `readOnly: …` and `writable: …` lines. With `color`, `OK` and insertions are green, deletions red.
 */
export const renderCliSuccess = (
  report: SuccessReport,
  sets: PathSets,
  options: CliRenderOptions,
  command: "pull" | "commit" = "commit",
): string => {
  const paint = painter(options.color);
  const files = [...report.files].sort((a, b) => compareCodeUnits(a.path, b.path));
  const lines = [`${paint(ansi.green, "OK")}  generation ${report.generation}`];
  // An earlier commit's publication landed before its process stopped; this call settled
  // the copy on it. Said first, so that "0 files changed" below (this call's own
  // publication) cannot read as "nothing of yours was published". Its files are not
  // counted here: the commit does not read them, `quire show` does.
  const completed = report.interruptedCommit?.generation;
  if (completed !== undefined)
    lines.push(
      `completed an earlier commit of this copy, interrupted after the notebook accepted it: generation ${completed} (quire show PATH ${completed} lists its files)`,
    );
  for (const file of files) {
    const counts = [
      ...(file.insertions > 0 ? [paint(ansi.green, `+${file.insertions}`)] : []),
      ...(file.deletions > 0 ? [paint(ansi.red, `-${file.deletions}`)] : []),
    ];
    lines.push(`  ${shownName(file.path)}  ${counts.length === 0 ? "0" : counts.join(" ")}`);
  }
  const summary = summaryLine(
    files.length,
    files.reduce((sum, file) => sum + file.insertions, 0),
    files.reduce((sum, file) => sum + file.deletions, 0),
  );
  lines.push(
    completed !== undefined && files.length === 0 && command === "commit"
      ? `nothing more to publish: ${summary}`
      : summary,
  );
  if (sets.readOnly.length > 0) lines.push(`readOnly: ${sets.readOnly.join(", ")}`);
  if (sets.writable.length > 0) lines.push(`writable: ${sets.writable.join(", ")}`);
  return lines.map((line) => `${line}\n`).join("");
};

/**
 * The lines a CLI commit adds after its report when the merge also changed the working
 * copy with others' publications: a header and one line per file (`added`, `changed`,
 * `deleted`), so a person sees what appeared in their directory. Empty when nothing came in.
 */
export const renderIncoming = (
  changes: ReadonlyArray<FileChange>,
  options: CliRenderOptions,
): string => {
  if (changes.length === 0) return "";
  const paint = painter(options.color);
  const colour = { added: ansi.green, changed: ansi.yellow, deleted: ansi.red } as const;
  const noun = changes.length === 1 ? "file" : "files";
  return [
    `merged in from others (now in the working copy): ${changes.length} ${noun}`,
    ...changes.map(
      (change) =>
        `  ${paint(colour[change.change], change.change.padEnd(7))}  ${shownName(change.path)}`,
    ),
  ]
    .map((line) => `${line}\n`)
    .join("");
};

/**
 * The error report: the candid text of the MCP error envelope (same lines, same
 * redaction), each line LF-terminated, with the MCP tool names a message mentions
 * given as the CLI's commands (`notes_commit` → `quire commit`, `notes_pull` →
 * `quire pull`): a CLI user has no tools to call. With `color`, the `CODE · REASON`
 * line is bold red and the action line bold.
 */
export const renderCliError = (
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  options: CliRenderOptions,
  redaction: RedactOptions = {},
): string => {
  const paint = painter(options.color);
  return (
    errorTextLines(error, diagnosticId, sets, redaction)
      .map(inCliWords)
      // A message may echo text holding control characters that would move a terminal's
      // cursor or recolour it: shown as U+FFFD, as status and log show them (the names
      // of the file lines are already shown so by errorTextLines).
      .map((line) => terminalSafe(line))
      .map((line, index) => {
        if (index === 0) return paint(ansi.boldRed, line);
        if (line.startsWith("action: ")) return paint(ansi.bold, line);
        return line;
      })
      .map((line) => `${line}\n`)
      .join("")
  );
};

/** `git diff --shortstat`'s summary, without its leading space. */
export const summaryLine = (files: number, insertions: number, deletions: number): string => {
  const parts = [`${files} ${files === 1 ? "file" : "files"} changed`];
  if (files === 0) return parts[0] ?? "";
  if (insertions > 0 || deletions === 0)
    parts.push(`${insertions} ${insertions === 1 ? "insertion" : "insertions"}(+)`);
  if (deletions > 0 || insertions === 0)
    parts.push(`${deletions} ${deletions === 1 ? "deletion" : "deletions"}(-)`);
  return parts.join(", ");
};

const painter =
  (color: boolean) =>
  (code: string, text: string): string =>
    color ? `${code}${text}${ansi.reset}` : text;

// A tool's name as a word of the message, not as part of a file name the message echoes
// (`notes_log.md`, `dir/notes_pull`): those are the user's data, shown as they are.
const toolName = (name: string): RegExp =>
  new RegExp(`(?<![/\\w.-])${name}(?![\\w-]|\\.[\\p{L}\\p{N}])`, "gu");

const cliCommands: ReadonlyArray<readonly [RegExp, string]> = [
  [toolName("notes_commit"), "quire commit"],
  [toolName("notes_pull"), "quire pull"],
  [toolName("notes_log"), "quire log"],
];

/** `line` with the MCP tools it names replaced by the CLI commands that do the same. */
export const inCliWords = (line: string): string =>
  cliCommands.reduce((text, [tool, command]) => text.replace(tool, command), line);
