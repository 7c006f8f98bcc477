/**
 * Private state P of one working copy (SPEC §8): the accepted baseline, the object
 * cache (verified packs) and the state record, below the private root.
 *
 * Layout of `<privateRoot>/copies/<key>/`:
 * - `state.json` — the strict versioned state record (small; rewritten to flip
 *   `recoveryRequired` without touching the baseline);
 * - `baseline-<generation>-<n>.json` — the baseline index: path → blob in a cached pack;
 * - `stats.json` — a best-effort stat cache of the working copy (losing it only costs re-reads);
 * - `packs/<sha256>.pack` — verified packs the baseline's blobs live in;
 * - `lock` — the cross-process lock.
 */
import { keyDigest } from "../../keyDigest.js";
import { join } from "node:path";
import { Clock, Effect, Either, Option, ParseResult, Schema } from "effect";
import { alongside } from "../shared/pooled.js";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { encodeText } from "../../../domain/content.js";
import { nameOf } from "../../../domain/paths.js";
import { parseStrictJson } from "../../../domain/strictJson.js";
import { leftoverTempName, type FileSystemService } from "../../../ports/FileSystem.js";
import { localFailure, privateRootNamed } from "../shared/failures.js";
import { makeRecentMap, type RecentMap } from "../shared/recentMap.js";

/** Where one blob of the baseline lives: `size` bytes at `offset` of cached pack `pack`. */
export interface BlobRef {
  readonly id: string;
  readonly pack: string;
  readonly offset: number;
  readonly size: number;
}

/** What `lstat` said about a working-copy file whose content id is known. */
export interface StatStamp {
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly ino: number;
  readonly id: string;
}

/** The decoded private state of a working copy. */
export interface CopyState {
  /** The accepted manifest generation the baseline belongs to (0 = empty notebook). */
  readonly generation: number;
  /** The head publication id at that generation ("" at generation 0). */
  readonly head: string;
  /** The accepted tree, with where each blob is cached. */
  readonly baseline: ReadonlyMap<string, BlobRef>;
  /** The name of the baseline file `baseline` was read from. */
  readonly baselineFile: string;
  /** Set before the working copy is rewritten, cleared once it and the baseline are durable. */
  readonly recoveryRequired: boolean;
  /**
   * Files a rewrite left as a person saved them during the call (rewrite.ts), each with
   * the entry the next merge must take as its base instead of the baseline's (`null`:
   * none). Empty but for such files. The baseline itself stays exactly the accepted tree
   * it names, so the remote state is always read onto it correctly.
   */
  readonly held: ReadonlyMap<string, BlobRef | null>;
}

/**
 * The tree the next three-way merge of a copy takes as its base: the baseline, with the
 * entries of held files (see {@link CopyState.held}) in place of the baseline's.
 */
export const mergeBaseOf = (state: CopyState): ReadonlyMap<string, BlobRef> => {
  if (state.held.size === 0) return state.baseline;
  const base = new Map(state.baseline);
  for (const [path, ref] of state.held) {
    if (ref === null) base.delete(path);
    else base.set(path, ref);
  }
  return base;
};

const stateVersion = 1;
const privateFileMode = 0o600;
const privateDirMode = 0o700;

/**
 * The private directory of a working copy: keyed by a SHA-256 of a length-prefixed
 * encoding of (canonical working-copy path, store identity), so two stores never
 * share state and no path can collide with another by concatenation.
 */
export const copyDirectory = (
  privateRoot: string,
  canonicalPath: string,
  storeIdentity: string,
): string => join(privateRoot, "copies", keyDigest([canonicalPath, storeIdentity]));

/** The cached pack file of a pack with SHA-256 `sha`. */
export const packFile = (copyDir: string, sha: string): string =>
  join(copyDir, "packs", `${sha}.pack`);

/**
 * The lock file first pulls of `storeIdentity` take turns on (notebookLayer.ts), in the
 * private root's `turns/` directory: outside `copies/`, so that no copy's directory is it.
 */
