/**
 * The sessions of `serve` processes that made their own session directory (SPEC §9:
 * `$TMPDIR/quire-<id>/notebook`), recorded in the private root so that what a session
 * leaves behind is removed even when its process could not do it (SIGKILL, a crash, a
 * host that kills it before it cleans up), and never while the process lives.
 *
 * `<privateRoot>/sessions/` holds, per session `<id>` (the 16 hex digits of its directory):
 * - `<id>.lock` — held by the session's process for its whole life, with the FileSystem
 *   port's lock (its file names the holder's pid, host, boot id and a random token, and
 *   a holder on this host and boot whose pid is gone is dead however it died);
 * - `<id>.json` — the session's notebook directory and store identity, written once the
 *   lock is held and before the directory is created, removed when the directory is.
 *
 * A `serve` start reaps, in the background, every recorded session whose lock it can
 * take (its process is gone): the notebook directory and the copy's private state are
 * removed when everything in it is published, exactly as the session's own end would
 * have done (usecases/workingCopy/sessionEnd.ts; a session of this process's store whose
 * commit was killed after `current` accepted it is judged by that commit's fate in the
 * store, as its own next commit would learn it; of another store, it is kept, since only
 * its store can confirm the publication); a directory that is gone (a cleaned temp directory,
 * a reboot) leaves only its private state, which is removed; a directory holding
 * anything unpublished is kept with its private state and its record, and looked at
 * again by later starts. A live process's session is never touched, however idle: its
 * lock is held. A pid reused by an unrelated process keeps the dead session's lock
 * looking held until that process ends (safe: it is only reaped later).
 */
import { basename, dirname, join } from "node:path";
import { Clock, Duration, Effect, Either, Option, Schema, type Scope } from "effect";
import type { DomainError } from "../domain/errors.js";
import { parseStrictJson } from "../domain/strictJson.js";
import { encodeText } from "../domain/content.js";
import {
  leftoverTempName,
  setAsideLockName,
  type FileSystemService,
  type FsError,
} from "../ports/FileSystem.js";
import { StoreError, type ObjectStoreService } from "../ports/ObjectStore.js";
import type { Services } from "./usecases/shared/context.js";
import { makeNotebook } from "./usecases/notebookLayer.js";
import { copyDirectory } from "./usecases/workingCopy/privateState.js";

/** A session id: the random part of its directory's name. */
export const sessionIdPattern = /^[0-9a-f]{16}$/;

/** The name of a session's lock file in {@link sessionsDirectory}. */
const sessionLockName = /^[0-9a-f]{16}\.lock$/;

/** A temporary file of a session record's atomic write (and {@link leftoverTempName}). */
const recordTempName = /^\.([0-9a-f]{16})\.json\.quire-/;

/**
 * The lock files in `<privateRoot>/turns/` (first pulls' turns, privateState.ts) and
 * those a steal set aside there: a process killed during a first pull leaves its turn's
 * file until the next first pull of that store. Never fails (none when unreadable).
 */
const turnLocks = (
  fs: FileSystemService,
  privateRoot: string,
): Effect.Effect<ReadonlyArray<string>> =>
  fs.walk(join(privateRoot, "turns")).pipe(
    Effect.map((entries) =>
      entries
        .filter(
          (entry) =>
            entry.kind === "file" &&
            turnLockName.test(setAsideLockName.exec(entry.relativePath)?.[1] ?? entry.relativePath),
        )
        .map((entry) => join(privateRoot, "turns", entry.relativePath)),
    ),
    Effect.orElseSucceed(() => []),
  );

const turnLockName = /^[0-9a-f]{64}\.lock$/;

const SessionRecord = Schema.Struct({
  version: Schema.Literal(1),
  notebookDirectory: Schema.String,
  storeIdentity: Schema.String,
});
type SessionRecord = typeof SessionRecord.Type;
const decodeRecord = Schema.decodeUnknownOption(SessionRecord, { onExcessProperty: "error" });

/** `<privateRoot>/sessions`. */
export const sessionsDirectory = (privateRoot: string): string => join(privateRoot, "sessions");

const recordFile = (privateRoot: string, id: string) =>
  join(sessionsDirectory(privateRoot), `${id}.json`);
const lockFileOf = (privateRoot: string, id: string) =>
  join(sessionsDirectory(privateRoot), `${id}.lock`);

