/**
 * Which store a working copy belongs to. Private state is keyed by (path, store), so a
 * copy pulled from one store read as "never pulled" when called with another, and a pull
 * from that other store, as the answer said, then merged the copy's notes into it. The
 * store a directory was last pulled from is recorded under the private root, keyed by the
 * path alone (`<privateRoot>/owners/<digest>`, holding the store's redacted identity), so
 * a call with another store is refused naming the copy's own.
 */
import { join } from "node:path";
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { encodeText } from "../../../domain/content.js";
import type {
  FileSystemService,
  FsError,
  PathInfo,
  RootedTree,
} from "../../../ports/FileSystem.js";
import { keyDigest } from "../../keyDigest.js";
import { localFailure, privateRootNamed } from "../shared/failures.js";
import { copyDirectory, lockFile } from "./privateState.js";

const ownerFile = (privateRoot: string, canonicalPath: string): string =>
  join(privateRoot, "owners", keyDigest(["store of", canonicalPath]));

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Writes `store` as the record for `canonicalPath` (temp + rename, not synced); FsError. */
const writeOwnerFile = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void, FsError> =>
  fs.writeFileAtomic(ownerFile(privateRoot, canonicalPath), encodeText(store), {
    mode: 0o600,
    durable: false,
  });

/**
 * The store a record file names: `None` when there is none, or when what is there is no
 * record (not UTF-8, not a regular file: it says nothing of whose the directory is).
 * FsError when it could not be read: a failed read (EIO, too many open files, a denied
 * permission) says nothing either, and taken as "no record" it let another store's pull
 * take the copy's notes as its own, so the caller fails instead.
 */
const readRecord = (
  fs: FileSystemService,
  file: string,
): Effect.Effect<Option.Option<string>, FsError> =>
  fs.readFile(file).pipe(
    Effect.map((bytes) => Option.some(decoder.decode(bytes))),
    Effect.catchAllDefect(() => Effect.succeed(Option.none<string>())),
    Effect.catchIf(isAbsent, () => Effect.succeed(Option.none<string>())),
  );

/** A failure that means the path is not there (it, or a directory on its way, is missing). */
const isMissing = (error: FsError): boolean =>
  error.reason === "NotFound" || error.reason === "NotADirectory";

/** A failure that means the file is not there (or is no file): nothing to read. */
const isAbsent = (error: FsError): boolean =>
  isMissing(error) || error.reason === "IsADirectory" || error.reason === "NotRegularFile";

/** The store recorded for `canonicalPath`, if any; FsError as {@link readRecord}. */
const recordedStore = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
): Effect.Effect<Option.Option<string>, FsError> =>
  readRecord(fs, ownerFile(privateRoot, canonicalPath));

/** Why a call failed that could not read whose the directory is (LOCAL_IO or the like). */
const recordReadFailure = (error: FsError): DomainError =>
  localFailure(error, `reading which store the working copy belongs to in the ${privateRootNamed}`);

/**
 * Runs `body` holding the record's own lock (`<digest>.lock` beside it, removed on
 * release): every write and removal of a record takes it, so a removal never takes away
 * a record another call wrote after the removal read it (calls with different stores
 * take different copy locks, so the copy's lock orders nothing between them).
 */
const underRecordLock = <A, E>(
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  body: Effect.Effect<A, E>,
): Effect.Effect<A, E | FsError> =>
  fs.makeDirectory(join(privateRoot, "owners"), 0o700).pipe(
    Effect.zipRight(
      Effect.acquireUseRelease(
        fs.lock(`${ownerFile(privateRoot, canonicalPath)}.lock`, recordLockWaitMs),
        () => body,
        (release) => release,
      ),
    ),
  );

/**
 * How long a call waits for the record's lock. A first pull holds it for its whole
 * download, and it waits while holding its store's first-pulls lock, so the wait is short:
 * a first pull of the same directory from another store answers BUSY after it (and, called
 * again, finds the other's copy), instead of stalling every new copy of its own store.
 */
const recordLockWaitMs = 5_000;

/**
 * Writes `store` as the record unless it names it already (read first, without the lock:
 * the usual case is one read), and never over a record naming another store that has a
 * copy there: only a first pull, under the lock and after its own check, takes a directory
 * over from another store (an ordinary pull checked before it ran, and another store's
 * first pull of the emptied directory may have claimed it since). `true` when the record
 * names `store` afterwards, `false` when it was left naming another store that has a copy
 * there; FsError (`Busy`: another store's first pull holds the record's lock).
 */
