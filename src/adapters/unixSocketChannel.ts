/**
 * The LocalChannel port over Unix domain sockets (`node:net`). A name is the socket
 * `<name>.sock` in a directory only this user may enter (`$XDG_RUNTIME_DIR/quire`, or
 * `<tmp>/quire-<uid>`), checked like tmux checks its own: owned by this user, a real
 * directory, no access for group or others. A frame is UTF-8 text ended by one newline;
 * one request and one answer per connection. A request frame goes after the caller's
 * acknowledgement deadline on the host's monotonic clock; a listener that reads it after
 * that deadline (it was stopped meanwhile) closes the connection without running it, since
 * its caller runs it itself. The listener answers a request with one
 * acknowledgement byte (`+`) as soon as it has read it, then one heartbeat byte (0xFF,
 * which UTF-8 text never contains) every `heartbeatMs` while the handler runs, then the
 * answer frame; the caller bounds the wait for the first by `ackTimeoutMs` and every
 * later gap by `silenceMs`.
 *
 * A listener binds a private temporary socket and hard-links it to the public name,
 * which fails if the name exists. A name whose socket refuses connections (its listener
 * died) is removed and linked again; two processes doing that at the same instant may
 * both listen, and `reachable` tells the one nobody reaches. On close a listener
 * removes the public name only while it is still its own socket. A listener killed
 * between its bind and its link leaves its temporary socket; the next listen removes it
 * once it is a minute old and refuses connections.
 */
import { randomBytes } from "node:crypto";
import * as nodeFs from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as NodePath from "node:path";
import { Effect, Exit, Fiber, FiberId, Layer, Runtime } from "effect";
import {
  ChannelError,
  type ChannelHandler,
  LocalChannel,
  type LocalChannelService,
} from "../ports/LocalChannel.js";
import { errnoCode, errorMessage } from "./fsErrno.js";

const newline = 0x0a;
/** The byte a listener sends as soon as it has read a request, before the answer. */
const ack = 0x2b;
/** The byte a listener sends while a call runs: never part of UTF-8 text, so never of a frame. */
const heartbeat = 0xff;

/**
 * The host's monotonic clock in ms: the same clock in every process of this boot
 * (CLOCK_MONOTONIC, mach_absolute_time), never stepped like the wall clock.
 */
const hostNowMs = (): number => Number(process.hrtime.bigint() / 1_000_000n);

/**
 * A request line: the caller's acknowledgement deadline on {@link hostNowMs}, a space,
 * the frame. Past it the caller runs the call itself, so the listener must not.
 */
const requestLine = /^([0-9]{1,16}) /;

/** The longest socket path the platform accepts (sun_path, less its terminating NUL). */
const maxSocketPath = process.platform === "linux" ? 107 : 103;

/** The adapter's one error mapping: node's errno codes to the port's reasons. */
const mapError = (error: unknown, name: string): ChannelError => {
  const code = errnoCode(error);
  const reason =
    code === "ENOENT" || code === "ECONNREFUSED" || code === "ENOTSOCK"
      ? "Unreachable"
      : code === "EADDRINUSE" || code === "EEXIST"
        ? "InUse"
        : code === "ECONNRESET" || code === "EPIPE"
          ? "Broken"
          : "Other";
  return new ChannelError({ reason, name, message: errorMessage(error) });
};

/** Errno codes of a passing shortage of the process or host, not of the channel. */
const transientCodes = new Set(["EMFILE", "ENFILE", "EAGAIN", "ENOMEM", "ENOBUFS", "EINTR"]);

/**
 * Errno codes of a bind that no later attempt can get past: permissions, a read-only
 * file system, or one without Unix sockets (EOPNOTSUPP, ENOTSUP: some network, FUSE and
 * shared-folder file systems).
 */
const lastingCodes = new Set(["EACCES", "EPERM", "EROFS", "EOPNOTSUPP", "ENOTSUP"]);

const failure = (reason: ChannelError["reason"], name: string, message: string) =>
  new ChannelError({ reason, name, message });

/** Creates `directory` or checks an existing one: this user's, a directory, closed to others. */
const makePrivateDirectory = (directory: string): void => {
  try {
    nodeFs.mkdirSync(directory, { mode: 0o700 });
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
  const info = nodeFs.lstatSync(directory);
  const uid = process.getuid?.();
  if (!info.isDirectory() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o077) !== 0)
    throw new Error(`${directory} is not a directory private to this user`);
};

