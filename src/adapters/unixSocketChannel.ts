/**
 * The LocalChannel port over Unix domain sockets (`node:net`). A name is the socket
 * `<name>.sock` in a directory only this user may enter (`$XDG_RUNTIME_DIR/quire`, or
 * `<tmp>/quire-<uid>`), checked like tmux checks its own: owned by this user, a real
 * directory, no access for group or others. A frame is UTF-8 text ended by one newline;
 * one request and one answer per connection.
 */
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

/** Longest socket path every supported platform accepts (sun_path is 104–108 bytes). */
const maxSocketPath = 100;

/** The adapter's one error mapping: node's errno codes to the port's reasons. */
const mapError = (error: unknown, name: string): ChannelError => {
  const code = errnoCode(error);
  const reason =
    code === "ENOENT" || code === "ECONNREFUSED" || code === "ENOTSOCK"
      ? "Unreachable"
      : code === "EADDRINUSE"
        ? "InUse"
        : code === "ECONNRESET" || code === "EPIPE"
          ? "Broken"
          : "Other";
  return new ChannelError({ reason, name, message: errorMessage(error) });
};

const failure = (reason: ChannelError["reason"], name: string, message: string) =>
  new ChannelError({ reason, name, message });

/** The socket path of `name` in `directory`, which is created or checked first. */
const socketPath = (directory: string, name: string): Effect.Effect<string, ChannelError> =>
  Effect.try({
    try: () => {
      if (!/^[A-Za-z0-9-]{1,64}$/.test(name)) throw new Error(`invalid channel name ${name}`);
      const path = NodePath.join(directory, `${name}.sock`);
      if (Buffer.byteLength(path) > maxSocketPath)
        throw new Error(`the socket path ${path} is too long`);
      try {
        nodeFs.mkdirSync(directory, { mode: 0o700 });
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      const info = nodeFs.lstatSync(directory);
      const uid = process.getuid?.();
      if (
        !info.isDirectory() ||
        (uid !== undefined && info.uid !== uid) ||
        (info.mode & 0o077) !== 0
      )
        throw new Error(`${directory} is not a directory private to this user`);
      return path;
    },
    catch: (error) => failure("Other", name, errorMessage(error)),
  });

/**
 * Collects one newline-ended frame from `socket`: `done` gets the frame's text, or
 * `undefined` when more than `maxBytes` arrive without a newline.
 */
const readFrame = (
  socket: net.Socket,
  maxBytes: number,
  done: (frame: string | undefined) => void,
): void => {
  const chunks: Array<Buffer> = [];
  let size = 0;
  let finished = false;
  socket.on("data", (chunk: Buffer) => {
    if (finished) return;
    const end = chunk.indexOf(newline);
    const taken = end < 0 ? chunk : chunk.subarray(0, end);
    chunks.push(taken);
    size += taken.length;
    if (size > maxBytes) {
      finished = true;
      done(undefined);
    } else if (end >= 0) {
      finished = true;
      done(Buffer.concat(chunks, size).toString("utf8"));
    }
  });
};

/** Binds `server` to `path`: `InUse` when the path exists. */
const bind = (server: net.Server, path: string, name: string): Effect.Effect<void, ChannelError> =>
  Effect.async<void, ChannelError>((resume) => {
    const onError = (error: Error) => resume(Effect.fail(mapError(error, name)));
    server.once("error", onError);
    server.listen(path, () => {
      server.off("error", onError);
      // Later server errors (a failed accept) must not crash the process.
      server.on("error", () => undefined);
      resume(Effect.void);
    });
  });

/** One request frame sent to the socket at `path` and its answer frame. */
const exchange = (
  path: string,
  name: string,
  request: string,
  maxBytes: number,
): Effect.Effect<string, ChannelError> =>
  Effect.async<string, ChannelError>((resume) => {
    let settled = false;
    const finish = (result: Effect.Effect<string, ChannelError>) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resume(result);
    };
    const socket = net.createConnection(path, () => {
      socket.write(`${request}\n`);
    });
    socket.on("error", (error) => finish(Effect.fail(mapError(error, name))));
    socket.on("close", () =>
      finish(Effect.fail(failure("Broken", name, "the connection closed before the answer"))),
    );
    readFrame(socket, maxBytes, (frame) =>
      finish(
        frame === undefined
          ? Effect.fail(failure("Broken", name, `the answer is longer than ${maxBytes} bytes`))
          : Effect.succeed(frame),
      ),
    );
    return Effect.sync(() => {
      settled = true;
      socket.destroy();
    });
  });

