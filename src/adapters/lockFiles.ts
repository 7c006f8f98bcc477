/**
 * Lock files, shared by the node adapters (the FileSystem port's `lock`, and the
 * ConfigFiles adapter's turns at a client's file). node has no flock, so a lock is a
 * file created with O_EXCL that names its holder (pid, host, boot id, random token). A
 * holder on this host and boot whose pid is gone is dead, however it died; its file is
 * then moved aside and the create retried.
 */
import { randomBytes } from "node:crypto";
import * as nodeFs from "node:fs";
import * as fsp from "node:fs/promises";
import { hostname } from "node:os";
import { Clock, Effect, Exit, Option, Random, Schema } from "effect";
import { FsError } from "../ports/FileSystem.js";
import { fd } from "./fsCallbacks.js";
import { errnoCode, mapError } from "./fsErrno.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = nodeFs.constants;

/** Opening a lock file to read it: never follow a final symlink, never block on a FIFO. */
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
/** Creating a lock file: it must be new, and never a planted symlink. */
const createFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** A lock file larger than this is nobody's: {@link releaseLock} leaves it. */
const lockFileLimit = 1024 * 1024;

/**
 * The bytes of the regular file at `path` (never through a final symlink), read
 * synchronously (a lock file is tiny); `undefined` when it is larger than
 * {@link lockFileLimit}. Throws when it is missing or not a regular file.
 */
const readLockFileSync = (path: string): Uint8Array | undefined => {
  const descriptor = nodeFs.openSync(path, readFlags);
  try {
    const stats = nodeFs.fstatSync(descriptor);
    if (!stats.isFile()) throw new Error(`${path} is not a regular file`);
    if (stats.size > lockFileLimit) return undefined;
    return nodeFs.readFileSync(descriptor);
  } finally {
    nodeFs.closeSync(descriptor);
  }
};

const LockOwner = Schema.Struct({
  pid: Schema.Int.pipe(Schema.positive()),
  host: Schema.String,
  boot: Schema.optional(Schema.String),
  token: Schema.String,
});
type LockOwner = typeof LockOwner.Type;
const decodeLockOwner = Schema.decodeUnknownOption(Schema.parseJson(LockOwner));

/** A lock file that cannot be parsed is being written for at most this long. */
const unreadableLockGraceMs = 5_000;
const pollMinMs = 25;
const pollJitterMs = 25;

const bootId: string | undefined = (() => {
  try {
    return nodeFs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return undefined;
  }
})();

/**
 * Tokens of the locks this process holds, shared through `globalThis` so that two
 * copies of this module in one process agree: a lock file naming our pid whose token
 * is not here was left by an earlier process that had the same pid.
 */
const heldTokens = (): Set<string> => {
  const key = Symbol.for("quire/nodeFileSystem/heldLockTokens");
  const existing: unknown = Reflect.get(globalThis, key);
  if (existing instanceof Set) return existing;
  const created = new Set<string>();
  Reflect.set(globalThis, key, created);
  return created;
};

const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return errnoCode(error) !== "ESRCH";
  }
  return !isZombie(pid);
};

/**
 * Whether `pid` has exited but was not reaped yet (state `Z` in /proc/<pid>/stat, Linux):
 * signal 0 still reaches it, but it holds nothing any more. A host that stops reaping its
 * children (a killed sharing `serve`, say) otherwise kept its locks "live", and every call
 * of that copy waited for the lock and answered BUSY. `false` where /proc cannot tell.
 */
const isZombie = (pid: number): boolean => {
  try {
    const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) S …": comm may hold spaces and parentheses; the state follows the last ")".
    return stat.charAt(stat.lastIndexOf(")") + 2) === "Z";
  } catch {
    return false;
  }
};

/** What stands at the lock path right now. */
type LockState =
  | { readonly _tag: "Gone" }
  | { readonly _tag: "Live"; readonly holder: string }
  | { readonly _tag: "Stale"; readonly ino: number };

const judgeOwner = (owner: LockOwner, ino: number): LockState => {
  const holder = `pid ${owner.pid} on ${owner.host}`;
  // Another host's pids cannot be checked from here: assume it is alive.
  if (owner.host !== hostname()) return { _tag: "Live", holder };
  if (owner.boot !== undefined && bootId !== undefined && owner.boot !== bootId)
    return { _tag: "Stale", ino };
  if (owner.pid === process.pid)
    return heldTokens().has(owner.token) ? { _tag: "Live", holder } : { _tag: "Stale", ino };
  return isProcessAlive(owner.pid) ? { _tag: "Live", holder } : { _tag: "Stale", ino };
};

