/**
 * The file object store: the embedded default store, one directory on the local host.
 *
 * Conditional writes are atomic across processes without any lock: every key is a
 * directory of immutable, numbered versions, and a write commits by hard-linking a
 * fully written, fsynced temp file to the next free number — `link(2)` fails with
 * EEXIST when another writer took that number first. A SIGKILL at any instant leaves at
 * most an orphaned temp file, never a lock. The design and its crash-safety argument
 * are in docs/file-store.md.
 */
import { constants, lstatSync, readdirSync, type Dirent } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { Data, Duration, Effect, Either, Fiber, Layer, Option } from "effect";
import {
  ObjectStore,
  StoreError,
  type DeleteOptions,
  type ObjectInfo,
  type ObjectMetadata,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
  type StoredObject,
} from "../ports/ObjectStore.js";
import { sharedFileSystemName } from "./sharedFileSystems.js";
import {
  KEY_DIRECTORY_SUFFIX,
  decodeSegment,
  formatEtag,
  GONE_SUFFIX,
  isTempName,
  newTempName,
  isTorn,
  isVersionNumber,
  keySegments,
  latestVersion,
  markerName,
  parseEtag,
  parseKeyDirectory,
  pruneFloor,
  versionName,
  type EntryType,
  type KeyDirectoryState,
  type Version,
} from "./fileStoreLayout.js";
import { fd } from "./fsCallbacks.js";
import { makeDirectories } from "./makeDirectories.js";
import { compareKeys } from "./keyOrder.js";

/**
 * Runs `first` and `second` at once, each to its end, and gives both outcomes; one
 * fiber is forked (for `second`), where `Effect.all` forks two and coordinates them at
 * ~5× the CPU (app/usecases/shared/pooled.ts) — a put runs two such pairs.
 */
const bothOutcomes = <A, B, E1, E2>(
  first: Effect.Effect<A, E1>,
  second: Effect.Effect<B, E2>,
): Effect.Effect<readonly [Either.Either<A, E1>, Either.Either<B, E2>]> =>
  Effect.gen(function* () {
    const other = yield* Effect.fork(Effect.either(second));
    const a = yield* Effect.either(first);
    return [a, yield* Fiber.join(other)] as const;
  });

/** Fails with `first`'s error if it failed, else with `second`'s; else succeeds. */
const firstFailure = <E1, E2>(
  first: Either.Either<unknown, E1>,
  second: Either.Either<unknown, E2>,
): Effect.Effect<void, E1 | E2> =>
  Either.isLeft(first)
    ? Effect.fail(first.left)
    : Either.isLeft(second)
      ? Effect.fail(second.left)
      : Effect.void;

/** Configuration of the file object store. */
export interface FileObjectStoreConfig {
  /** The store directory; created (mode 0700) with missing parents if absent. */
  readonly root: string;
  /**
   * Versions kept per key when old ones are pruned (default 4, at least 1). Pruning
   * starts once a key has more than twice this many and at least this many are past the
   * grace period. Only tests need to change it.
   */
  readonly retainVersions?: number;
  /**
   * Versions linked less than this long ago (by their ctime) are never pruned (default
   * 60,000 ms). A write whose key was pruned past it while in flight cannot tell whether
   * it took effect and fails `Ambiguous`; the grace period makes that need a stall this
   * long. Only tests lower it.
   */
  readonly pruneGraceMs?: number;
  /**
   * Test seam: runs after a writer has observed the key directory and chosen version
   * `n`, right before it claims `n`. Tests use it to hold a writer inside that window
   * while others write and prune. Production code leaves it unset.
   */
  readonly beforeClaim?: (key: string, n: number) => Effect.Effect<void>;
  /**
   * Test seam: the `statfs(2)` type of the (resolved) root, used to warn when the store
   * is on a network or FUSE file system. Default: `fs.statfs`. Production code leaves
   * it unset.
   */
  readonly fileSystemType?: (root: string) => Promise<number>;
}

const DIRECTORY_MODE = 0o700;
const FILE_MODE = 0o600;
const OBJECTS = "objects";
const TMP = "tmp";
// Temp files older than this belong to a writer that died (a live write takes at most
// seconds), so opening a store removes them.
const ORPHAN_AGE = Duration.hours(1);

// A read or unconditional write that keeps losing races this often gives up (Throttled)
// rather than spinning forever.
const MAX_ATTEMPTS = 1000;
const DEFAULT_PRUNE_GRACE_MS = 60_000;