export const firstPullsLockFile = (privateRoot: string, storeIdentity: string): string =>
  join(privateRoot, "turns", `${keyDigest(["first pulls", storeIdentity])}.lock`);

/** Creates the directory of {@link firstPullsLockFile} when missing. LOCAL_IO when it fails. */
export const ensureTurnsDirectory = (
  fs: FileSystemService,
  privateRoot: string,
): Effect.Effect<void, DomainError> => makePrivateDirectory(fs, join(privateRoot, "turns"));

/**
 * Removes a copy's state record: the copy then reads as never pulled ({@link loadState}
 * reads the record before its memo). LOCAL_IO when it cannot be removed.
 */
export const forgetState = (
  fs: FileSystemService,
  copyDir: string,
): Effect.Effect<void, DomainError> =>
  fs
    .removeFile(join(copyDir, "state.json"))
    .pipe(
      Effect.mapError((error) =>
        localFailure(error, `removing private state in the ${privateRootNamed}`),
      ),
    );

/** The lock file of a working copy's private state. */
export const lockFile = (copyDir: string): string => join(copyDir, "lock");

/** The name of a baseline file in a copy's private directory. */
const baselineFileName = /^baseline-[0-9]+-[0-9a-z]+\.json$/;

const StateRecord = Schema.Struct({
  version: Schema.Literal(stateVersion),
  generation: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(0)),
  head: Schema.String,
  baseline: Schema.String.pipe(Schema.pattern(baselineFileName)),
  recoveryRequired: Schema.Boolean,
});
const decodeStateRecord = ParseResult.decodeUnknownEither(StateRecord, {
  onExcessProperty: "error",
});

const invalidState = (problem: string): DomainError =>
  domainError({
    code: "STORAGE_INTEGRITY",
    reason: "STATE_INVALID",
    message: `This working copy's private state is unreadable (${problem}).`,
  });

const readText = (
  fs: FileSystemService,
  path: string,
): Effect.Effect<Option.Option<string>, DomainError> =>
  fs.readFile(path).pipe(
    Effect.map((bytes) => Option.some(new TextDecoder().decode(bytes))),
    Effect.catchTag("FsError", (error) =>
      error.reason === "NotFound"
        ? Effect.succeed(Option.none<string>())
        : Effect.fail(localFailure(error, `reading private state in the ${privateRootNamed}`)),
    ),
  );

const parseOrInvalid = (text: string): Effect.Effect<unknown, DomainError> => {
  const parsed = parseStrictJson(text);
  return parsed.ok ? Effect.succeed(parsed.value) : Effect.fail(invalidState(parsed.problem));
};

const readJson = (
  fs: FileSystemService,
  path: string,
): Effect.Effect<Option.Option<unknown>, DomainError> =>
  readText(fs, path).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.succeed(Option.none()),
        onSome: (text) => parseOrInvalid(text).pipe(Effect.map(Option.some)),
      }),
    ),
  );

const isSha = (value: unknown): value is string =>
  typeof value === "string" && /^[0-9a-f]{64}$/.test(value);
const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 0;

/** One `[path, packIndex, offset, size, id]` entry of a baseline file, or why it is bad. */
const decodeEntry = (
  entry: unknown,
  packs: ReadonlyArray<string>,
): Either.Either<readonly [string, BlobRef], string> => {
  if (!Array.isArray(entry) || entry.length !== 5) return Either.left("bad file entry");
  const [path, packIndex, offset, size, id] = entry;
  if (
    typeof path !== "string" ||
    !isCount(packIndex) ||
    !isCount(offset) ||
    !isCount(size) ||
    !isSha(id)
  ) {
    return Either.left("bad file entry");
  }
  const pack = packs[packIndex];
  if (pack === undefined) return Either.left("file entry names a missing pack");
  return Either.right([path, { id, pack, offset, size }]);
};

/**
 * A baseline file: `{version, packs, files}` and, when files are held (CopyState.held),
 * `held`: entries as in `files`, or `[path]` for a held file with no base.
 */