/** What a caller's reader reports besides the answer frame (see {@link readFrame}). */
interface AnswerSigns {
  /** The acknowledgement byte arrived. */
  readonly acknowledged: () => void;
  /** Anything arrived after the acknowledgement: a heartbeat or part of the answer. */
  readonly alive: () => void;
}

/**
 * Collects one newline-ended frame from `socket`: `done` gets the frame's text, or
 * `undefined` when more than `maxBytes` arrive without a newline, or (with `signs`)
 * when the bytes do not follow the answer's shape: the acknowledgement byte first,
 * heartbeats only before the frame. Whatever `done` throws destroys the socket instead
 * of reaching the event loop.
 */
const readFrame = (
  socket: net.Socket,
  maxBytes: number,
  done: (frame: string | undefined) => void,
  signs?: AnswerSigns,
): void => {
  const chunks: Array<Buffer> = [];
  let size = 0;
  let finished = false;
  let awaitingAck = signs !== undefined;
  // Heartbeats may come only between the acknowledgement and the answer's first byte.
  let beforeFrame = signs !== undefined;
  const finish = (frame: string | undefined) => {
    finished = true;
    try {
      done(frame);
    } catch {
      socket.destroy();
    }
  };
  socket.on("data", (received: Buffer) => {
    if (finished) return;
    let chunk = received;
    if (awaitingAck && chunk.length > 0) {
      awaitingAck = false;
      if (chunk[0] !== ack) {
        finish(undefined);
        return;
      }
      signs?.acknowledged();
      chunk = chunk.subarray(1);
    } else if (signs !== undefined && chunk.length > 0) signs.alive();
    if (beforeFrame) {
      let start = 0;
      while (start < chunk.length && chunk[start] === heartbeat) start++;
      chunk = chunk.subarray(start);
      if (chunk.length === 0) return;
      beforeFrame = false;
    }
    const end = chunk.indexOf(newline);
    const taken = end < 0 ? chunk : chunk.subarray(0, end);
    if (signs !== undefined && taken.includes(heartbeat)) {
      finish(undefined);
      return;
    }
    chunks.push(taken);
    size += taken.length;
    if (size > maxBytes) finish(undefined);
    else if (end >= 0) finish(Buffer.concat(chunks, size).toString("utf8"));
  });
};

/** A frame may not contain the newline that ends it. */
const checkFrame = (frame: string, name: string): Effect.Effect<string, ChannelError> =>
  frame.includes("\n")
    ? Effect.fail(failure("Other", name, "a frame must not contain a newline"))
    : Effect.succeed(frame);