/** A failed file system call, before it is mapped to a StoreError. Never crosses the port. */
class FsFault extends Data.TaggedError("FsFault")<{
  readonly op: string;
  readonly code: string;
}> {}

const errnoOf = (cause: unknown): string =>
  cause instanceof Error && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : "UNKNOWN";

/** `wx`: create, fail if it exists. */
const createFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
/**
 * How a version file is opened for reading. The listing classified it as a regular file,
 * but another process may replace it before the open: a symlink is then refused (ELOOP)
 * instead of followed out of the store, and a FIFO opens without waiting for a writer
 * (and is refused by the stat that follows) instead of blocking the call forever.
 */
const versionReadFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * The failure of reading a version that turned out not to be a regular file, with BSD's
 * errno name for it (Linux has none), which {@link mapError} maps to `Corrupt`.
 */
const notRegularFile = (): Error =>
  Object.assign(new Error("not a regular file"), { code: "EFTYPE" });

const call = <A>(op: string, f: () => Promise<A>): Effect.Effect<A, FsFault> =>
  Effect.tryPromise({ try: f, catch: (cause) => new FsFault({ op, code: errnoOf(cause) }) });

/**
 * {@link call} for a synchronous call: used for listing a key directory and stat-ing a
 * version, short metadata reads the kernel usually has cached, for which a round trip
 * through the thread pool (queued behind other writers' fsyncs) costs more than the
 * call (measured: 8 contended library writers, ~3 % more commits/s).
 */
const callSync = <A>(op: string, f: () => A): Effect.Effect<A, FsFault> =>
  Effect.try({ try: f, catch: (cause) => new FsFault({ op, code: errnoOf(cause) }) });

/** Whether the write being mapped had already reached its commit point (the link). */
export type WritePhase = "beforeCommit" | "afterCommit";

/**
 * The single mapping of node errno codes to store reasons. After the commit point
 * every failure is `Ambiguous` (the new version may be visible already); before it:
 * ENOENT → NotFound, EACCES/EPERM/EROFS → AccessDenied, ENOTDIR/EISDIR/ELOOP/EFTYPE
 * (something foreign in the store tree) and ERR_FS_FILE_TOO_LARGE (an object over
 * 2 GiB, which no read can return) → Corrupt, anything else (ENOSPC, EDQUOT, EIO, EMFILE,
 * ENAMETOOLONG, …) → Unavailable. The message names the operation and the code, never
 * the path or key.
 */
export const mapError = (op: string, code: string, phase: WritePhase): StoreError => {
  const reason: StoreErrorReason =
    phase === "afterCommit"
      ? "Ambiguous"
      : code === "ENOENT"
        ? "NotFound"
        : code === "EACCES" || code === "EPERM" || code === "EROFS"
          ? "AccessDenied"
          : code === "ENOTDIR" ||
              code === "EISDIR" ||
              code === "ELOOP" ||
              code === "EFTYPE" ||
              // A version over 2 GiB cannot be read at all: no retry helps.
              code === "ERR_FS_FILE_TOO_LARGE"
            ? "Corrupt"
            : "Unavailable";
  const suffix = phase === "afterCommit" ? " after the write was committed" : "";
  return new StoreError({ reason, message: `file store: ${op} failed (${code})${suffix}` });
};

const toStoreError =
  (phase: WritePhase) =>
  (e: FsFault | StoreError): StoreError =>
    e._tag === "FsFault"
      ? mapError(e.op, e.code, phase)
      : phase === "afterCommit"
        ? new StoreError({
            reason: "Ambiguous",
            message: `${e.message} after the write was committed`,
          })
        : e;

const preconditionFailed = (message: string): StoreError =>
  new StoreError({ reason: "PreconditionFailed", message: `file store: ${message}` });

const entryType = (d: Dirent): EntryType =>
  d.isFile() ? "file" : d.isDirectory() ? "directory" : "other";

/**
 * The bytes of a buffer `readFile` returned, as a Uint8Array the caller may keep. A
 * buffer that owns its whole ArrayBuffer (what `readFile` allocates for a file of known
 * size) is viewed, not copied: copying a 40 MB checkpoint took 40–130 ms of a cold pull.
 * A slice of Node's shared pool is copied, so that no caller holds other data's memory.
 */
const ownBytes = (buffer: Buffer): Uint8Array =>
  buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength
    ? new Uint8Array(buffer.buffer, 0, buffer.byteLength)
    : new Uint8Array(buffer);