const decodeBaseline = (
  raw: unknown,
): Either.Either<
  { readonly files: Map<string, BlobRef>; readonly held: Map<string, BlobRef | null> },
  string
> => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return Either.left("baseline is not an object");
  if (!("version" in raw) || raw.version !== stateVersion)
    return Either.left("unknown baseline version");
  if (!("packs" in raw) || !Array.isArray(raw.packs) || !raw.packs.every(isSha))
    return Either.left("bad pack list");
  if (!("files" in raw) || !Array.isArray(raw.files)) return Either.left("bad file list");
  const heldRaw: unknown = "held" in raw ? raw.held : [];
  if (!Array.isArray(heldRaw)) return Either.left("bad held list");
  if (Object.keys(raw).length !== ("held" in raw ? 4 : 3))
    return Either.left("unknown baseline field");
  const packs: ReadonlyArray<string> = raw.packs;
  const files = new Map<string, BlobRef>();
  for (const entry of raw.files) {
    const decoded = decodeEntry(entry, packs);
    if (Either.isLeft(decoded)) return Either.left(decoded.left);
    const [path, ref] = decoded.right;
    if (files.has(path)) return Either.left("duplicate path");
    files.set(path, ref);
  }
  const held = new Map<string, BlobRef | null>();
  for (const entry of heldRaw) {
    if (Array.isArray(entry) && entry.length === 1 && typeof entry[0] === "string") {
      held.set(entry[0], null);
      continue;
    }
    const decoded = decodeEntry(entry, packs);
    if (Either.isLeft(decoded)) return Either.left(decoded.left);
    held.set(decoded.right[0], decoded.right[1]);
  }
  return Either.right({ files, held });
};

/**
 * What one process remembers of the private state it decoded or wrote, per private
 * directory, so that a long-lived server does not re-read and re-decode a 10,000-entry
 * baseline and stat cache on every call. Never trusted blindly: a remembered baseline is
 * used only when `state.json` still has the exact text it was remembered with (baseline
 * files are write-once under unique names, so the text names its content), and a
 * remembered stat cache only while `stats.json` shows the same inode, size and times
 * (every rewrite renames a new file into place). Another process changing the private
 * state therefore just costs a re-read here.
 */
export interface PrivateStateMemo {
  readonly states: RecentMap<{ readonly recordText: string; readonly state: CopyState }>;
  readonly stats: RecentMap<{ readonly stamp: string; readonly cache: StatCache }>;
}

/**
 * An empty memo (one per Notebook service) remembering at most `maxCopies` working
 * copies (default 16): a server for a large fleet keeps the copies in use decoded, not
 * every copy it ever served (a 10,000-file baseline is a few MB decoded). A forgotten
 * copy's next call just reads its state again.
 */
export const makePrivateStateMemo = (maxCopies = 16): PrivateStateMemo => ({
  states: makeRecentMap(maxCopies),
  stats: makeRecentMap(maxCopies),
});

/**
 * Loads the state of a working copy: `None` if it was never pulled. A corrupt or
 * unknown-version record is STORAGE_INTEGRITY/STATE_INVALID.
 */
export const loadState = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
): Effect.Effect<Option.Option<CopyState>, DomainError> =>
  Effect.gen(function* () {
    const recordText = yield* readText(fs, join(copyDir, "state.json"));
    if (Option.isNone(recordText)) {
      memo.states.delete(copyDir);
      return Option.none();
    }
    const remembered = memo.states.get(copyDir);
    if (remembered !== undefined && remembered.recordText === recordText.value)
      return Option.some(remembered.state);
    const record = decodeStateRecord(yield* parseOrInvalid(recordText.value));
    if (Either.isLeft(record)) return yield* Effect.fail(invalidState("bad state record"));
    const rawBaseline = yield* readJson(fs, join(copyDir, record.right.baseline));
    if (Option.isNone(rawBaseline))
      return yield* Effect.fail(invalidState("baseline file missing"));
    const baseline = decodeBaseline(rawBaseline.value);
    if (Either.isLeft(baseline)) return yield* Effect.fail(invalidState(baseline.left));
    const state: CopyState = {
      generation: record.right.generation,
      head: record.right.head,
      baseline: baseline.right.files,
      baselineFile: record.right.baseline,
      recoveryRequired: record.right.recoveryRequired,
      held: baseline.right.held,
    };
    memo.states.set(copyDir, { recordText: recordText.value, state });
    return Option.some(state);
  });