/**
 * Claims session `id` for as long as the scope lasts: takes its lock (held until the
 * scope closes, or the process dies), then writes its record naming
 * `notebookDirectory` (canonical, not created yet) and the store. Fails with the file
 * system's error; nothing is claimed then.
 */
export const claimSession = (
  fs: FileSystemService,
  privateRoot: string,
  id: string,
  notebookDirectory: string,
  storeIdentity: string,
): Effect.Effect<void, FsError, Scope.Scope> =>
  Effect.gen(function* () {
    const release = yield* lockedInSessions(fs, privateRoot, id);
    yield* Effect.addFinalizer(() => release);
    const record: SessionRecord = { version: 1, notebookDirectory, storeIdentity };
    yield* fs.writeFileAtomic(recordFile(privateRoot, id), encodeText(JSON.stringify(record)), {
      mode: 0o600,
      durable: true,
    });
  });

/**
 * How often {@link lockedInSessions} makes `sessions/` again when it vanished before the
 * lock file was in it. Each time is another process's cleanup, which removes only what
 * is empty: once this lock file is in it, it stays.
 */
const sessionsMakings = 5;

/**
 * Makes `sessions/` (and the private root, when missing) and takes session `id`'s lock
 * in it. A start refused at the same instant on the same new private root removes the
 * directories it made while they are empty (layers.ts, `withNotebook`), and can do so
 * between this making and this locking: the lock then fails with `NotFound`, and the
 * directories are made again (until 2026-12-07 the start failed with an I/O error).
 */
const lockedInSessions = (
  fs: FileSystemService,
  privateRoot: string,
  id: string,
  makings = sessionsMakings,
): Effect.Effect<Effect.Effect<void>, FsError> =>
  fs.makeDirectory(sessionsDirectory(privateRoot), 0o700).pipe(
    // A fresh random id: nobody else holds it, so no wait.
    Effect.zipRight(fs.lock(lockFileOf(privateRoot, id), 0)),
    Effect.catchIf(
      (error) => error.reason === "NotFound" && makings > 1,
      () => lockedInSessions(fs, privateRoot, id, makings - 1),
    ),
  );

/**
 * Forgets session `id` once its directory is gone: removes its record (its lock goes
 * when its holder releases it). Never fails: a record left behind is reaped later.
 */
export const forgetSession = (
  fs: FileSystemService,
  privateRoot: string,
  id: string,
): Effect.Effect<void> => fs.removeFile(recordFile(privateRoot, id)).pipe(Effect.ignore);

/**
 * Undoes a claimed session whose process did not start (its directories are still
 * empty): removes them and the record. What is not empty is left, with its record, to
 * be reaped. Never fails.
 */
export const abandonSession = (
  fs: FileSystemService,
  privateRoot: string,
  id: string,
  notebookDirectory: string,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* fs.removeEmptyDirectory(notebookDirectory);
    yield* fs.removeEmptyDirectory(dirname(notebookDirectory));
    if (Option.isNone(yield* fs.info(dirname(notebookDirectory))))
      yield* forgetSession(fs, privateRoot, id);
  }).pipe(Effect.ignore);

/**
 * Whether `notebookDirectory` (`…/quire-<id>/notebook`) still resolves to itself inside
 * its session directory: `false` when the session directory or the notebook directory
 * has been swapped for a symlink (or the path cannot be resolved), because removing
 * "the session's published notes" would then remove whatever the link points to. The
 * temporary directory above them is the user's and may itself be a link. Never fails.
 */
export const isOwnSessionDirectory = (
  fs: FileSystemService,
  notebookDirectory: string,
): Effect.Effect<boolean> => {
  const sessionDirectory = dirname(notebookDirectory);
  return Effect.all([fs.realPath(notebookDirectory), fs.realPath(dirname(sessionDirectory))]).pipe(
    Effect.map(
      ([resolved, temporary]) =>
        resolved === join(temporary, basename(sessionDirectory), basename(notebookDirectory)),
    ),
    Effect.orElseSucceed(() => false),
  );
};

/**
 * A store for reaping a session of another store than this process's: the reaper then
 * decides from the working copy and its private state only.
 */
const storeNotUsed = (identity: string): ObjectStoreService => {
  const refused = Effect.fail(
    new StoreError({ reason: "Unavailable", message: "reaping a session never uses the store" }),
  );
  return {
    identity,
    get: () => refused,
    head: () => refused,
    put: () => refused,
    putAfter: () => refused,
    delete: () => refused,
    list: () => refused,
  };
};