const writeRecord = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<boolean, FsError> => {
  const writeUnlessClaimed = recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.match(recorded, {
        onNone: () => Effect.succeed(true),
        onSome: (named) =>
          named === store
            ? Effect.succeed(false)
            : hasCopy(fs, privateRoot, canonicalPath, named).pipe(Effect.map((has) => !has)),
      }),
    ),
    Effect.flatMap((write) =>
      write
        ? writeOwnerFile(fs, privateRoot, canonicalPath, store).pipe(Effect.as(true))
        : recordedStore(fs, privateRoot, canonicalPath).pipe(
            Effect.map((recorded) => Option.contains(recorded, store)),
          ),
    ),
  );
  return recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.contains(recorded, store)
        ? Effect.succeed(true)
        : underRecordLock(fs, privateRoot, canonicalPath, writeUnlessClaimed),
    ),
  );
};

/**
 * Records `store` as the store the copy at `canonicalPath` belongs to, after a pull that
 * succeeded (a copy pulled before records were kept gets its record so). Best effort: a
 * failure, or a record left naming another store, is logged, never the pull's answer.
 */
export const recordStoreOfCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void> =>
  writeRecord(fs, privateRoot, canonicalPath, store).pipe(
    Effect.flatMap((named) =>
      named
        ? Effect.void
        : Effect.logWarning(
            "the record of a working copy's store names another store that has a copy there",
          ),
    ),
    Effect.catchAll((error) =>
      Effect.logWarning("recording the store of a working copy failed", error.message),
    ),
  );

/**
 * BUSY for a lock `error` says is held: `what` the holder is doing, then who it is (as
 * the lock file names it) and which file that is, `lockFileNamed` (relative to the private
 * root, whose path stays out of answers, and with its digest described: a digest is
 * redacted from every answer), so that a person can tell a live process from a lock left
 * by one whose pid was reused or that ran on another host, and remove it.
 */
const heldBusy = (error: FsError, lockFileNamed: string, what: string): DomainError =>
  domainError({
    code: "ENGINE_FAILED",
    reason: "BUSY",
    message:
      error.holder === "another call of this process"
        ? `${what}: another call of this process holds the lock file ${lockFileNamed} in the ${privateRootNamed}. Call again when it has finished.`
        : `${what}: ${error.holder ?? "a process the lock file does not name"} holds the lock file ${lockFileNamed} in the ${privateRootNamed}. Call again when it has finished; if that is no quire process at work here (the pid now belongs to another program, or the process ran on another host and has stopped), remove that file and call again.`,
  });

/** A record that could not be written (LOCAL_IO or LOCAL_ACCESS, naming the private root). */
const recordFailure = (error: FsError): DomainError =>
  localFailure(error, `recording the store of the working copy in the ${privateRootNamed}`);

/** BUSY: another store's first pull of the directory holds the record's lock. */
const firstPullBusy = (error: FsError): DomainError =>
  heldBusy(
    error,
    "owners/<digest of this directory's path>.lock",
    "Another process is pulling this directory for the first time",
  );

/**
 * Runs a first pull (`body`) of the directory at `canonicalPath` holding the record's
 * lock: the directory is checked again for another store's copy under it, `store` is
 * recorded before anything is written there (a first pull stopped part way, by a full
 * disk say, leaves this store's notes in it, and another store must not take them), and
 * a first pull of the same directory from another store at the same moment waits, then
 * finds this one's copy and is refused (both wrote their notes into it, each answering
 * OK). Fails (LOCAL_IO or the like) when the record cannot be written, BUSY-like when the
 * wait is too long: the pull then writes nothing.
 */