const writeDurable = (
  fs: FileSystemService,
  path: string,
  text: string,
): Effect.Effect<void, DomainError> =>
  fs
    .writeFileAtomic(path, encodeText(text), { mode: privateFileMode, durable: true })
    .pipe(
      Effect.mapError((error) =>
        localFailure(error, `writing private state in the ${privateRootNamed}`),
      ),
    );

/** Creates `dir` (and its missing parents) with mode 0700. LOCAL_IO when it fails. */
const makePrivateDirectory = (
  fs: FileSystemService,
  dir: string,
): Effect.Effect<void, DomainError> =>
  fs
    .makeDirectory(dir, privateDirMode)
    .pipe(
      Effect.mapError((error) =>
        localFailure(error, `creating private state in the ${privateRootNamed}`),
      ),
    );

/** Creates the private directory of a copy (and its pack cache) with mode 0700. */
export const ensureCopyDirectory = (
  fs: FileSystemService,
  copyDir: string,
): Effect.Effect<void, DomainError> => makePrivateDirectory(fs, join(copyDir, "packs"));

/** Durably writes the state record of `state` and remembers it. */
const writeRecord = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
  state: CopyState,
): Effect.Effect<CopyState, DomainError> => {
  const recordText = JSON.stringify({
    version: stateVersion,
    generation: state.generation,
    head: state.head,
    baseline: state.baselineFile,
    recoveryRequired: state.recoveryRequired,
  });
  // Forgotten first: if the write fails, what is on disk is unknown.
  memo.states.delete(copyDir);
  return writeDurable(fs, join(copyDir, "state.json"), recordText).pipe(
    Effect.tap(() => Effect.sync(() => memo.states.set(copyDir, { recordText, state }))),
    Effect.as(state),
  );
};

/** Durably marks the copy as needing recovery before its working copy is rewritten. */
export const markRecoveryRequired = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
  state: CopyState,
): Effect.Effect<CopyState, DomainError> =>
  writeRecord(fs, copyDir, memo, { ...state, recoveryRequired: true });

/** The tree a baseline records, and the publication it is the state of. */
export interface BaselineOf {
  readonly generation: number;
  readonly head: string;
  readonly baseline: ReadonlyMap<string, BlobRef>;
  /** The held files' merge bases (see {@link CopyState.held}); none when absent. */
  readonly held?: ReadonlyMap<string, BlobRef | null>;
}

/** A baseline file written durably that no state record names yet. */
export interface BaselineFile {
  readonly of: BaselineOf;
  /** Its name in the copy's private directory. */
  readonly name: string;
  /** The cached packs it refers to. */
  readonly packs: ReadonlySet<string>;
}

/**
 * Durably writes the baseline file of `of` (named with `uniqueSuffix`). Nothing names it
 * until {@link recordBaseline} does, so it may be written early, alongside other
 * writes; one left unrecorded (a failed or crashed call) is removed by a later prune.
 */
export const writeBaselineFile = (
  fs: FileSystemService,
  copyDir: string,
  of: BaselineOf,
  uniqueSuffix: string,
): Effect.Effect<BaselineFile, DomainError> =>
  Effect.suspend(() => {
    const packIndex = new Map<string, number>();
    const entryOf = (path: string, ref: BlobRef): [string, number, number, number, string] => {
      let index = packIndex.get(ref.pack);
      if (index === undefined) {
        index = packIndex.size;
        packIndex.set(ref.pack, index);
      }
      return [path, index, ref.offset, ref.size, ref.id];
    };
    const files = [...of.baseline].map(([path, ref]) => entryOf(path, ref));
    const held = [...(of.held ?? [])].map(([path, ref]) =>
      ref === null ? [path] : entryOf(path, ref),
    );
    const name = `baseline-${of.generation}-${uniqueSuffix}.json`;
    return writeDurable(
      fs,
      join(copyDir, name),
      JSON.stringify({
        version: stateVersion,
        packs: [...packIndex.keys()],
        files,
        ...(held.length === 0 ? {} : { held }),
      }),
    ).pipe(Effect.as({ of, name, packs: new Set(packIndex.keys()) }));
  });

