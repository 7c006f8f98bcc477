/**
 * The publication log (SPEC §11, docs/history.md): what each publication was — its
 * generation, id, time, author, message and per-file insertions/deletions — in a form
 * that outlives the packs a checkpoint replaces.
 *
 * An increment pack already records its publication; a checkpoint replaces increments,
 * so before it is swapped in, its writer stores a **history segment** beside it: the
 * records of every publication the checkpoint absorbs, and the key of the segment of
 * the checkpoint before (`previous`). A segment is immutable and named after its
 * checkpoint (`history/<generation>-<publication id>.history`), so the segment of any
 * checkpoint a manifest names is found without a new manifest field (the manifest and
 * pack formats are unchanged; a release that knows nothing of `history/` ignores it).
 * A checkpoint writes only the records of the chain it absorbs (never the older ones
 * again), so its cost does not grow with the length of the history; a log of n
 * publications reads about n / `checkpointPacks` segments, one after another.
 *
 * Layout: the ASCII line `QUIRE-HISTORY 1\n`, then one JSON object
 * `{"through":G,"previous":KEY|null,"unrecordedThrough":G,"records":[…]}`, records oldest first.
 */
import { Either, ParseResult, Schema } from "effect";
import { decodeText, encodeText } from "./content.js";
import { describeIssue } from "./schemaProblem.js";
import { parseStrictJson } from "./strictJson.js";

/** What a publication did to one file, with its line counts (SPEC §6.4). */
export interface FileRecord {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
  readonly insertions: number;
  readonly deletions: number;
}

/** A file record with exactly its fields, in their documented order (for JSON). */
export const fileFields = (f: FileRecord): FileRecord => ({
  path: f.path,
  change: f.change,
  insertions: f.insertions,
  deletions: f.deletions,
});

/** One publication, as the log shows it. */
export interface PublicationRecord {
  readonly generation: number;
  readonly publicationId: string;
  /** ISO-8601 UTC time of the publication attempt. */
  readonly time: string;
  readonly author: { readonly name: string; readonly version: string };
  readonly message: string;
  /** Sorted by path. */
  readonly files: ReadonlyArray<FileRecord>;
}

/** One file's change with its unified diff, as `quire diff` and `quire show` show it. */
export interface FileDiff {
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
  readonly insertions: number;
  readonly deletions: number;
  /** Its unified diff (domain/unifiedDiff.ts). */
  readonly diff: string;
}

/** One publication as `quire show` shows it: its record, each file with its diff. */
export interface ShownPublication {
  readonly generation: number;
  readonly time: string;
  readonly author: { readonly name: string; readonly version: string };
  readonly message: string;
  /** Sorted by path. */
  readonly files: ReadonlyArray<FileDiff>;
}

/** What `quire restore` or `quire revert` wrote into the working copy. */
export interface RestoredFiles {
  /** The generation restored from, or reverted. */
  readonly generation: number;
  /** The files written, and how each changed in the copy; sorted by path. */
  readonly files: ReadonlyArray<{
    readonly path: string;
    readonly change: "added" | "modified" | "deleted";
  }>;
  /** Files saved by someone during the call: left as they were saved, for a later call. */
  readonly held: ReadonlyArray<string>;
  /**
   * Files named that the copy deleted (unpublished) and that did not exist at the
   * generation restored from: they stay deleted, which is what that generation had.
   * Only a restore; absent when there are none.
   */
  readonly absentThen?: ReadonlyArray<string>;
}

/** Whether notebook path `path` is one of `paths` or lies below one of them (a directory). */
export const atOrBelowAny = (path: string, paths: ReadonlyArray<string>): boolean =>
  paths.some((p) => path === p || path.startsWith(`${p}/`));

/**
 * {@link atOrBelowAny} for many paths at once: the test of one path looks up it and its
 * directories among `paths`, so it costs the path's depth, not how many `paths` there
 * are (a restore named thousands of files, tested against every file of the notebook).
 */
export const atOrBelowOneOf = (paths: ReadonlyArray<string>): ((path: string) => boolean) => {
  const wanted = new Set(paths);
  return (path) => {
    for (let end = path.length; end > 0; end = path.lastIndexOf("/", end - 1))
      if (wanted.has(path.slice(0, end))) return true;
    return false;
  };
};

/** How many publications a log lists when not told (`quire log` without `-n`). */
export const defaultLogLimit = 50;

/** What a log lists. */
export interface LogRequest {
  /** At most this many publications (≥ 1). */
  readonly limit: number;
  /** Only publications that changed this notebook path, or a file below it. */
  readonly file?: string;
  /** Only publications newer than this generation. */
  readonly sinceGeneration?: number;
}