const isCode =
  (...codes: ReadonlyArray<string>) =>
  (e: FsFault): boolean =>
    codes.includes(e.code);

/**
 * Opens the file object store at `config.root`: creates the directory tree if needed,
 * removes temp files orphaned by dead writers, and returns the service. Its identity is
 * `file:<real absolute root>`. Fails with the mapped StoreError when the root cannot be
 * created or resolved (e.g. AccessDenied, Corrupt when it is a file). Logs a warning when
 * the root is on a network, cluster or FUSE file system (safe only within one host).
 *
 * Service errors: an invalid key (empty, `.`/`..`/empty segments, over 1,024 bytes,
 * ill-formed Unicode) is `Unavailable` without touching the disk; lost conditions are
 * `PreconditionFailed`; file system failures follow {@link mapError}.
 */
export const make = (
  config: FileObjectStoreConfig,
): Effect.Effect<ObjectStoreService, StoreError> =>
  Effect.gen(function* () {
    const retain = Math.max(1, Math.floor(config.retainVersions ?? 4));
    const requested = path.resolve(config.root);
    yield* call("create store directory", () =>
      makeDirectories(path.join(requested, OBJECTS), DIRECTORY_MODE),
    );
    yield* call("create store directory", () =>
      makeDirectories(path.join(requested, TMP), DIRECTORY_MODE),
    );
    const root = yield* call("resolve store directory", () => fs.realpath(requested));
    yield* warnIfShared(root, config.fileSystemType ?? statfsType);
    const objectsDir = path.join(root, OBJECTS);
    const tmpDir = path.join(root, TMP);
    yield* removeOrphans(tmpDir);
    const graceMs = Math.max(0, config.pruneGraceMs ?? DEFAULT_PRUNE_GRACE_MS);
    return makeService(root, objectsDir, tmpDir, retain, graceMs, config.beforeClaim);
  }).pipe(Effect.mapError(toStoreError("beforeCommit")));

/**
 * A layer providing the file {@link ObjectStore} at `config.root` (see {@link make}).
 * It never fails to build: when the store cannot be opened, every operation of the
 * provided service fails with the opening error, so the startup probe reports it the
 * same way as an unreachable bucket.
 */
export const layer = (config: FileObjectStoreConfig): Layer.Layer<ObjectStore> =>
  Layer.effect(
    ObjectStore,
    make(config).pipe(
      Effect.catchAll((error) =>
        Effect.succeed(refusingService(`file:${path.resolve(config.root)}`, error)),
      ),
    ),
  );

const refusingService = (identity: string, error: StoreError): ObjectStoreService => ({
  identity,
  get: () => Effect.fail(error),
  head: () => Effect.fail(error),
  put: () => Effect.fail(error),
  putAfter: () => Effect.fail(error),
  delete: () => Effect.fail(error),
  list: () => Effect.fail(error),
});

const statfsType = async (root: string): Promise<number> => (await fs.statfs(root)).type;

/**
 * Logs a warning (module `store`) when `root` is on a network, cluster or FUSE file
 * system: the store is only safe for processes on one host there (docs/file-store.md
 * "Limits"), and nothing else would tell a team that points every machine at one NFS
 * directory. Best effort: a file system that cannot be asked is not reported.
 */
const warnIfShared = (
  root: string,
  typeOf: (root: string) => Promise<number>,
): Effect.Effect<void> =>
  Effect.tryPromise(() => typeOf(root)).pipe(
    Effect.flatMap((type) => {
      const name = sharedFileSystemName(type);
      return name === undefined
        ? Effect.void
        : Effect.logWarning(
            `the file store is on a network, cluster or FUSE file system (${name}): it is safe only for quire processes on this one host; to share a notebook across machines use an S3-compatible store`,
          ).pipe(Effect.annotateLogs({ module: "store", fileSystem: name, root }));
    }),
    Effect.ignore,
  );