/**
 * Durably records `written` as the baseline (the state record pointing at it, with
 * `recoveryRequired` cleared), then removes every other baseline file and the cached
 * packs it does not refer to (best effort). The caller has made the packs it refers
 * to durable. The removal runs when `schedulePrune` runs it: at once by default; a
 * call may leave it for after its answer (shared/afterAnswer.ts), since nothing it answers
 * depends on it.
 */
export const recordBaseline = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
  written: BaselineFile,
  schedulePrune: (prune: Effect.Effect<void>) => Effect.Effect<void> = (prune) => prune,
): Effect.Effect<CopyState, DomainError> =>
  writeRecord(fs, copyDir, memo, {
    generation: written.of.generation,
    head: written.of.head,
    baseline: written.of.baseline,
    baselineFile: written.name,
    recoveryRequired: false,
    held: written.of.held ?? new Map(),
  }).pipe(Effect.tap(() => schedulePrune(prune(fs, copyDir, written.name, written.packs))));

/**
 * {@link writeBaselineFile} then {@link recordBaseline}. `ready` — what must be durable
 * before the record may name the baseline — runs alongside the baseline file's write
 * (one fsync round less on the way to the record); its failure, like the writes',
 * fails the call with the record unchanged.
 */
export const saveBaseline = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
  of: BaselineOf,
  uniqueSuffix: string,
  ready: Effect.Effect<void, DomainError> = Effect.void,
  schedulePrune?: (prune: Effect.Effect<void>) => Effect.Effect<void>,
): Effect.Effect<CopyState, DomainError> =>
  alongside(ready, writeBaselineFile(fs, copyDir, of, uniqueSuffix)).pipe(
    Effect.flatMap(([, written]) => recordBaseline(fs, copyDir, memo, written, schedulePrune)),
  );

/**
 * How old a temporary file of the private state (`.<name>.quire-<id>.tmp`: a record or a
 * pack being written) must be before a prune removes it. One being written is
 * milliseconds old; one an hour old was left by a process killed mid-write (a second
 * SIGINT, SIGKILL), and nothing else would ever remove it — a pack's is as large as the
 * pack. The same bound as the file store's `tmp/`.
 */
const staleTempMs = 60 * 60 * 1000;

/**
 * Deletes the baseline files other than `baselineFile` (the previous one, and any a
 * failed or crashed call wrote without recording it), the cached packs the baseline no
 * longer references, and temporary files older than {@link staleTempMs}; never fails.
 */
const prune = (
  fs: FileSystemService,
  copyDir: string,
  baselineFile: string,
  keep: ReadonlySet<string>,
): Effect.Effect<void> =>
  Effect.all([fs.walk(copyDir), Clock.currentTimeMillis]).pipe(
    Effect.flatMap(([entries, nowMs]) =>
      Effect.forEach(
        entries.filter((entry) => {
          const pack = /^packs\/([0-9a-f]{64})\.pack$/.exec(entry.relativePath);
          if (pack !== null) return pack[1] !== undefined && !keep.has(pack[1]);
          if (leftoverTempName.test(nameOf(entry.relativePath)))
            return entry.kind === "file" && nowMs - entry.mtimeMs > staleTempMs;
          return baselineFileName.test(entry.relativePath) && entry.relativePath !== baselineFile;
        }),
        (entry) => fs.removeFile(join(copyDir, ...entry.relativePath.split("/"))),
        // Side by side: one at a time, each removal waited for its own thread-pool round trip.
        { discard: true, concurrency: 16 },
      ),
    ),
    Effect.ignore,
  );