/** Binds `server` to `path` (which must not exist). */
const bind = (server: net.Server, path: string, name: string): Effect.Effect<void, ChannelError> =>
  Effect.async<void, ChannelError>((resume) => {
    const onError = (error: Error) => {
      server.off("listening", onListening);
      const mapped = mapError(error, name);
      resume(
        Effect.fail(
          mapped.reason === "Unreachable"
            ? failure("Other", name, mapped.message) // the directory vanished
            : lastingCodes.has(errnoCode(error) ?? "")
              ? // No later call can bind here either: stop trying, as for a bad directory.
                failure("Unusable", name, mapped.message)
              : mapped,
        ),
      );
    };
    const onListening = () => {
      server.off("error", onError);
      resume(Effect.void);
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(path);
  });

/** One request frame sent to the socket at `path` and its answer frame. */
const exchange = (
  path: string,
  name: string,
  request: string,
  options: {
    readonly maxBytes: number;
    readonly ackTimeoutMs: number;
    readonly silenceMs: number;
  },
): Effect.Effect<string, ChannelError> =>
  Effect.async<string, ChannelError>((resume) => {
    const maxBytes = options.maxBytes;
    let settled = false;
    let deadline: ReturnType<typeof setTimeout> | undefined;
    const finish = (result: Effect.Effect<string, ChannelError>) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      resume(result);
    };
    /** Fails with `error` unless something arrives within `ms` (each arrival re-arms it). */
    const arm = (ms: number, error: () => ChannelError) => {
      clearTimeout(deadline);
      if (!settled) deadline = setTimeout(() => finish(Effect.fail(error())), ms);
    };
    const silent = () =>
      failure(
        "Silent",
        name,
        `acknowledged, then nothing for ${options.silenceMs} ms (the listener stopped mid-call)`,
      );
    // The listener's deadline, taken before this side's timer is armed and a little
    // short of it (a timer may fire early by as much as its loop's clock lags): a request
    // read near the end is dropped, and then runs here (Broken), rather than run there
    // while this side has already given up on it.
    const ackMargin = Math.min(250, Math.floor(options.ackTimeoutMs / 4));
    const ackDeadline = hostNowMs() + options.ackTimeoutMs - ackMargin;
    const unresponsive = () =>
      failure("Unresponsive", name, `no acknowledgement within ${options.ackTimeoutMs} ms`);
    // The timer alone does not prove the listener never started the call: it may fire
    // early (it counts from the loop's cached time), or late, after this loop was blocked
    // while an acknowledgement sent in time waited unread. So it gives up only once the
    // host's clock is past the listener's deadline (the listener refuses a request read
    // later), and only after one more turn of the loop's I/O (setImmediate runs after the
    // poll phase), which reads an acknowledgement already here.
    let acknowledged = false;
    const giveUp = (): void => {
      if (settled) return;
      // Early: waits until the margin past the listener's deadline too, as the first
      // timer does (a listener that read the request just before its deadline may be
      // descheduled before it writes the acknowledgement).
      const early = ackDeadline + ackMargin - hostNowMs();
      if (early > 0) {
        deadline = setTimeout(giveUp, early);
        return;
      }
      deadline = undefined;
      setImmediate(() => {
        if (!settled && !acknowledged) finish(Effect.fail(unresponsive()));
      });
    };
    clearTimeout(deadline);
    deadline = setTimeout(giveUp, options.ackTimeoutMs);
    const socket = net.createConnection(path, () => {
      socket.write(`${ackDeadline} ${request}\n`);
    });
    socket.on("error", (error) => finish(Effect.fail(mapError(error, name))));
    socket.on("close", () =>
      finish(Effect.fail(failure("Broken", name, "the connection closed before the answer"))),
    );
    readFrame(
      socket,
      maxBytes,
      (frame) =>
        finish(
          frame === undefined
            ? Effect.fail(
                failure(
                  "Broken",
                  name,
                  `the answer is not one well-formed frame of at most ${maxBytes} bytes`,
                ),
              )
            : Effect.succeed(frame),
        ),
      {
        acknowledged: () => {
          acknowledged = true;
          arm(options.silenceMs, silent);
        },
        alive: () => arm(options.silenceMs, silent),
      },
    );
    return Effect.sync(() => {
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
    });
  });

/**
 * Whether the socket at `path` is dead: nothing listens on it (refused) or it is not a
 * socket. Any other answer (accepted, or a full backlog) counts as alive.
 */
const isDead = (path: string): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const socket = net.createConnection(path, () => {
      socket.destroy();
      resume(Effect.succeed(false));
    });
    socket.on("error", (error) => {
      const code = errnoCode(error);
      resume(Effect.succeed(code === "ECONNREFUSED" || code === "ENOTSOCK"));
    });
  });

/** The calls in flight and open connections of one listener. */
interface Listening {
  closing: boolean;
  /**
   * Calls until their fiber ends, even after their connection closed (a hung-up call
   * may still be unwinding a critical section): not derivable from `sockets`.
   */
  readonly inFlight: Set<Fiber.RuntimeFiber<string>>;
  /** Open connections; `true` once the connection's call runs. */
  readonly sockets: Map<net.Socket, boolean>;
}