// Best effort: a temp file we cannot remove only wastes space. Only the store's own names
// in its own directory: a `tmp` replaced by a symlink (to /tmp, say) would otherwise have
// every old file where it leads removed.
const removeOrphans = (tmpDir: string): Effect.Effect<void> =>
  Effect.gen(function* () {
    const dir = yield* call("stat temp directory", () => fs.lstat(tmpDir));
    if (!dir.isDirectory()) return;
    const names = yield* call("list temp files", () => fs.readdir(tmpDir));
    const cutoff = Date.now() - Duration.toMillis(ORPHAN_AGE);
    for (const name of names) {
      if (!isTempName(name)) continue;
      const file = path.join(tmpDir, name);
      const stat = yield* call("stat temp file", () => fs.lstat(file)).pipe(Effect.option);
      if (Option.isNone(stat) || stat.value.mtimeMs >= cutoff) continue;
      if (stat.value.isFile()) {
        yield* call("remove temp file", () => fs.unlink(file)).pipe(Effect.ignore);
      } else if (stat.value.isDirectory() && name.endsWith(GONE_SUFFIX)) {
        // A forgotten key whose removal a crash interrupted.
        yield* call("remove forgotten key", () =>
          fs.rm(file, { recursive: true, force: true }),
        ).pipe(Effect.ignore);
      }
    }
  }).pipe(Effect.ignore);

const syncDirectory = (dir: string): Effect.Effect<void, FsFault> =>
  call("sync directory", () => fd.syncDirectory(dir));