/** The best-effort stat cache and when it was recorded. */
export interface StatCache {
  readonly stamps: ReadonlyMap<string, StatStamp>;
  readonly recordedAtMs: number;
}

const emptyStats: StatCache = { stamps: new Map(), recordedAtMs: 0 };

const statsFile = (copyDir: string): string => join(copyDir, "stats.json");

/** What identifies one version of `stats.json` (`None`: absent or unreadable). */
const statsStamp = (fs: FileSystemService, copyDir: string): Effect.Effect<Option.Option<string>> =>
  fs.info(statsFile(copyDir)).pipe(
    Effect.map(Option.map((i) => `${i.ino}:${i.size}:${i.mtimeMs}:${i.ctimeMs}`)),
    Effect.orElseSucceed(() => Option.none<string>()),
  );

/** Reads the best-effort stat cache; anything unreadable is an empty cache. */
export const loadStats = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
): Effect.Effect<StatCache> =>
  Effect.gen(function* () {
    const stamp = yield* statsStamp(fs, copyDir);
    if (Option.isNone(stamp)) {
      memo.stats.delete(copyDir);
      return emptyStats;
    }
    const remembered = memo.stats.get(copyDir);
    if (remembered !== undefined && remembered.stamp === stamp.value) return remembered.cache;
    // Stamped before reading: a concurrent rewrite makes the stamp stale, never the content.
    const cache = yield* readStats(fs, copyDir);
    memo.stats.set(copyDir, { stamp: stamp.value, cache });
    return cache;
  });

const readStats = (fs: FileSystemService, copyDir: string): Effect.Effect<StatCache> =>
  readJson(fs, statsFile(copyDir)).pipe(
    Effect.map((raw): StatCache => {
      if (Option.isNone(raw)) return emptyStats;
      const value = raw.value;
      if (
        typeof value !== "object" ||
        value === null ||
        !("entries" in value) ||
        !Array.isArray(value.entries)
      )
        return emptyStats;
      if (!("recordedAtMs" in value) || typeof value.recordedAtMs !== "number") return emptyStats;
      const stamps = new Map<string, StatStamp>();
      for (const entry of value.entries) {
        if (!Array.isArray(entry) || entry.length !== 6) continue;
        const [path, size, mtimeMs, ctimeMs, ino, id] = entry;
        if (
          typeof path !== "string" ||
          !isCount(size) ||
          typeof mtimeMs !== "number" ||
          typeof ctimeMs !== "number" ||
          !isCount(ino) ||
          !isSha(id)
        )
          continue;
        stamps.set(path, { size, mtimeMs, ctimeMs, ino, id });
      }
      return { stamps, recordedAtMs: value.recordedAtMs };
    }),
    Effect.orElseSucceed(() => emptyStats),
  );

/** Writes the stat cache without fsync; a failure only costs re-reads later. */
export const saveStats = (
  fs: FileSystemService,
  copyDir: string,
  memo: PrivateStateMemo,
  stats: StatCache,
): Effect.Effect<void> =>
  Effect.sync(() => memo.stats.delete(copyDir)).pipe(
    Effect.zipRight(writeStats(fs, copyDir, stats)),
    Effect.zipRight(statsStamp(fs, copyDir)),
    Effect.tap((stamp) =>
      Effect.sync(() => {
        if (Option.isSome(stamp)) memo.stats.set(copyDir, { stamp: stamp.value, cache: stats });
      }),
    ),
    Effect.asVoid,
    Effect.ignore,
  );

const writeStats = (fs: FileSystemService, copyDir: string, stats: StatCache) =>
  fs.writeFileAtomic(
    statsFile(copyDir),
    encodeText(
      JSON.stringify({
        version: stateVersion,
        recordedAtMs: stats.recordedAtMs,
        entries: [...stats.stamps].map(([path, s]) => [
          path,
          s.size,
          s.mtimeMs,
          s.ctimeMs,
          s.ino,
          s.id,
        ]),
      }),
    ),
    { mode: privateFileMode, durable: false },
  );