/** Serves connections on `server`: each one's frame goes to `handle`. */
const accept = (
  server: net.Server,
  handle: ChannelHandler,
  options: {
    readonly maxBytes: number;
    readonly heartbeatMs: number;
    readonly requestMs: number;
  },
  runtime: Runtime.Runtime<never>,
  state: Listening,
): void => {
  server.on("connection", (socket) => {
    state.sockets.set(socket, false);
    // A peer that sends nothing, or stalls mid-frame, costs its connection only so long.
    const stalled = setTimeout(() => socket.destroy(), options.requestMs);
    stalled.unref();
    socket.on("close", () => {
      clearTimeout(stalled);
      state.sockets.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    // The frame's limit plus its deadline's (see requestLine).
    readFrame(socket, options.maxBytes + 17, (line) => {
      clearTimeout(stalled);
      const deadline = line === undefined ? null : requestLine.exec(line);
      // A request read after its caller's acknowledgement deadline (this process was
      // stopped, or its thread wedged, meanwhile) is one its caller runs itself: it
      // must never run here too, however long after the caller gave up.
      if (
        line === undefined ||
        deadline === null ||
        Buffer.byteLength(line) - deadline[0].length > options.maxBytes ||
        hostNowMs() >= Number(deadline[1]) ||
        state.closing
      ) {
        socket.destroy();
        return;
      }
      const frame = line.slice(deadline[0].length);
      // Read and about to run: the caller stops counting toward its acknowledgement
      // deadline. Sent before the handler starts, so whatever the handler does (its
      // first log record included) comes after the acknowledgement.
      socket.write(Buffer.of(ack));
      const fiber = Runtime.runFork(runtime)(Effect.suspend(() => handle(frame)));
      state.inFlight.add(fiber);
      state.sockets.set(socket, true);
      // Signs of life while the call runs; one at a time: a caller that is not reading
      // them needs no pile of them.
      const beat = setInterval(() => {
        if (socket.writable && socket.writableLength === 0) socket.write(Buffer.of(heartbeat));
      }, options.heartbeatMs);
      beat.unref();
      // A caller that hangs up no longer wants the answer: its call is cancelled.
      const hangUp = () => fiber.unsafeInterruptAsFork(FiberId.none);
      socket.once("close", hangUp);
      fiber.addObserver((exit) => {
        clearInterval(beat);
        state.inFlight.delete(fiber);
        socket.off("close", hangUp);
        if (Exit.isSuccess(exit) && !exit.value.includes("\n")) socket.end(`${exit.value}\n`);
        else socket.destroy();
      });
    });
  });
};

/** A temporary socket's name, as {@link makeUnixSocketChannel}'s temporaryPath makes them. */
const temporaryName = /^[A-Za-z0-9-]{1,64}\.[0-9a-f]{8}\.t$/;

/**
 * How old a temporary socket must be before it may be reaped: far beyond the instant
 * between a listener's bind and its listen (when it refuses connections too), and the
 * link that follows.
 */
const temporaryAgeMs = 60_000;

/**
 * Removes the temporary sockets in `directory` left by listeners killed (SIGKILL, a
 * crash) between binding them and linking them to their name, which would stay
 * forever: only names this adapter makes, only sockets of this user, only older than
 * {@link temporaryAgeMs}, and only once they refuse connections — no process listens
 * on them, so none can be about to publish them. Never fails.
 */
const reapTemporaries = (directory: string): Effect.Effect<void> =>
  Effect.gen(function* () {
    let names: Array<string>;
    try {
      names = nodeFs.readdirSync(directory).filter((name) => temporaryName.test(name));
    } catch {
      return;
    }
    const uid = process.getuid?.();
    for (const name of names) {
      const file = NodePath.join(directory, name);
      let info: nodeFs.Stats;
      try {
        info = nodeFs.lstatSync(file);
      } catch {
        continue;
      }
      if (!info.isSocket() || (uid !== undefined && info.uid !== uid)) continue;
      if (Date.now() - info.mtimeMs < temporaryAgeMs) continue;
      if (!(yield* isDead(file))) continue;
      try {
        nodeFs.rmSync(file, { force: true });
      } catch {
        // Another listener reaped it first, or it cannot be removed: left as it is.
      }
    }
  });

/** The socket's identity, to tell our own socket at a path from a successor's. */
const inodeOf = (path: string): number | undefined => {
  try {
    return nodeFs.lstatSync(path).ino;
  } catch {
    return undefined;
  }
};

/** The channel over sockets in `directory` (see the module comment). */
export const makeUnixSocketChannel = (directory: string): LocalChannelService => {
  /** A fresh private name to bind before linking it to `name` (see the module comment). */
  const temporaryPath = (name: string): string =>
    NodePath.join(directory, `${name}.${randomBytes(4).toString("hex")}.t`);
  /**
   * The socket path of `name`, the directory created or checked first, before every
   * listen and every request: the directory may have been removed since (a tmp cleaner,
   * `rm -rf`) and made again by another user, open to others, with a listener of theirs
   * at the name, which must never get a call nor answer one. (Once checked, this user's
   * directory stays put where only its owner may rename or remove it: a sticky `/tmp`,
   * this user's own runtime directory.)
   */
  const socketPath = (name: string): Effect.Effect<string, ChannelError> =>
    Effect.try({
      try: () => {
        if (!/^[A-Za-z0-9-]{1,64}$/.test(name)) throw new Error(`invalid channel name ${name}`);
        const path = NodePath.join(directory, `${name}.sock`);
        if (Buffer.byteLength(path) > maxSocketPath)
          throw new Error(`the socket path ${path} is too long`);
        makePrivateDirectory(directory);
        return path;
      },
      // A passing shortage (descriptors, memory) is no verdict on the directory.
      catch: (error) =>
        failure(
          transientCodes.has(errnoCode(error) ?? "") ? "Other" : "Unusable",
          name,
          errorMessage(error),
        ),
    });

  /** Publishes the socket bound at `temp` as `path`, taking over a dead listener's name. */
  const publish = (temp: string, path: string, name: string): Effect.Effect<void, ChannelError> => {
    const link = Effect.try({
      try: () => nodeFs.linkSync(temp, path),
      catch: (error) => mapError(error, name),
    });
    return link.pipe(
      Effect.catchIf(
        (error) => error.reason === "InUse",
        (inUse) =>
          Effect.flatMap(isDead(path), (dead) =>
            dead
              ? Effect.try({
                  try: () => nodeFs.rmSync(path, { force: true }),
                  catch: (error) => mapError(error, name),
                }).pipe(Effect.zipRight(link))
              : Effect.fail(inUse),
          ),
      ),
    );
  };

  return {
    listen: (name, handle, options) =>
      Effect.gen(function* () {
        const path = yield* socketPath(name);
        yield* reapTemporaries(directory);
        const temp = temporaryPath(name);
        if (Buffer.byteLength(temp) > maxSocketPath)
          return yield* failure("Unusable", name, `the socket path ${temp} is too long`);
        const runtime = yield* Effect.runtime<never>();
        const state: Listening = { closing: false, inFlight: new Set(), sockets: new Map() };
        const server = net.createServer();
        // A peer opening connections without end costs the process at most this many
        // descriptors and buffered requests: node closes the ones beyond it on accept.
        server.maxConnections = options.maxConnections;
        // Later server errors (a failed accept) must not crash the process.
        server.on("error", () => undefined);
        accept(server, handle, options, runtime, state);
        const close = Effect.sync(() => {
          state.closing = true;
          server.close();
        });
        yield* bind(server, temp, name);
        const ino = inodeOf(temp);
        yield* publish(temp, path, name).pipe(
          Effect.ensuring(Effect.sync(() => nodeFs.rmSync(temp, { force: true }))),
          Effect.tapError(() => close),
        );
        yield* Effect.addFinalizer(() =>
          Effect.gen(function* () {
            if (ino !== undefined && inodeOf(path) === ino) nodeFs.rmSync(path, { force: true });
            yield* close;
            // Connections that have not sent their frame yet get no answer.
            for (const [socket, busy] of state.sockets) if (!busy) socket.destroy();
            // Finalizers run uninterruptibly; the wait must be, or the timeout could not cut it.
            const finished = yield* Effect.forEach([...state.inFlight], Fiber.await, {
              discard: true,
            }).pipe(
              Effect.interruptible,
              Effect.timeoutTo({
                duration: options.graceMs,
                onSuccess: () => true,
                onTimeout: () => false,
              }),
            );
            if (!finished)
              yield* Effect.forEach([...state.inFlight], Fiber.interrupt, {
                concurrency: "unbounded",
                discard: true,
              });
            for (const socket of state.sockets.keys()) socket.destroy();
          }),
        );
        return { reachable: Effect.sync(() => ino !== undefined && inodeOf(path) === ino) };
      }),

    request: (name, request, options) =>
      Effect.all([socketPath(name), checkFrame(request, name)]).pipe(
        Effect.flatMap(([path, frame]) => exchange(path, name, frame, options)),
      ),
  };
};

/** The directory of this user's quire sockets on this host. */
export const defaultDirectory = (): string => {
  const runtimeDir = process.env["XDG_RUNTIME_DIR"];
  if (runtimeDir !== undefined && NodePath.isAbsolute(runtimeDir))
    return NodePath.join(runtimeDir, "quire");
  // macOS's per-user temporary directory is too deep for socket paths.
  const base = process.platform === "darwin" ? "/tmp" : tmpdir();
  return NodePath.join(base, `quire-${process.getuid?.() ?? "user"}`);
};

/** The LocalChannel layer over Unix domain sockets in `directory` (default: see above). */
export const layer = (directory: string = defaultDirectory()): Layer.Layer<LocalChannel> =>
  Layer.sync(LocalChannel, () => makeUnixSocketChannel(directory));