const makeService = (
  root: string,
  objectsDir: string,
  tmpDir: string,
  retain: number,
  graceMs: number,
  beforeClaim: ((key: string, n: number) => Effect.Effect<void>) | undefined,
): ObjectStoreService => {
  const keyDirectory = (key: string): Effect.Effect<string, StoreError> =>
    Either.match(keySegments(key), {
      onLeft: (message) =>
        Effect.fail(new StoreError({ reason: "Unavailable", message: `file store: ${message}` })),
      onRight: (segments) => {
        const last = segments.length - 1;
        const names = segments.map((s, i) => (i === last ? s + KEY_DIRECTORY_SUFFIX : s));
        return Effect.succeed(path.join(objectsDir, ...names));
      },
    });

  /** One readdir of a key directory; `None` when the key directory does not exist. */
  const readKeyDirectory = (
    keyDir: string,
  ): Effect.Effect<Option.Option<KeyDirectoryState>, FsFault> =>
    callSync("list key directory", () => readdirSync(keyDir, { withFileTypes: true })).pipe(
      Effect.map((entries) =>
        Option.some(parseKeyDirectory(entries.map((d) => ({ name: d.name, type: entryType(d) })))),
      ),
      Effect.catchIf(isCode("ENOENT"), () => Effect.succeed(Option.none())),
    );

  /** A consistent view of a key directory: re-reads a torn listing (see `isTorn`). */
  const observe = (
    keyDir: string,
  ): Effect.Effect<Option.Option<KeyDirectoryState>, FsFault | StoreError> =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const state = yield* readKeyDirectory(keyDir);
        if (Option.isNone(state) || !isTorn(state.value)) return state;
      }
      // A listing torn by a prune is gone at the next read; one that stays torn this long
      // has a marker above every version that no prune wrote (put there by hand).
      return yield* new StoreError({
        reason: "Corrupt",
        message: "file store: a prune marker is above every version of the key",
      });
    });

  /**
   * Reads the current version of a key with `read`, re-observing when the version is
   * pruned between the listing and the read (ENOENT). `None` when absent or deleted.
   */
  const readCurrent = <A>(
    key: string,
    read: (file: string, version: Version) => Effect.Effect<A, FsFault>,
  ): Effect.Effect<Option.Option<A>, StoreError> =>
    Effect.gen(function* () {
      const keyDir = yield* keyDirectory(key);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const state = yield* observe(keyDir);
        const latest = Option.flatMap(state, latestVersion);
        if (Option.isNone(latest) || latest.value.kind === "tombstone") return Option.none();
        if (latest.value.kind === "other") {
          return yield* new StoreError({
            reason: "Corrupt",
            message: "file store: the current version is neither a file nor a tombstone",
          });
        }
        const file = path.join(keyDir, versionName(latest.value.n));
        const result = yield* read(file, latest.value).pipe(
          Effect.map(Option.some),
          Effect.catchIf(isCode("ENOENT"), () => Effect.succeed(Option.none())),
        );
        if (Option.isSome(result)) return result;
      }
      return yield* throttled("the key kept changing while it was read");
    }).pipe(Effect.mapError(toStoreError("beforeCommit")));

  const get = (key: string): Effect.Effect<Option.Option<StoredObject>, StoreError> =>
    readCurrent(key, (file, version) =>
      call("read object", async () => {
        // The inode of the very file read: a forgotten key's version names are reused.
        const handle = await fs.open(file, versionReadFlags);
        try {
          const stat = await handle.stat();
          if (!stat.isFile()) throw notRegularFile();
          const { ino, size, mtimeMs } = stat;
          return { buffer: await handle.readFile(), localFile: { path: file, ino, size, mtimeMs } };
        } finally {
          await handle.close();
        }
      }).pipe(
        Effect.map(({ buffer, localFile }) => ({
          body: ownBytes(buffer),
          etag: formatEtag(version.n),
          // A version file is written once, under its own name, and never rewritten.
          localFile,
        })),
      ),
    );

  const head = (key: string): Effect.Effect<Option.Option<ObjectInfo>, StoreError> =>
    readCurrent(key, (file, version) =>
      call("stat object", () => fs.lstat(file)).pipe(
        Effect.map((stat) => ({ key, size: stat.size, etag: formatEtag(version.n) })),
      ),
    );

  /**
   * Creates the key directory and any missing parents, making each new directory entry
   * durable in its parent (the key directory itself is synced after the commit).
   */
  const ensureKeyDirectory = (keyDir: string): Effect.Effect<void, FsFault> =>
    Effect.gen(function* () {
      const first = yield* call("create key directory", () =>
        makeDirectories(keyDir, DIRECTORY_MODE),
      );
      if (first === undefined) return;
      const created: string[] = [];
      for (let d = keyDir; d.length >= first.length; d = path.dirname(d)) created.unshift(d);
      yield* syncDirectory(path.dirname(first));
      for (const dir of created.slice(0, -1)) yield* syncDirectory(dir);
    });

  /** Writes `body` to a fresh temp file and fsyncs it; the caller removes it, even on failure. */
  const writeTemp = (file: string, body: Uint8Array): Effect.Effect<void, FsFault> =>
    Effect.acquireUseRelease(
      call("create temp file", () => fd.open(file, createFlags, FILE_MODE)).pipe(
        // The temp directory was removed under us: recreate it once.
        Effect.catchIf(isCode("ENOENT"), () =>
          call("create temp directory", () => makeDirectories(tmpDir, DIRECTORY_MODE)).pipe(
            Effect.zipRight(call("create temp file", () => fd.open(file, createFlags, FILE_MODE))),
          ),
        ),
      ),
      (descriptor) =>
        call("write temp file", () => fd.writeAll(descriptor, body)).pipe(
          Effect.zipRight(call("sync temp file", () => fd.fsync(descriptor))),
        ),
      (descriptor) => call("close temp file", () => fd.close(descriptor)).pipe(Effect.ignore),
    );

  type Claim = "committed" | "taken" | "noKeyDirectory";

  /** The commit point: claims version number `n` atomically, or learns it is taken. */
  const claim = (
    keyDir: string,
    n: number,
    payload: { readonly tmpFile: string } | "tombstone",
  ): Effect.Effect<Claim, FsFault> => {
    const target = path.join(keyDir, versionName(n));
    const attempt =
      payload === "tombstone"
        ? call("create tombstone", () => fs.mkdir(target, { mode: DIRECTORY_MODE }))
        : call("commit version", () => fd.link(payload.tmpFile, target));
    return attempt.pipe(
      Effect.as<Claim>("committed"),
      Effect.catchIf(isCode("EEXIST"), () => Effect.succeed<Claim>("taken")),
      Effect.catchIf(isCode("ENOENT"), () => Effect.succeed<Claim>("noKeyDirectory")),
    );
  };

  /**
   * After a successful claim of `n`: the key directory as it is now, unless the prune
   * floor has risen above `n`. That happens only when `n` had been vacated by pruning
   * before we claimed it (our version is then below the floor and nobody will read it)
   * or when our version was superseded and pruned before this check (it did take
   * effect). The two cannot be told apart, so the write is `Ambiguous`. Both need a
   * writer to stall for longer than the prune grace period, since pruning never
   * touches versions younger than that.
   */
  const verifyClaim = (
    keyDir: string,
    n: number,
  ): Effect.Effect<KeyDirectoryState, FsFault | StoreError> =>
    observe(keyDir).pipe(
      Effect.flatMap((observed) => {
        const state = Option.getOrElse(observed, () => parseKeyDirectory([]));
        return n >= state.floor
          ? Effect.succeed(state)
          : Effect.fail(
              new StoreError({
                reason: "Ambiguous",
                message: "file store: old versions were pruned while this write was in flight",
              }),
            );
      }),
    );

  const isOlderThanGrace = (keyDir: string, n: number, cutoff: number) =>
    callSync("stat old version", () => lstatSync(path.join(keyDir, versionName(n)))).pipe(
      // In whole milliseconds, like the cutoff (from Date.now()): a fractional ctime
      // against a truncated now made a version linked within the same millisecond count
      // as younger than even a zero grace period.
      Effect.map((stat) => Math.floor(stat.ctimeMs) <= cutoff),
      // Already removed by another pruner, which found it old enough.
      Effect.catchIf(isCode("ENOENT"), () => Effect.succeed(true)),
    );

  /**
   * Best-effort removal of old versions after committing `committed`, below the floor
   * {@link pruneFloor} allows, lowered to the oldest version still inside the grace
   * period (ctime: when it was linked). The floor marker is made durable before anything
   * is removed; failures are ignored because pruning only reclaims space.
   */
  const prune = (
    keyDir: string,
    state: KeyDirectoryState,
    committed: Version,
  ): Effect.Effect<void> =>
    Option.match(pruneFloor(state, committed, retain), {
      onNone: () => Effect.void,
      onSome: (bound) =>
        Effect.gen(function* () {
          const cutoff = Date.now() - graceMs;
          let floor = bound;
          let removable = 0;
          for (const v of state.versions) {
            if (v.n < state.floor) continue;
            if (v.n >= bound) break;
            if (!(yield* isOlderThanGrace(keyDir, v.n, cutoff))) {
              floor = v.n;
              break;
            }
            removable += 1;
          }
          // Amortise: a data write prunes only once `retain` versions can go at once.
          if (removable === 0 || (committed.kind === "data" && removable < retain)) return;
          const marker = path.join(keyDir, markerName(floor));
          yield* call("create prune marker", () =>
            fs.writeFile(marker, "", { flag: "wx", mode: FILE_MODE }),
          ).pipe(Effect.catchIf(isCode("EEXIST"), () => Effect.void));
          yield* syncDirectory(keyDir);
          for (const v of state.versions) {
            if (v.n >= floor) break;
            const file = path.join(keyDir, versionName(v.n));
            yield* (
              v.kind === "tombstone"
                ? call("remove old tombstone", () => fs.rmdir(file))
                : call("remove old version", () => fs.unlink(file))
            ).pipe(Effect.ignore);
          }
          for (const f of state.markers) {
            if (f >= floor) break;
            yield* call("remove old marker", () =>
              fs.unlink(path.join(keyDir, markerName(f))),
            ).pipe(Effect.ignore);
          }
        }).pipe(Effect.ignore),
    });

  /**
   * The write loop shared by put and delete: observe, plan, claim, verify, sync.
   * `retryWhenTaken` says whether losing a number to another writer means "observe
   * again" (unconditional writes, deletes) or "the condition failed".
   */
  const write = (
    key: string,
    keyDir: string,
    payload: { readonly tmpFile: string } | "tombstone",
    plan: (state: Option.Option<KeyDirectoryState>) => Plan,
    createsKey: boolean,
    retryWhenTaken: boolean,
  ): Effect.Effect<Option.Option<number>, StoreError> =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const state = yield* observe(keyDir).pipe(Effect.mapError(toStoreError("beforeCommit")));
        const decided = plan(state);
        if (decided._tag === "Done") return Option.none();
        if (decided._tag === "Lost") return yield* preconditionFailed(decided.message);
        if (!isVersionNumber(decided.n)) {
          // Only a version put there by hand can be this high; claiming past it would
          // write a version nobody reads, and answer as if it had landed.
          return yield* new StoreError({
            reason: "Corrupt",
            message: "file store: the key's latest version has no next number",
          });
        }
        if (Option.isNone(state) && createsKey) {
          yield* ensureKeyDirectory(keyDir).pipe(Effect.mapError(toStoreError("beforeCommit")));
        }
        if (beforeClaim !== undefined) yield* beforeClaim(key, decided.n);
        const claimed = yield* claim(keyDir, decided.n, payload).pipe(
          Effect.mapError(toStoreError("beforeCommit")),
        );
        if (claimed === "noKeyDirectory") {
          // Only If-Match neither creates the key nor retries: the key is gone.
          if (createsKey || retryWhenTaken) continue;
          return yield* preconditionFailed("the key does not exist");
        }
        if (claimed === "taken") {
          if (retryWhenTaken) continue;
          return yield* preconditionFailed("another write won the race");
        }
        const kind = payload === "tombstone" ? "tombstone" : "data";
        return yield* Effect.gen(function* () {
          const now = yield* verifyClaim(keyDir, decided.n);
          yield* syncDirectory(keyDir);
          yield* prune(keyDir, now, { n: decided.n, kind });
          return Option.some(decided.n);
        }).pipe(Effect.mapError(toStoreError("afterCommit")));
      }
      return yield* throttled("the key kept changing while it was written");
    });

  /**
   * A put whose claim waits for `after`, if given (`put` has none): the temp file (and a
   * create-only put's key directory) are written and synced alongside it, so the claim
   * itself — list, link, sync the key directory — is all that follows it. If `after`
   * fails, nothing is claimed and the put fails with its error.
   */
  const putAfter = <E>(
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    after: Effect.Effect<void, E> | undefined,
  ): Effect.Effect<{ readonly etag: string }, StoreError | E> =>
    Effect.gen(function* () {
      const keyDir = yield* keyDirectory(key);
      const plan = planPut(condition);
      if (Either.isLeft(plan)) return yield* plan.left;
      // The temp file is written before observing, so the window between reading the
      // current version and claiming the next one is as short as possible.
      const tmpFile = path.join(tmpDir, newTempName(false));
      // A create-only put is nearly always of a new key (a pack): its key directory and
      // the parent's fsync are made alongside the temp file's write and fsync, not after.
      // An empty key directory is the state a crash between the two steps always left.
      const prepared = (
        condition._tag === "IfNoneMatch"
          ? bothOutcomes(writeTemp(tmpFile, body), ensureKeyDirectory(keyDir)).pipe(
              Effect.flatMap(([temp, directory]) => firstFailure(temp, directory)),
            )
          : writeTemp(tmpFile, body)
      ).pipe(Effect.mapError(toStoreError("beforeCommit")));
      const staged: Effect.Effect<void, StoreError | E> =
        after === undefined
          ? prepared
          : bothOutcomes(prepared, after).pipe(
              // Neither is cut short by the other's failure; `after`'s error comes first.
              Effect.flatMap(([stagedTemp, waited]) => firstFailure(waited, stagedTemp)),
            );
      const n = yield* staged.pipe(
        Effect.zipRight(
          write(
            key,
            keyDir,
            { tmpFile },
            plan.right,
            condition._tag !== "IfMatch",
            condition._tag === "Unconditional",
          ),
        ),
        // Also after a failed write of the temp file (ENOSPC), which leaves a partial one.
        Effect.ensuring(call("remove temp file", () => fs.unlink(tmpFile)).pipe(Effect.ignore)),
      );
      // Put plans always claim a number; only delete plans "Done".
      if (Option.isNone(n)) return yield* Effect.dieMessage("file store: a put planned nothing");
      return { etag: formatEtag(n.value) };
    });

  const put = (
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    _metadata?: ObjectMetadata,
  ): Effect.Effect<{ readonly etag: string }, StoreError> =>
    putAfter(key, body, condition, undefined);

  /**
   * Deletes a key for good (`forever`): its directory is renamed into the temp
   * directory — atomically, so readers see the whole key or none of it — and removed
   * there. Nothing is fsynced: a crash may bring a forgotten key back (as residue, or as
   * the object it was), never lose anything else. Leftovers of a crash in between are
   * swept with the temp files at the next start.
   */
  const forget = (key: string): Effect.Effect<void, StoreError> =>
    Effect.gen(function* () {
      const keyDir = yield* keyDirectory(key);
      const gone = path.join(tmpDir, newTempName(true));
      const moveAway = call("move key directory away", () => fs.rename(keyDir, gone));
      const moved = yield* moveAway.pipe(
        // ENOENT: the key is absent, or the temp directory was removed under us.
        Effect.catchIf(isCode("ENOENT"), (error) =>
          call("stat key directory", () => fs.lstat(keyDir)).pipe(
            Effect.flatMap(() =>
              call("create temp directory", () => makeDirectories(tmpDir, DIRECTORY_MODE)),
            ),
            Effect.zipRight(moveAway),
            Effect.catchIf(isCode("ENOENT"), () => Effect.fail(error)),
          ),
        ),
        Effect.as(true),
        Effect.catchIf(isCode("ENOENT"), () => Effect.succeed(false)),
        Effect.mapError(toStoreError("beforeCommit")),
      );
      if (!moved) return;
      yield* call("remove key directory", () => fs.rm(gone, { recursive: true, force: true })).pipe(
        Effect.ignore,
      );
    });

  const del = (key: string, options?: DeleteOptions): Effect.Effect<void, StoreError> =>
    options?.forever === true ? forget(key) : tombstone(key);

  const tombstone = (key: string): Effect.Effect<void, StoreError> =>
    Effect.gen(function* () {
      const keyDir = yield* keyDirectory(key);
      yield* write(
        key,
        keyDir,
        "tombstone",
        (state) =>
          Option.match(Option.flatMap(state, latestVersion), {
            onNone: (): Plan => ({ _tag: "Done" }),
            onSome: (v): Plan =>
              v.kind === "data" ? { _tag: "Claim", n: v.n + 1 } : { _tag: "Done" },
          }),
        false,
        true,
      );
    });

  const list = (prefix: string): Effect.Effect<ReadonlyArray<ObjectInfo>, StoreError> =>
    Effect.gen(function* () {
      const found: ObjectInfo[] = [];
      const walk = (dir: string, keyPrefix: string): Effect.Effect<void, StoreError> =>
        Effect.gen(function* () {
          const entries = yield* call("list directory", () =>
            fs.readdir(dir, { withFileTypes: true }),
          ).pipe(
            Effect.catchIf(isCode("ENOENT"), () => Effect.succeed<Dirent[]>([])),
            Effect.mapError(toStoreError("beforeCommit")),
          );
          for (const entry of entries) {
            if (!entry.isDirectory()) continue;
            if (entry.name.endsWith(KEY_DIRECTORY_SUFFIX)) {
              const segment = decodeSegment(entry.name.slice(0, -KEY_DIRECTORY_SUFFIX.length));
              if (Option.isNone(segment)) continue;
              const key = keyPrefix + segment.value;
              // A foreign directory deep enough to exceed the key length is not a key.
              if (!key.startsWith(prefix) || Either.isLeft(keySegments(key))) continue;
              // A key whose current version is no file (a symlink, a FIFO, a marker above
              // every version: put there by hand) is left out, as foreign names are: one
              // such key must not fail every listing of its prefix — writers would stop
              // seeing each other's staged publications, and cleanup would stop.
              const info = yield* head(key).pipe(
                Effect.catchIf(
                  (error) => error.reason === "Corrupt",
                  () => Effect.succeed(Option.none<ObjectInfo>()),
                ),
              );
              if (Option.isSome(info)) found.push(info.value);
            } else {
              const segment = decodeSegment(entry.name);
              if (Option.isNone(segment)) continue;
              const sub = `${keyPrefix}${segment.value}/`;
              if (sub.startsWith(prefix) || prefix.startsWith(sub)) {
                yield* walk(path.join(dir, entry.name), sub);
              }
            }
          }
        });
      yield* walk(objectsDir, "");
      return found.sort((a, b) => compareKeys(a.key, b.key));
    });

  return { identity: `file:${root}`, get, head, put, putAfter, delete: del, list };
};