/** A log: the publications found, newest first. */
export interface HistoryLog {
  /** The generation `current` had when the log was read (0: nothing published). */
  readonly generation: number;
  /** Newest first. */
  readonly publications: ReadonlyArray<PublicationRecord>;
  /**
   * Set when the limit was not reached and publications up to this generation may
   * exist that no longer have a record (a store written before history segments were
   * kept, or a segment that failed validation).
   */
  readonly unrecordedThrough?: number;
}

/** A decoded history segment. */
export interface HistorySegment {
  /** The generation of the checkpoint it belongs to: it records publications up to it. */
  readonly through: number;
  /** The segment holding the publications before its first record; `null`: none kept. */
  readonly previous: string | null;
  /**
   * With no `previous`: publications up to this generation may exist that no segment
   * records (the notebook's history from before its release kept segments); 0 when the
   * records go back to the notebook's first publication.
   */
  readonly unrecordedThrough: number;
  /** Oldest first, generations strictly increasing, none above `through`. */
  readonly records: ReadonlyArray<PublicationRecord>;
}

const magic = "QUIRE-HISTORY 1\n";

const Count = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0));

const FileShape = Schema.Struct({
  path: Schema.String,
  change: Schema.Literal("added", "modified", "deleted"),
  insertions: Count,
  deletions: Count,
});

const RecordShape = Schema.Struct({
  generation: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)),
  publicationId: Schema.String,
  time: Schema.String,
  author: Schema.Struct({ name: Schema.String, version: Schema.String }),
  message: Schema.String,
  files: Schema.Array(FileShape),
});

const SegmentShape = Schema.Struct({
  through: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)),
  previous: Schema.NullOr(Schema.String.pipe(Schema.pattern(/^history\/[^/]+\.history$/))),
  unrecordedThrough: Count,
  records: Schema.Array(RecordShape),
});

const decodeShape = ParseResult.decodeUnknownEither(SegmentShape, {
  onExcessProperty: "error",
  errors: "first",
});

/**
 * The key of the history segment of the checkpoint stored at `checkpointKey`
 * (`packs/checkpoints/<g>-<id>.pack` → `history/<g>-<id>.history`).
 */
export const historyKey = (checkpointKey: string): string =>
  `history/${checkpointKey.slice(checkpointKey.lastIndexOf("/") + 1).replace(/\.pack$/, "")}.history`;

/** Encodes a segment (records oldest first). */
export const encodeHistorySegment = (segment: HistorySegment): Uint8Array =>
  encodeText(
    `${magic}${JSON.stringify({
      through: segment.through,
      previous: segment.previous,
      unrecordedThrough: segment.unrecordedThrough,
      records: segment.records.map((r) => ({
        generation: r.generation,
        publicationId: r.publicationId,
        time: r.time,
        author: { name: r.author.name, version: r.author.version },
        message: r.message,
        files: r.files.map(fileFields),
      })),
    })}`,
  );

/**
 * Decodes a segment strictly: the magic line, one JSON object of exactly the documented
 * fields, generations strictly increasing and none above `through`. The problem on any
 * violation (a segment is checked like a manifest: never half-trusted).
 */
export const decodeHistorySegment = (bytes: Uint8Array): Either.Either<HistorySegment, string> => {
  const decoded = decodeText(bytes);
  if (!("text" in decoded)) return Either.left("not UTF-8 text");
  if (!decoded.text.startsWith(magic)) return Either.left("no QUIRE-HISTORY 1 line");
  const parsed = parseStrictJson(decoded.text.slice(magic.length));
  if (!parsed.ok) return Either.left(parsed.problem);
  const shape = decodeShape(parsed.value);
  if (Either.isLeft(shape)) return Either.left(describeIssue(shape.left));
  const segment = shape.right;
  let last = 0;
  for (const record of segment.records) {
    if (record.generation <= last) return Either.left("generations do not increase");
    last = record.generation;
  }
  if (last > segment.through) return Either.left("a record is newer than its checkpoint");
  return Either.right(segment);
};

/**
 * The segment a checkpoint at `through` stores: the records of the publications it
 * absorbs (`absorbed`, oldest first), linked to the previous checkpoint's segment
 * (`previous`, with its key). Without a previous segment, `unrecordedThrough` says how
 * far back nothing is recorded (0: the absorbed chain starts at the first publication).
 * Never merged with the previous one: a checkpoint writes its own chain's records and
 * nothing more, whatever the length of the history.
 */
export const nextSegment = (
  through: number,
  absorbed: ReadonlyArray<PublicationRecord>,
  previous:
    | { readonly _tag: "Segment"; readonly key: string; readonly segment: HistorySegment }
    | { readonly _tag: "None"; readonly unrecordedThrough: number },
): HistorySegment =>
  previous._tag === "None"
    ? { through, previous: null, unrecordedThrough: previous.unrecordedThrough, records: absorbed }
    : {
        through,
        previous: previous.key,
        unrecordedThrough: previous.segment.unrecordedThrough,
        records: absorbed.filter((r) => r.generation > previous.segment.through),
      };
