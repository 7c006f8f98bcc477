/**
 * The on-disk layout of the file object store (docs/file-store.md), as pure functions:
 * how a key maps to a directory name, how a key directory's entries are read as
 * versions, and the ETag format. No I/O here, so every rule is unit-testable.
 */
import { randomUUID } from "node:crypto";
import { Either, Option } from "effect";

/** The suffix that marks a key directory; `@` is always percent-encoded inside segments. */
export const KEY_DIRECTORY_SUFFIX = "@";

/** Longest key accepted, in UTF-8 bytes (the S3 limit). */
export const MAX_KEY_BYTES = 1024;

// Longest file name most file systems accept, in bytes.
const MAX_NAME_BYTES = 255;

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

const isLiteral = (byte: number): boolean =>
  (byte >= 0x61 && byte <= 0x7a) || // a-z
  (byte >= 0x30 && byte <= 0x39) || // 0-9
  byte === 0x2e || // .
  byte === 0x5f || // _
  byte === 0x2d; // -

const hasLoneSurrogate = (s: string): boolean =>
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

/**
 * Encodes one key segment as a file name: `a-z 0-9 . _ -` stay literal, every other
 * UTF-8 byte becomes `%XX` (upper-case hex). Upper-case letters are escaped too, so two
 * keys differing only in case never collide on a case-insensitive file system, and
 * non-ASCII never meets Unicode normalisation (macOS). Total and injective.
 */
export const encodeSegment = (segment: string): string => {
  let out = "";
  for (const byte of encoder.encode(segment)) {
    out += isLiteral(byte)
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
};

/**
 * Decodes a file name written by {@link encodeSegment}; `None` for anything that is not
 * the canonical encoding of a valid segment (junk in the tree is ignored, not misread).
 */
export const decodeSegment = (name: string): Option.Option<string> => {
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code === 0x25) {
      const hex = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return Option.none();
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (isLiteral(code)) {
      bytes.push(code);
    } else {
      return Option.none();
    }
  }
  let segment: string;
  try {
    segment = strictDecoder.decode(new Uint8Array(bytes));
  } catch {
    return Option.none();
  }
  return isValidSegment(segment) && encodeSegment(segment) === name
    ? Option.some(segment)
    : Option.none();
};

const isValidSegment = (segment: string): boolean =>
  segment.length > 0 &&
  segment !== "." &&
  segment !== ".." &&
  encodeSegment(segment).length + KEY_DIRECTORY_SUFFIX.length <= MAX_NAME_BYTES;

/**
 * Validates a key and returns its encoded segments. A key is a non-empty, well-formed
 * string of at most {@link MAX_KEY_BYTES} UTF-8 bytes, split by `/` into segments that
 * are non-empty, not `.` or `..`, and short enough to be a file name once encoded.
 * `Left` carries a message that does not repeat the key.
 */
export const keySegments = (key: string): Either.Either<ReadonlyArray<string>, string> => {
  if (key.length === 0) return Either.left("the key is empty");
  if (hasLoneSurrogate(key)) return Either.left("the key is not well-formed Unicode");
  if (encoder.encode(key).length > MAX_KEY_BYTES)
    return Either.left(`the key is longer than ${MAX_KEY_BYTES} bytes`);
  const segments = key.split("/");
  for (const segment of segments) {
    if (!isValidSegment(segment))
      return Either.left("the key has an empty, '.', '..' or over-long segment");
  }
  return Either.right(segments.map(encodeSegment));
};

/** What a numbered entry of a key directory is. */
export type VersionKind = "data" | "tombstone" | "other";

/** One numbered entry of a key directory. */
export interface Version {
  readonly n: number;
  readonly kind: VersionKind;
}

/**
 * A key directory as read by one `readdir`: its versions in ascending order and the
 * prune floor (the highest `p<F>` marker; 0 when none) — versions below the floor may
 * have been pruned, so a version linked below it was never seen by anyone.
 */
export interface KeyDirectoryState {
  readonly versions: ReadonlyArray<Version>;
  readonly floor: number;
  readonly markers: ReadonlyArray<number>;
}

/** The type of a directory entry, as `readdir` reports it. */
export type EntryType = "file" | "directory" | "other";

const VERSION_NAME = /^[1-9][0-9]{0,15}$/;
const MARKER_NAME = /^p([1-9][0-9]{0,15})$/;