const inspectLock = async (path: string): Promise<LockState> => {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(path, readFlags);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { _tag: "Gone" };
    throw mapError(error, path, true);
  }
  try {
    // Identity and content come from the same open file, so they describe one lock.
    const stats = await handle.stat();
    const content = await handle.readFile("utf8");
    const owner = decodeLockOwner(content);
    if (Option.isSome(owner)) return judgeOwner(owner.value, stats.ino);
    // A holder writes its name right after the exclusive create; give it time.
    return Date.now() - stats.mtimeMs > unreadableLockGraceMs
      ? { _tag: "Stale", ino: stats.ino }
      : { _tag: "Live", holder: "a process that is still writing the lock file" };
  } finally {
    await handle.close();
  }
};

/**
 * Removes a stale lock file without ever deleting a lock someone else just took: the
 * file is renamed aside first and deleted only if it is the very inode judged stale.
 * If it is not (a competitor stole and re-took the lock meanwhile), it is linked back
 * if the path is still free. Residual race, accepted: a third process creating the lock
 * in the microseconds between that rename and the link-back would share the lock.
 */
export const stealLock = async (path: string, staleIno: number): Promise<void> => {
  // Named as setAsideLockName says: if this process dies before the rm below, a later
  // reaper (app/sessions.ts) or steal finds it by that name.
  const aside = `${path}.stale-${randomBytes(6).toString("hex")}`;
  try {
    await fsp.rename(path, aside);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  try {
    const moved = await fsp.lstat(aside);
    if (moved.ino !== staleIno) {
      await fsp.link(aside, path).catch((error: unknown) => {
        if (errnoCode(error) !== "EEXIST") throw error;
      });
    }
  } catch (error) {
    // Gone already: another process reaping set-aside locks judged it stale too (it
    // removes only a file whose holder is gone), so nothing is left to put back.
    if (errnoCode(error) !== "ENOENT") throw error;
  } finally {
    await fsp.rm(aside, { force: true });
  }
};

/**
 * One exclusive create; `true` if we now hold the lock. Through the callback API, not
 * `FileHandle`s: a commit takes and releases its copy's lock every time, and under
 * contention every call on the event loop counts (see fsCallbacks.ts).
 */
const tryCreateLock = async (path: string, owner: LockOwner): Promise<boolean> => {
  // Known as held before the file can be read: another fiber of this process that reads
  // our pid and token in it must judge it live, not left by an earlier process that had
  // our pid (the token was once added only after the close, and under load a competing
  // fiber read the file in between, judged it stale and took the lock too).
  heldTokens().add(owner.token);
  let descriptor: number;
  try {
    descriptor = await fd.open(path, createFlags, 0o600);
  } catch (error) {
    heldTokens().delete(owner.token);
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  try {
    try {
      await fd.writeAll(descriptor, Buffer.from(JSON.stringify(owner)));
    } finally {
      await fd.close(descriptor);
    }
    return true;
  } catch (error) {
    await fd.unlink(path).catch(() => undefined);
    heldTokens().delete(owner.token);
    throw error;
  }
};

/** Removes the lock file if it still names `token` (read synchronously: it is tiny). */
const releaseLock = async (path: string, token: string): Promise<void> => {
  try {
    const content = readLockFileSync(path);
    const owner =
      content === undefined ? Option.none() : decodeLockOwner(Buffer.from(content).toString());
    if (Option.isSome(owner) && owner.value.token === token) await fd.unlink(path);
  } catch {
    // Release never fails: a missing or foreign lock file is not ours to remove.
  } finally {
    heldTokens().delete(token);
  }
};

type Attempt =
  | { readonly _tag: "Acquired" }
  | { readonly _tag: "Retry" }
  | { readonly _tag: "Wait"; readonly holder: string };

const attemptLock = (path: string, owner: LockOwner) =>
  Effect.tryPromise({
    try: async (): Promise<Attempt> => {
      if (await tryCreateLock(path, owner)) return { _tag: "Acquired" };
      const state = await inspectLock(path);
      switch (state._tag) {
        case "Gone":
          return { _tag: "Retry" };
        case "Stale":
          await stealLock(path, state.ino);
          return { _tag: "Retry" };
        case "Live":
          return { _tag: "Wait", holder: state.holder };
      }
    },
    catch: (error) => mapError(error, path),
  });

const busy = (path: string, holder: string, timeoutMs: number): FsError =>
  new FsError({
    reason: "Busy",
    path,
    message: `lock ${path} is held by ${holder} (waited ${timeoutMs} ms)`,
    ...(holder.startsWith("pid ") || holder === "another call of this process" ? { holder } : {}),
  });

/**
 * The fibers of this process that want one lock take turns here before they try its
 * file. Through the file alone, a lock one fiber just released can look stale to
 * another that read it a moment before (its token no longer held), and that one's steal
 * would then displace the lock a third fiber had just created: two holders. An entry
 * goes once nobody waits for it, so the map holds only the paths in use.
 */
/**
 * This process's turn at one lock path: `held` while one of its calls holds (or is
 * taking) the lock file. Taken by a synchronous test-and-set, never by waiting on a
 * queue: a waiter that a timeout gave up on could otherwise still be handed the turn
 * and keep it forever (with a semaphore, a take made uninterruptible by its caller —
 * the acquire of an acquireUseRelease — outlived its own timeout, took the permit after
 * the timeout answered Busy, and every later call at that path hung: three first pulls
 * at once did it).
 */
interface Turn {
  held: boolean;
  users: number;
}

const turns = ((): Map<string, Turn> => {
  // On `globalThis`, like the held tokens: two copies of this module in one process
  // must take turns with each other too.
  const key = Symbol.for("quire/nodeFileSystem/lockTurns/v2");
  const existing: unknown = Reflect.get(globalThis, key);
  if (existing instanceof Map) return existing;
  const created = new Map<string, Turn>();
  Reflect.set(globalThis, key, created);
  return created;
})();

const enterTurn = (path: string): Turn => {
  let turn = turns.get(path);
  if (turn === undefined) {
    turn = { held: false, users: 0 };
    turns.set(path, turn);
  }
  turn.users += 1;
  return turn;
};

/** How often a wait for this process's own turn looks again. */
const turnPollMs = 5;

/**
 * Takes `turn` within `timeoutMs`: `true` when taken. Run uninterruptibly: the
 * test-and-set is synchronous, and only the sleeps between looks are `restore`d
 * (interruptible where the caller allows it), so neither giving up nor an interruption
 * can leave the turn taken without its taker knowing.
 */
const takeTurn = (
  turn: Turn,
  timeoutMs: number,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const deadline = (yield* Clock.currentTimeMillis) + timeoutMs;
    for (;;) {
      if (!turn.held) {
        turn.held = true;
        return true;
      }
      const now = yield* Clock.currentTimeMillis;
      if (now >= deadline) return false;
      yield* restore(Effect.sleep(Math.min(turnPollMs, deadline - now)));
    }
  });

const leaveTurn = (path: string, turn: Turn): void => {
  turn.users -= 1;
  if (turn.users === 0 && turns.get(path) === turn) turns.delete(path);
};

/** Takes the lock file itself (this process's turn at `path` already held). */
const lockFile = (
  path: string,
  owner: LockOwner,
  timeoutMs: number,
  start: number,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
) =>
  Effect.gen(function* () {
    for (;;) {
      const attempt = yield* attemptLock(path, owner);
      if (attempt._tag === "Acquired") return;
      const elapsed = (yield* Clock.currentTimeMillis) - start;
      if (attempt._tag === "Wait") {
        if (elapsed >= timeoutMs) return yield* Effect.fail(busy(path, attempt.holder, timeoutMs));
        const jitter = yield* Random.nextIntBetween(0, pollJitterMs);
        yield* restore(Effect.sleep(Math.min(pollMinMs + jitter, timeoutMs - elapsed)));
      }
    }
  });

/**
 * Removes a lock file left behind if its holder is gone, by the steal's own rename-aside
 * and inode check: no file is ever created at `path`, so a process stealing the same
 * file at that moment can never link back a lock of ours.
 */
export const removeDeadLock = (path: string): Effect.Effect<boolean, FsError> =>
  Effect.tryPromise({
    try: async () => {
      const state = await inspectLock(path);
      if (state._tag === "Live") return false;
      if (state._tag === "Stale") await stealLock(path, state.ino);
      return true;
    },
    catch: (error) => mapError(error, path),
  });

/**
 * Everything but the waits is uninterruptible, so an interrupted waiter can never
 * leave a lock file behind that nobody will release. Fibers of this process take turns
 * first (see `turns`), then the lock file decides between processes. Time comes from the
 * Effect `Clock`; the age of an unreadable lock file is judged by wall clock (file
 * mtimes are).
 */
export const lock = (path: string, timeoutMs: number) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const token = randomBytes(16).toString("hex");
      const owner: LockOwner = {
        pid: process.pid,
        host: hostname(),
        token,
        ...(bootId === undefined ? {} : { boot: bootId }),
      };
      const start = yield* Clock.currentTimeMillis;
      const turn = enterTurn(path);
      const leave = Effect.sync(() => leaveTurn(path, turn));
      const waited = yield* Effect.exit(takeTurn(turn, timeoutMs, restore));
      if (Exit.isFailure(waited))
        return yield* Effect.zipRight(leave, Effect.failCause(waited.cause));
      if (!waited.value)
        return yield* Effect.zipRight(
          leave,
          Effect.fail(busy(path, "another call of this process", timeoutMs)),
        );
      const endTurn = Effect.zipRight(
        Effect.sync(() => {
          turn.held = false;
        }),
        leave,
      );
      yield* lockFile(path, owner, timeoutMs, start, restore).pipe(
        Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : endTurn)),
      );
      let released = false;
      return Effect.suspend(() => {
        if (released) return Effect.void;
        released = true;
        return Effect.promise(() => releaseLock(path, token)).pipe(Effect.zipRight(endTurn));
      });
    }),
  );