/** `options` without what this process's own workspace root resolved to. */
const withoutResolvedRoot = ({
  workspaceRootResolved: _ownRoot,
  ...rest
}: Services["options"]): Services["options"] => rest;

/**
 * What became of one ended session; `gone`: another start reaped it between this one's
 * listing and its taking the lock (counted nowhere: nothing was left to do).
 */
type Reaped = "removed" | "kept" | "live" | "gone";

/**
 * Reaps one session whose lock this process now holds (see the module comment). Fails
 * only when the record or the directory cannot be read or removed.
 */
const reapDead = (
  services: Services,
  id: string,
  record: SessionRecord,
): Effect.Effect<Reaped, DomainError | FsError> =>
  Effect.gen(function* () {
    const { fs, options } = services;
    const privateRoot = options.privateRoot;
    const notebookDirectory = record.notebookDirectory;
    const sessionDirectory = dirname(notebookDirectory);
    // Only ever the directory this session made (the record is this user's own file).
    if (basename(notebookDirectory) !== "notebook" || basename(sessionDirectory) !== `quire-${id}`)
      return "kept";
    const info = yield* fs.info(notebookDirectory);
    if (Option.isNone(info)) {
      // The working copy is gone: its private state has nothing left to serve.
      yield* fs.removeTree(copyDirectory(privateRoot, notebookDirectory, record.storeIdentity));
    } else {
      // Kept, with its record, while a symlink stands in its path (nothing through it).
      if (!(yield* isOwnSessionDirectory(fs, notebookDirectory))) return "kept";
      const notebook = yield* makeNotebook({
        ...services,
        // The store this process uses, when it is the session's: a commit the session
        // was killed in after `current` accepted it is then judged by its fate there
        // (workingCopy/commitFate.ts). Another store's session is judged without it.
        store:
          record.storeIdentity === services.store.identity
            ? services.store
            : storeNotUsed(record.storeIdentity),
        // The record's canonical path is the root: it must still lead to itself.
        options: {
          ...withoutResolvedRoot(options),
          workspaceRoot: notebookDirectory,
          notebookDirectory,
          ...(record.storeIdentity === services.store.identity ? {} : { otherStoreSession: true }),
        },
      });
      if (!(yield* notebook.discardIfPublished())) return "kept";
    }
    // The session's own `quire-<id>` directory, if nothing else is in it.
    yield* fs.removeEmptyDirectory(sessionDirectory);
    yield* forgetSession(fs, privateRoot, id);
    return "removed";
  });

/**
 * Takes session `id`'s lock if its holder is gone and reaps it; `live` if it is held.
 * `recordTemps` are the temporary files of a record write its process was killed in
 * (only a lock holder writes the record, so they are removed once the lock is ours).
 */
const reapOne = (
  services: Services,
  id: string,
  hasRecord: boolean,
  recordTemps: ReadonlyArray<string>,
): Effect.Effect<Reaped, DomainError | FsError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { fs, options } = services;
      const taken = yield* fs.lock(lockFileOf(options.privateRoot, id), 0).pipe(
        Effect.map(Option.some),
        Effect.catchIf(
          (error) => error.reason === "Busy",
          () => Effect.succeedNone,
        ),
      );
      if (Option.isNone(taken)) return "live";
      yield* Effect.addFinalizer(() => taken.value);
      for (const name of recordTemps)
        yield* fs.removeFile(join(sessionsDirectory(options.privateRoot), name));
      // A lock without a record: its process died between the two; nothing else exists.
      if (!hasRecord) return "removed";
      const read = yield* Effect.either(fs.readFile(recordFile(options.privateRoot, id)));
      // Another start, reaping at the same time, removed the session and its record
      // (then freed its lock) after this one listed it: not a failure.
      if (Either.isLeft(read) && read.left.reason === "NotFound") return "gone";
      const text = yield* read;
      const parsed = parseStrictJson(new TextDecoder().decode(text));
      const record = parsed.ok ? decodeRecord(parsed.value) : Option.none();
      if (Option.isNone(record)) return "kept";
      return yield* reapDead(services, id, record.value);
    }),
  );

/**
 * Removes the lock file at `path` if its holder is gone: a session lock that a steal set
 * aside and could not delete (its process was killed in between; see
 * {@link setAsideLockName}), or a first-pull turn of a killed process. `false` while its
 * holder lives (or when it cannot be removed, which is logged). Never fails.
 */