const parseNumber = (digits: string): Option.Option<number> => {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? Option.some(n) : Option.none();
};

/** The file name of version `n`. */
export const versionName = (n: number): string => String(n);

/** The file name of the prune marker for floor `f`. */
export const markerName = (f: number): string => `p${f}`;

/** Reads a key directory's entries; names that are neither versions nor markers are ignored. */
export const parseKeyDirectory = (
  entries: ReadonlyArray<{ readonly name: string; readonly type: EntryType }>,
): KeyDirectoryState => {
  const versions: Version[] = [];
  const markers: number[] = [];
  for (const { name, type } of entries) {
    if (VERSION_NAME.test(name)) {
      const n = parseNumber(name);
      if (Option.isSome(n)) {
        const kind: VersionKind =
          type === "file" ? "data" : type === "directory" ? "tombstone" : "other";
        versions.push({ n: n.value, kind });
      }
      continue;
    }
    const marker = MARKER_NAME.exec(name);
    const digits = marker?.[1];
    if (digits !== undefined) {
      const f = parseNumber(digits);
      if (Option.isSome(f)) markers.push(f.value);
    }
  }
  versions.sort((a, b) => a.n - b.n);
  markers.sort((a, b) => a - b);
  return { versions, floor: markers[markers.length - 1] ?? 0, markers };
};

/** The highest version of a directory state, if any. */
export const latestVersion = (state: KeyDirectoryState): Option.Option<Version> =>
  Option.fromNullable(state.versions[state.versions.length - 1]);

/**
 * True when a `readdir` could not have been a consistent snapshot: pruning never
 * removes the highest version, so the highest version seen is always at or above the
 * floor. (readdir is not atomic for large directories.)
 */
export const isTorn = (state: KeyDirectoryState): boolean =>
  state.floor > 0 &&
  Option.match(latestVersion(state), {
    onNone: () => true,
    onSome: (v) => v.n < state.floor,
  });

/**
 * Whether `n` can name a version: its name reads back as `n`. A key whose latest version
 * someone numbered at the last safe integer has no next number — a version linked under
 * it would be ignored by every reader.
 */
export const isVersionNumber = (n: number): boolean =>
  VERSION_NAME.test(versionName(n)) && Number.isSafeInteger(n);

/** The ETag of version `n`: its number in decimal, never reused for a key. */
export const formatEtag = (n: number): string => String(n);

/** The version an ETag names; `None` for anything this store never issued. */
export const parseEtag = (etag: string): Option.Option<number> =>
  VERSION_NAME.test(etag) ? parseNumber(etag) : Option.none();

/**
 * The count rule of pruning after committing version `committed`: the highest floor
 * (versions below it go) it allows. A tombstone keeps only itself (a deleted key frees
 * its data); otherwise the newest `retain` versions stay, and nothing is pruned until
 * more than twice that many exist (amortised). `None` when there is nothing to prune.
 * The adapter lowers the floor further to spare versions inside the grace period.
 */
export const pruneFloor = (
  state: KeyDirectoryState,
  committed: Version,
  retain: number,
): Option.Option<number> => {
  const floor = committed.kind === "tombstone" ? committed.n : committed.n - retain + 1;
  const below = state.versions.filter((v) => v.n < floor).length;
  if (floor <= state.floor || below === 0) return Option.none();
  if (committed.kind !== "tombstone" && state.versions.length <= 2 * retain) return Option.none();
  return Option.some(floor);
};

/** The suffix of a key directory moved into `tmp/` to be removed. */
export const GONE_SUFFIX = ".gone";

/**
 * A new name for an entry of `tmp/`: `<pid>-<uuid>` (a temp file being written), with
 * {@link GONE_SUFFIX} for a forgotten key being removed. Unique per call.
 */
export const newTempName = (gone: boolean): string =>
  `${process.pid}-${randomUUID()}${gone ? GONE_SUFFIX : ""}`;

/**
 * Whether `name` is one {@link newTempName} makes. The sweep of dead writers' leftovers
 * removes only such names: anything else there (or wherever a `tmp` someone replaced by
 * a symlink leads) is not the store's to remove.
 */
export const isTempName = (name: string): boolean => {
  const base = name.endsWith(GONE_SUFFIX) ? name.slice(0, -GONE_SUFFIX.length) : name;
  return /^[0-9]{1,10}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(base);
};