/**
 * What a writer does with the key directory it observed: claim version `n`, do nothing
 * (deleting an absent key), or report the lost condition.
 */
type Plan =
  | { readonly _tag: "Claim"; readonly n: number }
  | { readonly _tag: "Done" }
  | { readonly _tag: "Lost"; readonly message: string };

/** How a put decides, from the observed key directory, which version number to claim. */
const planPut = (
  condition: PutCondition,
): Either.Either<(state: Option.Option<KeyDirectoryState>) => Plan, StoreError> => {
  switch (condition._tag) {
    case "Unconditional":
      return Either.right((state) => ({
        _tag: "Claim",
        n: Option.match(Option.flatMap(state, latestVersion), {
          onNone: () => 1,
          onSome: (v) => v.n + 1,
        }),
      }));
    case "IfNoneMatch":
      return Either.right((state) =>
        Option.match(Option.flatMap(state, latestVersion), {
          onNone: (): Plan => ({ _tag: "Claim", n: 1 }),
          onSome: (v): Plan =>
            v.kind === "data"
              ? { _tag: "Lost", message: "the key exists" }
              : { _tag: "Claim", n: v.n + 1 },
        }),
      );
    case "IfMatch":
      return Option.match(parseEtag(condition.etag), {
        onNone: () => Either.left(preconditionFailed("the ETag does not match")),
        onSome: (expected) =>
          Either.right((state) =>
            Option.match(Option.flatMap(state, latestVersion), {
              onNone: (): Plan => ({ _tag: "Lost", message: "the key does not exist" }),
              onSome: (v): Plan =>
                v.kind === "data" && v.n === expected
                  ? { _tag: "Claim", n: v.n + 1 }
                  : { _tag: "Lost", message: "the ETag does not match" },
            }),
          ),
      });
  }
};

const throttled = (message: string): StoreError =>
  new StoreError({ reason: "Throttled", message: `file store: ${message}` });