/** Whether a live process accepts connections at `path`. */
const answers = (path: string): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const socket = net.createConnection(path, () => {
      socket.destroy();
      resume(Effect.succeed(true));
    });
    socket.on("error", () => resume(Effect.succeed(false)));
  });

/** Serves connections on `server`: each one's frame goes to `handle`. */
const accept = (
  server: net.Server,
  handle: ChannelHandler,
  maxBytes: number,
  runtime: Runtime.Runtime<never>,
  inFlight: Set<Fiber.RuntimeFiber<string>>,
): void => {
  server.on("connection", (socket) => {
    socket.on("error", () => socket.destroy());
    readFrame(socket, maxBytes, (frame) => {
      if (frame === undefined) {
        socket.destroy();
        return;
      }
      const fiber = Runtime.runFork(runtime)(handle(frame));
      inFlight.add(fiber);
      // A caller that hangs up no longer wants the answer: its call is cancelled.
      const hangUp = () => fiber.unsafeInterruptAsFork(FiberId.none);
      socket.once("close", hangUp);
      fiber.addObserver((exit) => {
        inFlight.delete(fiber);
        socket.off("close", hangUp);
        if (Exit.isSuccess(exit)) socket.end(`${exit.value}\n`);
        else socket.destroy();
      });
    });
  });
};

/** The channel over sockets in `directory` (see the module comment). */
export const makeUnixSocketChannel = (directory: string): LocalChannelService => ({
  listen: (name, handle, options) =>
    Effect.gen(function* () {
      const path = yield* socketPath(directory, name);
      const runtime = yield* Effect.runtime<never>();
      const inFlight = new Set<Fiber.RuntimeFiber<string>>();
      const server = net.createServer();
      accept(server, handle, options.maxBytes, runtime, inFlight);
      yield* Effect.acquireRelease(
        bind(server, path, name).pipe(
          Effect.catchIf(
            (error) => error.reason === "InUse",
            (inUse) =>
              // A socket nobody answers on is a dead listener's: take the name over. Two
              // processes doing so at once may both listen, one on an unlinked socket
              // nobody reaches; that costs sharing, never correctness.
              Effect.flatMap(answers(path), (live) =>
                live
                  ? Effect.fail(inUse)
                  : Effect.try({
                      try: () => nodeFs.rmSync(path, { force: true }),
                      catch: (error) => mapError(error, name),
                    }).pipe(Effect.zipRight(bind(server, path, name))),
              ),
          ),
        ),
        () =>
          Effect.gen(function* () {
            // Stop accepting (libuv removes the socket file), then let the calls end.
            yield* Effect.sync(() => server.close());
            // Finalizers run uninterruptibly; the wait must be, or the timeout could not cut it.
            const finished = yield* Effect.forEach([...inFlight], Fiber.await, {
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
              yield* Effect.forEach([...inFlight], Fiber.interrupt, {
                concurrency: "unbounded",
                discard: true,
              });
          }),
      );
    }),

  request: (name, request, maxBytes) =>
    Effect.flatMap(socketPath(directory, name), (path) => exchange(path, name, request, maxBytes)),
});

/** The directory of this user's quire sockets on this host. */
export const defaultDirectory = (): string => {
  const runtimeDir = process.env["XDG_RUNTIME_DIR"];
  if (runtimeDir !== undefined && NodePath.isAbsolute(runtimeDir))
    return NodePath.join(runtimeDir, "quire");
  return NodePath.join(tmpdir(), `quire-${process.getuid?.() ?? "user"}`);
};

/** The LocalChannel layer over Unix domain sockets in `directory` (default: see above). */
export const layer = (directory: string = defaultDirectory()): Layer.Layer<LocalChannel> =>
  Layer.sync(LocalChannel, () => makeUnixSocketChannel(directory));