export const claimedFirstPull = <A>(
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
  tree: RootedTree,
  body: Effect.Effect<A, DomainError>,
): Effect.Effect<A, DomainError> => {
  // A first pull that fails before it wrote anything here (its download failed, say)
  // leaves the directory as it was: the record it replaced is put back, still under the
  // lock, so that the copy it named stays known (a killed pull cannot do this; its record
  // then counts as none, see recordedWithCopy). What it wrote is told by its own files:
  // `first-pull.json` (written before its first note), or a `state.json` other than the
  // one found before it started (this store may have old state for the path, which does
  // not make the directory its copy). Unreadable: kept, the safe side.
  const copyDir = copyDirectory(privateRoot, canonicalPath, store);
  const stateNow = fs.info(join(copyDir, "state.json"));
  const wroteHere = (stateBefore: Option.Option<PathInfo>) =>
    Effect.all([fs.info(join(copyDir, "first-pull.json")), stateNow]).pipe(
      Effect.map(
        ([record, state]) =>
          Option.isSome(record) ||
          (Option.isSome(state) &&
            !Option.exists(
              stateBefore,
              (before) =>
                before.ino === state.value.ino &&
                before.mtimeMs === state.value.mtimeMs &&
                before.size === state.value.size,
            )),
      ),
    );
  const putBack = (previous: Option.Option<string>, stateBefore: Option.Option<PathInfo>) =>
    wroteHere(stateBefore).pipe(
      Effect.flatMap((wrote) =>
        wrote
          ? Effect.void
          : Option.match(previous, {
              onNone: () => fs.removeFile(ownerFile(privateRoot, canonicalPath)),
              onSome: (named) => writeOwnerFile(fs, privateRoot, canonicalPath, named),
            }),
      ),
      Effect.catchAll((error) =>
        Effect.logWarning(
          "putting back the record of a working copy's store failed",
          error.message,
        ),
      ),
    );
  const claimed = refuseCopyOfOtherStore(fs, privateRoot, canonicalPath, store, tree, false).pipe(
    Effect.zipRight(
      recordedStore(fs, privateRoot, canonicalPath).pipe(Effect.mapError(recordReadFailure)),
    ),
    Effect.flatMap((previous) =>
      Option.contains(previous, store)
        ? body
        : Effect.gen(function* () {
            // Unreadable: none, so that any state found after a failure counts as written.
            const stateBefore = yield* stateNow.pipe(
              Effect.orElseSucceed(() => Option.none<PathInfo>()),
            );
            yield* writeOwnerFile(fs, privateRoot, canonicalPath, store).pipe(
              Effect.mapError(recordFailure),
            );
            return yield* body.pipe(Effect.onError(() => putBack(previous, stateBefore)));
          }),
    ),
  );
  return underRecordLock(
    fs,
    privateRoot,
    canonicalPath,
    otherStoreWithCopy(fs, privateRoot, canonicalPath, store).pipe(
      Effect.mapError(recordReadFailure),
      Effect.flatMap((other) =>
        Option.match(other, {
          onNone: () => claimed,
          // Taken over from another store's copy (the directory emptied): under that
          // copy's lock, so that no call of that store is between its own check and its
          // writes (a pull writing a note published to it since, a commit scanning this
          // pull's notes as its own) until this pull has written its record and its notes.
          onSome: (owner) =>
            Effect.acquireUseRelease(
              fs
                .lock(lockFile(copyDirectory(privateRoot, canonicalPath, owner)), recordLockWaitMs)
                .pipe(
                  Effect.mapError((error) =>
                    error.reason === "Busy"
                      ? heldBusy(
                          error,
                          "copies/<digest of this directory's path and that store>/lock",
                          `A call with the store this directory was last pulled from (${storeNamed(owner)}) is working on it`,
                        )
                      : localFailure(error, `locking the working copy in the ${privateRootNamed}`),
                  ),
                ),
              () => claimed,
              (release) => release,
            ),
        }),
      ),
    ),
  ).pipe(
    Effect.catchTag("FsError", (error) =>
      Effect.fail(
        error.reason === "Busy"
          ? firstPullBusy(error)
          : localFailure(error, `locking the working copy in the ${privateRootNamed}`),
      ),
    ),
  );
};

/**
 * How a message names a store: a file store's directory is never shown outside a
 * startup diagnostic (a caller learns no path of the store), so only that it is one.
 */
const storeNamed = (identity: string): string =>
  identity.startsWith("file:")
    ? "a file store in another directory"
    : identity.startsWith("memory:")
      ? "an in-memory store"
      : identity === ""
        ? "unknown"
        : identity;

/** True when `tree` holds nothing at all (no file, directory or unreadable name). */
const isEmpty = (tree: RootedTree): Effect.Effect<boolean> =>
  tree.walk().pipe(
    Effect.map(
      (walked) =>
        walked.entries.length === 0 &&
        walked.undecodable.length === 0 &&
        walked.tooDeep.length === 0 &&
        walked.tooDeepDirectories === 0,
    ),
    Effect.orElseSucceed(() => false),
  );