const reapDeadLock = (fs: FileSystemService, path: string): Effect.Effect<boolean> =>
  fs
    .removeDeadLock(path)
    .pipe(
      Effect.catchAll((error) =>
        Effect.logWarning("could not remove a dead process's lock file").pipe(
          Effect.annotateLogs({ file: basename(path), reason: error.reason }),
          Effect.as(false),
        ),
      ),
    );

/** How long the reaper works before it lets the event loop run (see {@link reapSessions}). */
const reapSliceMs = 5;

/** What {@link reapSessions} did. */
export interface ReapReport {
  readonly removed: number;
  readonly kept: number;
  readonly live: number;
  readonly failed: number;
  /** Lock files of dead holders removed (see {@link reapDeadLock}). */
  readonly deadLocks: number;
}

/**
 * Reaps the ended sessions recorded under `services.options.privateRoot` (see the module
 * comment) but `ownId` (this process's own), one at a time; `services` are this
 * process's (the store only for sessions of that same store). Each session's reaping is
 * uninterruptible; the loop stops between sessions when interrupted, and pauses on a
 * timer every few milliseconds of work so that a process serving meanwhile still
 * answers. Never fails: a
 * session that cannot be reaped is logged and counted as failed.
 */
export const reapSessions = (
  services: Services,
  ownId: string | undefined,
): Effect.Effect<ReapReport> =>
  Effect.gen(function* () {
    const { fs, options } = services;
    const entries = yield* fs
      .walk(sessionsDirectory(options.privateRoot))
      .pipe(
        Effect.catchAll((error) =>
          error.reason === "NotFound"
            ? Effect.succeed([])
            : Effect.logWarning("cannot list ended sessions").pipe(
                Effect.annotateLogs("reason", error.reason),
                Effect.as([]),
              ),
        ),
      );
    const records = new Set<string>();
    const locks = new Set<string>();
    const recordTemps = new Map<string, Array<string>>();
    const deadLocks: Array<string> = [];
    for (const entry of entries) {
      if (entry.kind !== "file") continue;
      const name = entry.relativePath;
      const setAsideOf = setAsideLockName.exec(name)?.[1];
      if (setAsideOf !== undefined && sessionLockName.test(setAsideOf)) {
        deadLocks.push(join(sessionsDirectory(options.privateRoot), name));
        continue;
      }
      const temp = recordTempName.exec(name)?.[1];
      if (temp !== undefined && leftoverTempName.test(name)) {
        if (temp !== ownId) recordTemps.set(temp, [...(recordTemps.get(temp) ?? []), name]);
        continue;
      }
      const match = /^([0-9a-f]{16})\.(json|lock)$/.exec(name);
      if (match?.[1] === undefined || match[1] === ownId) continue;
      (match[2] === "json" ? records : locks).add(match[1]);
    }
    deadLocks.push(...(yield* turnLocks(fs, options.privateRoot)));
    const counts = { removed: 0, kept: 0, live: 0, failed: 0, deadLocks: 0 };
    let sliceStart = yield* Clock.currentTimeMillis;
    for (const path of deadLocks) {
      if (yield* Effect.uninterruptible(reapDeadLock(fs, path))) counts.deadLocks += 1;
    }
    for (const id of new Set([...records, ...locks, ...recordTemps.keys()])) {
      // The file system port's calls may run synchronously: without a pause between
      // sessions, thousands of them kept the event loop from the MCP requests arriving
      // meanwhile (a first `initialize` answered late). A timer, not a microtask, so that
      // I/O callbacks run in between; only after a slice of work, not to slow reaping.
      const now = yield* Clock.currentTimeMillis;
      if (now - sliceStart >= reapSliceMs) {
        yield* Effect.sleep(Duration.millis(1));
        sliceStart = yield* Clock.currentTimeMillis;
      }
      const outcome = yield* Effect.uninterruptible(
        Effect.either(reapOne(services, id, records.has(id), recordTemps.get(id) ?? [])),
      );
      if (Either.isRight(outcome)) {
        if (outcome.right !== "gone") counts[outcome.right] += 1;
      } else {
        counts.failed += 1;
        yield* Effect.logWarning("could not reap an ended session").pipe(
          Effect.annotateLogs({ session: id, reason: outcome.left.reason }),
        );
      }
    }
    return counts;
  }).pipe(Effect.annotateLogs("module", "cli"));
