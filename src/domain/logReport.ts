/**
 * What `quire log` prints (SPEC §11, docs/history.md): each publication newest first, as
 * text for people or as JSON for scripts. Text from the store (messages, authors) is
 * made safe for a terminal: a hostile message must not be able to move the cursor or
 * rewrite what the terminal showed, so every control character but a tab (and, in a
 * whole message, a newline), and the bidirectional controls, are shown as `\u{FFFD}`;
 * a file's name also shows a tab and invisible characters so (shownText.ts).
 */
import { fileFields, type HistoryLog, type PublicationRecord } from "./history.js";
import { shownName, terminalSafe } from "./shownText.js";

/** Rendering options. */
export interface LogRenderOptions {
  /** ANSI colour (only on a TTY and when NO_COLOR is empty or unset). */
  readonly color: boolean;
  /** Whole messages, not their first lines. */
  readonly full: boolean;
  /** The request's `sinceGeneration`, if any: an empty answer says why when above the notebook's. */
  readonly sinceGeneration?: number;
  /**
   * The request's `file`, if any: an empty answer names it, since a bare "no
   * publications" would read as an empty notebook (a misspelt name, say).
   */
  readonly file?: string;
}

const yellow = "\u001b[33m";
const green = "\u001b[32m";
const red = "\u001b[31m";
const reset = "\u001b[0m";

const firstLine = (message: string): string => message.split(/\r?\n/, 1)[0] ?? "";

const changeLetter = { added: "A", modified: "M", deleted: "D" } as const;

/** One publication of the log's text (see {@link renderLog}), LF-terminated. */
export const renderRecord = (record: PublicationRecord, options: LogRenderOptions): string => {
  const paint = (code: string, text: string) => (options.color ? `${code}${text}${reset}` : text);
  const who = [record.author.name, record.author.version === "" ? "" : `(${record.author.version})`]
    .filter((part) => part !== "")
    .join(" ");
  const lines = [
    `${paint(yellow, `generation ${record.generation}`)}  ${terminalSafe(record.time)}  ${terminalSafe(who)}`,
  ];
  const message = options.full
    ? terminalSafe(record.message.replace(/\r\n/g, "\n"), true)
    : terminalSafe(firstLine(record.message));
  for (const line of message.split("\n")) lines.push(line === "" ? "" : `    ${line}`);
  lines.push("");
  for (const file of record.files) {
    const counts = [
      ...(file.insertions > 0 ? [paint(green, `+${file.insertions}`)] : []),
      ...(file.deletions > 0 ? [paint(red, `-${file.deletions}`)] : []),
    ];
    lines.push(
      `    ${changeLetter[file.change]} ${shownName(file.path)}  ${counts.length === 0 ? "0" : counts.join(" ")}`,
    );
  }
  return `${lines.join("\n")}\n`;
};

/**
 * The text of a log, every line LF-terminated: per publication a header line
 * (`generation 12  2026-12-02T07:10:00.000Z  reviewer (claude-code 1.2.3)`), its message
 * indented (the first line; all of it with `full`), a blank line and one line per file
 * (`A`dded, `M`odified, `D`eleted, path, `+insertions -deletions`), publications
 * separated by a blank line. A last line says so when older publications are not
 * recorded; an empty notebook prints `no publications`, and a `sinceGeneration` at or
 * above the notebook's generation, or a `file` no publication changed, says the
 * generation the notebook is at.
 */
export const renderLog = (log: HistoryLog, options: LogRenderOptions): string => {
  const parts = log.publications.map((record) => renderRecord(record, options));
  if (parts.length === 0 && log.unrecordedThrough === undefined) {
    if (options.sinceGeneration !== undefined && options.sinceGeneration >= log.generation)
      return `no publications after generation ${options.sinceGeneration}: the notebook is at generation ${log.generation}\n`;
    if (options.file !== undefined && log.generation > 0)
      return `no publications changed ${shownName(options.file)} or a file below it${options.sinceGeneration === undefined ? "" : ` after generation ${options.sinceGeneration}`}: the notebook is at generation ${log.generation} (notebook paths are relative to the copy's top and case-sensitive)\n`;
    return "no publications\n";
  }
  if (log.unrecordedThrough !== undefined)
    parts.push(
      `publications up to generation ${log.unrecordedThrough} have no record (written before this notebook kept its history, or a damaged history segment)\n`,
    );
  return parts.join("\n");
};

/** The object `quire log --json` prints (docs/history.md). */
export interface LogJson {
  readonly path: string;
  readonly generation: number;
  readonly publications: ReadonlyArray<Omit<PublicationRecord, "publicationId">>;
  readonly unrecordedThrough?: number;
}

/**
 * The log as `quire log --json` prints it, with the copy's directory. Publication ids
 * stay out, as in every output of quire (SPEC §2.3): the generation names a publication.
 */
export const logObject = (log: HistoryLog & { readonly path: string }): LogJson => ({
  path: log.path,
  generation: log.generation,
  publications: log.publications.map((p) => ({
    generation: p.generation,
    time: p.time,
    author: { name: p.author.name, version: p.author.version },
    message: p.message,
    files: p.files.map(fileFields),
  })),
  ...(log.unrecordedThrough === undefined ? {} : { unrecordedThrough: log.unrecordedThrough }),
});

/** The JSON `quire log --json` prints: {@link logObject} on one line. */
export const logJson = (log: HistoryLog & { readonly path: string }): string =>
  `${JSON.stringify(logObject(log))}\n`;