/**
 * Whether `store` has a copy at `canonicalPath`: its state, or the record of a first pull
 * of it stopped part way (firstPull.ts); either way the directory may hold its notes.
 * FsError when that cannot be told (a look other than "not there" failed).
 */
const hasCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<boolean, FsError> => {
  const dir = copyDirectory(privateRoot, canonicalPath, store);
  // A failed look (other than "not there") fails: taken as "no copy", another store's
  // pull took the copy's notes as its own.
  const has = (name: string) =>
    fs.info(join(dir, name)).pipe(
      Effect.map(Option.isSome),
      Effect.catchIf(isMissing, () => Effect.succeed(false)),
    );
  return has("state.json").pipe(
    Effect.flatMap((state) => (state ? Effect.succeed(true) : has("first-pull.json"))),
  );
};

/**
 * The recorded store of the directory at `canonicalPath` if that store has a copy there.
 * A record naming a store with none — its first pull stopped before it had written
 * anything (a store failure or a kill during the download), or this store's own such
 * pull — says nothing of whose the directory is, and counts as no record: otherwise the
 * copy that was there (whose calls went on, unrecorded) would look like nobody's, and a
 * first pull would take its notes as its own. FsError when either cannot be read.
 */
const recordedWithCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
): Effect.Effect<Option.Option<string>, FsError> =>
  recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.isNone(recorded)
        ? Effect.succeed(recorded)
        : hasCopy(fs, privateRoot, canonicalPath, recorded.value).pipe(
            Effect.map((has) => (has ? recorded : Option.none<string>())),
          ),
    ),
  );

/** The name of a record in `owners/` (a {@link keyDigest}). */
const recordName = /^[0-9a-f]{64}$/;

/** How many records {@link storeHavingCopy} reads at most (each a few bytes). */
const recordsReadAtMost = 1000;

/**
 * A store other than `store` that has a copy at `canonicalPath`, among the stores named by
 * the records of this private root (private state is keyed by a digest of path and store,
 * so only a store whose identity is known can be looked up). No records: none; FsError
 * when they, or a copy's state, cannot be read.
 */
const storeHavingCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<Option.Option<string>, FsError> =>
  Effect.gen(function* () {
    const owners = join(privateRoot, "owners");
    // Through a tree, whose walk reports a name that is not UTF-8 apart: such a name is
    // no record (records are hex digests), and a plain walk fails on it, which would fail
    // every call on a directory with no record until someone removed it. (Opened as the
    // path it resolves to: the private root may lie below a symlink.)
    const entries = yield* Effect.scoped(
      fs.realPath(owners).pipe(
        Effect.flatMap((resolved) => fs.openTree(owners, resolved)),
        Effect.flatMap((tree) => tree.walk()),
        Effect.map((walked) => walked.entries),
      ),
    ).pipe(Effect.catchIf(isMissing, () => Effect.succeed([])));
    const seen = new Set<string>([store]);
    // Records only: not a record's lock, one a steal set aside, or a temp file (nor do
    // they count against the bound).
    const records = entries.filter(
      (entry) => entry.kind === "file" && recordName.test(entry.relativePath),
    );
    for (const entry of records.slice(0, recordsReadAtMost)) {
      const named = yield* readRecord(fs, join(owners, entry.relativePath));
      if (Option.isNone(named) || seen.has(named.value)) continue;
      seen.add(named.value);
      if (yield* hasCopy(fs, privateRoot, canonicalPath, named.value)) return named;
    }
    return Option.none<string>();
  });

/**
 * The store other than `store` that has a copy at `canonicalPath`, if the record names one
 * (see {@link recordedWithCopy}): the copy whose calls a first pull taking the directory
 * over must wait for. A copy with no record is not looked for: its calls record it, under
 * the record's lock, before they read or write the directory (refuseCopyOfOtherStore), so
 * none of them is at work there while a first pull holds that lock and finds no record.
 */
const otherStoreWithCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<Option.Option<string>, FsError> =>
  recordedWithCopy(fs, privateRoot, canonicalPath).pipe(
    Effect.map(Option.filter((named) => named !== store)),
  );

/**
 * Fails with INVALID_REQUEST/NESTED_WORKING_COPY, naming the other store, when the
 * directory at `canonicalPath` was last pulled from another store that still has its
 * state there: its notes may be that store's, and this store would take them as its own
 * (a pull, as "not pulled" says, and then a commit published them here; a copy this
 * store knew, moved aside and pulled afresh from the other, read the other's notes as
 * additions and its own as deletions). Which store's notes the directory holds now is not
 * known (a person may have moved directories around), so the advice is the way out that
 * always works: a pull into a path that does not exist yet. With `emptyAllowed` (a pull),
 * a directory holding nothing at all is not refused: there is nothing to take, and the
 * answer is `true` (pull it afresh: this store's own state for it, if any, is older than
 * the other store's pull). Otherwise `false`: nothing to refuse. LOCAL_IO (or the like)
 * when the records or a copy's state cannot be read: whose the directory is is not known.
 */
export const refuseCopyOfOtherStore = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
  emptyAllowed?: RootedTree,
  recordOwn = true,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    const recorded = yield* recordedWithCopy(fs, privateRoot, canonicalPath);
    if (Option.isSome(recorded) && recorded.value === store) return false;
    let other: string;
    if (Option.isSome(recorded)) {
      other = recorded.value;
    } else {
      // No record (or one naming a store without a copy here, see recordedWithCopy): a
      // copy pulled before records were kept, or whose record was lost or overwritten.
      // This store's own copy gets its record now; for any other, the stores this
      // private root has recorded for some path are the ones it may be a copy of.
      if (yield* hasCopy(fs, privateRoot, canonicalPath, store)) {
        if (!recordOwn) return false;
        // Recorded unless another store's first pull of the directory (one that knew no
        // copy of this store there) claimed it since the read above: then the directory
        // is that store's now (or is being pulled from it), and this call must not read
        // or write it as this store's copy.
        // Not best effort here: a first pull taking the directory over relies on every
        // call of a copy with no record having recorded it first (otherStoreWithCopy).
        const named = yield* writeRecord(fs, privateRoot, canonicalPath, store).pipe(
          Effect.mapError((error) =>
            error.reason === "Busy" ? firstPullBusy(error) : recordFailure(error),
          ),
        );
        if (named) return false;
        const now = yield* recordedStore(fs, privateRoot, canonicalPath);
        other = Option.getOrElse(now, () => "");
      } else {
        // An empty directory is pulled afresh whoever had it: no need to look for them.
        if (emptyAllowed !== undefined && (yield* isEmpty(emptyAllowed))) return true;
        const found = yield* storeHavingCopy(fs, privateRoot, canonicalPath, store);
        if (Option.isNone(found)) return false;
        other = found.value;
      }
    }
    if (emptyAllowed !== undefined && (yield* isEmpty(emptyAllowed))) return true;
    return yield* Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "NESTED_WORKING_COPY",
        message: `This directory was last pulled from another store (${storeNamed(other)}), not the one this call uses, so its notes may be that store's; a copy of one store is never merged into another. To work with this store here, move the directory aside (or remove or empty it) and pull again into the path, then copy in the notes you want to add; or, only if it holds that store's notes, call it with that store.`,
      }),
    );
  }).pipe(Effect.catchTag("FsError", (error) => Effect.fail(recordReadFailure(error))));

/**
 * Removes the record of which store the directory at `canonicalPath` was pulled from,
 * when it names `store` and that store's copy there was just discarded (a session's copy,
 * all published): every session pulls into a directory of its own, so the records would
 * otherwise pile up. A record naming another store stays (its copy may still be there).
 * Called under the copy's lock, and it reads and removes under the record's own lock: a
 * pull of the same path that records its store meanwhile (with this store: once the lock
 * is released; with another: at any moment) keeps its record. Best effort: a failure is
 * logged.
 */
export const forgetStoreOfCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void> => {
  const removeIfNamed = recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.contains(recorded, store)
        ? fs.removeFile(ownerFile(privateRoot, canonicalPath))
        : Effect.void,
    ),
  );
  // Read first without the lock: a record naming another store (or none) is left alone.
  return recordedStore(fs, privateRoot, canonicalPath)
    .pipe(
      Effect.flatMap((recorded) =>
        Option.contains(recorded, store)
          ? underRecordLock(fs, privateRoot, canonicalPath, removeIfNamed)
          : Effect.void,
      ),
    )
    .pipe(
      Effect.catchAll((error) =>
        Effect.logWarning("removing the record of a working copy's store failed", error.message),
      ),
    );
};
