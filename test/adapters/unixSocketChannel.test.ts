import { spawn } from "node:child_process";
import * as net from "node:net";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "@effect/vitest";
import { Deferred, Effect, Either, Exit, Fiber, Scope } from "effect";
import { makeUnixSocketChannel } from "../../src/adapters/unixSocketChannel.js";

const root = mkdtempSync(path.join(tmpdir(), "quire-chan-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let count = 0;
/** A fresh private socket directory and its channel. */
const fresh = () => {
  const directory = path.join(root, `d${count++}`);
  return { directory, channel: makeUnixSocketChannel(directory) };
};

const options = {
  maxBytes: 1024,
  graceMs: 2_000,
  heartbeatMs: 1_000,
  requestMs: 10_000,
  maxConnections: 64,
};
/** Request options: answers up to `maxBytes`, acknowledged within 2 s, silent at most 10 s. */
const req = (maxBytes: number) => ({ maxBytes, ackTimeoutMs: 2_000, silenceMs: 10_000 });
const echo = (request: string) => Effect.succeed(`echo:${request}`);

describe("unixSocketChannel", () => {
  it.live("answers one request per connection with the handler's frame", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* channel.listen("n1", echo, options);
      expect(statSync(directory).mode & 0o777).toBe(0o700);
      const answers = yield* Effect.all(
        ["a", "b ü", "c"].map((frame) => channel.request("n1", frame, req(1024))),
        { concurrency: "unbounded" },
      );
      expect(answers).toEqual(["echo:a", "echo:b ü", "echo:c"]);
    }).pipe(Effect.scoped),
  );

  it.live("a name nobody listens at is Unreachable; a live listener makes it InUse", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      const none = yield* Effect.either(channel.request("n2", "x", req(1024)));
      expect(Either.isLeft(none) && none.left.reason).toBe("Unreachable");
      yield* channel.listen("n2", echo, options);
      const second = yield* Effect.either(Effect.scoped(channel.listen("n2", echo, options)));
      expect(Either.isLeft(second) && second.left.reason).toBe("InUse");
      expect(yield* channel.request("n2", "still", req(1024))).toBe("echo:still");
    }).pipe(Effect.scoped),
  );

  it.live("closing the scope frees the name for the next listener", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.scoped(channel.listen("n3", echo, options));
      expect(existsSync(path.join(directory, "n3.sock"))).toBe(false);
      const after = yield* Effect.either(channel.request("n3", "x", req(1024)));
      expect(Either.isLeft(after) && after.left.reason).toBe("Unreachable");
      yield* channel.listen("n3", () => Effect.succeed("second"), options);
      expect(yield* channel.request("n3", "x", req(1024))).toBe("second");
    }).pipe(Effect.scoped),
  );

  it.live("takes the name over from a listener killed with SIGKILL", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      // Create the directory the way the adapter does, then let another process listen.
      yield* Effect.either(channel.request("n4", "x", req(1024)));
      const socket = path.join(directory, "n4.sock");
      const child = spawn(process.execPath, [
        "-e",
        `require("node:net").createServer().listen(${JSON.stringify(socket)}, () => console.log("up"))`,
      ]);
      yield* Effect.async<void>((resume) => {
        child.stdout.once("data", () => resume(Effect.void));
      });
      child.kill("SIGKILL");
      yield* Effect.async<void>((resume) => {
        child.once("exit", () => resume(Effect.void));
      });
      expect(existsSync(socket)).toBe(true);
      const stale = yield* Effect.either(channel.request("n4", "x", req(1024)));
      expect(Either.isLeft(stale) && stale.left.reason).toBe("Unreachable");
      yield* channel.listen("n4", echo, options);
      expect(yield* channel.request("n4", "y", req(1024))).toBe("echo:y");
    }).pipe(Effect.scoped),
  );

  it.live(
    "an acknowledgement that arrived in time while the caller's loop was blocked is not taken for silence",
    () =>
      Effect.gen(function* () {
        const { directory, channel } = fresh();
        yield* Effect.either(channel.request("b1", "x", req(1024)));
        const socket = path.join(directory, "b1.sock");
        // Another process: it acknowledges 100 ms after reading the request (well before
        // the caller's deadline) and answers 200 ms later, while this process is blocked.
        const child = spawn(process.execPath, [
          "-e",
          `require("node:net").createServer((s) => s.once("data", () => {
          setTimeout(() => s.write("+"), 100);
          setTimeout(() => s.end("done\\n"), 300);
        })).listen(${JSON.stringify(socket)}, () => console.log("up"))`,
        ]);
        yield* Effect.async<void>((resume) => {
          child.stdout.once("data", () => resume(Effect.void));
        });
        const call = yield* Effect.fork(
          channel.request("b1", "x", { maxBytes: 1024, ackTimeoutMs: 400, silenceMs: 5_000 }),
        );
        yield* Effect.sleep("30 millis");
        // This process's loop is blocked past the acknowledgement timer: when it runs again,
        // the timer has expired and the acknowledgement waits unread. The listener started
        // the call; taking it for unresponsive would run it here too.
        // Blocked in the loop's check phase (setImmediate): its next turn runs the expired
        // timers before it polls for I/O (blocked in a timer callback, the poll would come
        // first and read the acknowledgement).
        yield* Effect.async<void>((resume) => {
          setImmediate(() => {
            const until = Date.now() + 1_500;
            while (Date.now() < until);
            resume(Effect.void);
          });
        });
        const answer = yield* Effect.either(Fiber.join(call));
        child.kill("SIGKILL");
        expect(answer).toEqual(Either.right("done"));
      }).pipe(Effect.scoped),
  );

  it.live("a leftover file that is not a socket is taken over too", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.either(channel.request("n5", "x", req(1024)));
      writeFileSync(path.join(directory, "n5.sock"), "junk");
      yield* channel.listen("n5", echo, options);
      expect(yield* channel.request("n5", "z", req(1024))).toBe("echo:z");
    }).pipe(Effect.scoped),
  );

  it.live("of two listeners taking over a dead name at once, exactly one is reached", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      const other = makeUnixSocketChannel(directory);
      yield* Effect.either(channel.request("t1", "x", req(1024)));
      writeFileSync(path.join(directory, "t1.sock"), "dead");
      const [one, two] = yield* Effect.all(
        [
          Effect.either(channel.listen("t1", () => Effect.succeed("one"), options)),
          Effect.either(other.listen("t1", () => Effect.succeed("two"), options)),
        ],
        { concurrency: "unbounded" },
      );
      const reached = yield* Effect.all(
        [one, two].map((result) =>
          Either.isRight(result) ? result.right.reachable : Effect.succeed(false),
        ),
      );
      expect(reached.filter(Boolean)).toHaveLength(1);
      for (const result of [one, two])
        if (Either.isLeft(result)) expect(result.left.reason).toBe("InUse");
      const answer = yield* channel.request("t1", "x", req(1024));
      expect(answer).toBe(reached[0] === true ? "one" : "two");
    }).pipe(Effect.scoped),
  );

  it.live("a listener that closes leaves a successor's socket at its name alone", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      const first = yield* Scope.make();
      yield* channel.listen("t2", () => Effect.succeed("first"), options).pipe(Scope.extend(first));
      // Someone removed the name meanwhile, and a successor took it.
      rmSync(path.join(directory, "t2.sock"));
      const second = yield* channel.listen("t2", () => Effect.succeed("second"), options);
      yield* Scope.close(first, Exit.void);
      expect(yield* second.reachable).toBe(true);
      expect(yield* channel.request("t2", "x", req(1024))).toBe("second");
    }).pipe(Effect.scoped),
  );

  it.live("refuses to send a frame that contains a newline", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      yield* channel.listen("t3", echo, options);
      const sent = yield* Effect.either(channel.request("t3", "a\nb", req(1024)));
      expect(Either.isLeft(sent) && sent.left.reason).toBe("Other");
    }).pipe(Effect.scoped),
  );

  it.live("a handler that throws while building its effect costs only that connection", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      yield* channel.listen(
        "t4",
        (request) => {
          if (request === "boom") throw new Error("thrown while building the effect");
          return Effect.succeed("fine");
        },
        options,
      );
      const boom = yield* Effect.either(channel.request("t4", "boom", req(1024)));
      expect(Either.isLeft(boom) && boom.left.reason).toBe("Broken");
      expect(yield* channel.request("t4", "ok", req(1024))).toBe("fine");
    }).pipe(Effect.scoped),
  );

  it.live("a listener that accepts but never acknowledges is Unresponsive; a slow one is not", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.either(channel.request("u1", "x", req(1024)));
      // A process that accepts connections and does nothing, like a stopped one.
      const mute = net.createServer(() => undefined);
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => {
          mute.listen(path.join(directory, "u1.sock"), () => resume(Effect.void));
        }),
        () => Effect.sync(() => mute.close()),
      );
      const started = Date.now();
      const silent = yield* Effect.either(
        channel.request("u1", "x", { maxBytes: 1024, ackTimeoutMs: 200, silenceMs: 10_000 }),
      );
      expect(Either.isLeft(silent) && silent.left.reason).toBe("Unresponsive");
      expect(Date.now() - started).toBeLessThan(2_000);
      // A listener acknowledges at once, however long its answer takes.
      yield* channel.listen(
        "u2",
        () => Effect.sleep("400 millis").pipe(Effect.as("late but fine")),
        options,
      );
      expect(
        yield* channel.request("u2", "x", { maxBytes: 1024, ackTimeoutMs: 100, silenceMs: 10_000 }),
      ).toBe("late but fine");
    }).pipe(Effect.scoped),
  );

  /** A raw listener at `name` that answers every request with `reply` (bytes), then stays open or closes. */
  const rawListener = (directory: string, name: string, reply: Buffer, then: "stay" | "close") => {
    const sockets: Array<net.Socket> = [];
    let hungUp = 0;
    const server = net.createServer((socket) => {
      sockets.push(socket);
      socket.once("close", () => hungUp++);
      socket.once("data", () => {
        if (then === "close") socket.end(reply);
        else socket.write(reply);
      });
    });
    return Effect.acquireRelease(
      Effect.async<{ readonly hungUp: () => number }>((resume) => {
        server.listen(path.join(directory, `${name}.sock`), () =>
          resume(Effect.succeed({ hungUp: () => hungUp })),
        );
      }),
      () =>
        Effect.sync(() => {
          for (const socket of sockets) socket.destroy();
          server.close();
        }),
    );
  };

  it.live("a listener that acknowledges and then sends nothing is Silent, and is hung up on", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.either(channel.request("s1", "x", req(1024)));
      // Acknowledged, then nothing, like a process stopped mid-call: without a bound on
      // the silence this request would wait forever.
      const stopped = yield* rawListener(directory, "s1", Buffer.of(0x2b), "stay");
      const silent = yield* Effect.either(
        channel.request("s1", "x", { maxBytes: 1024, ackTimeoutMs: 60_000, silenceMs: 300 }),
      );
      expect(Either.isLeft(silent) && silent.left.reason).toBe("Silent");
      // The caller closed the connection (which interrupts the call once the listener runs).
      while (stopped.hungUp() === 0) yield* Effect.sleep("10 millis");
      // Heartbeats then silence: silent too.
      yield* rawListener(directory, "s2", Buffer.of(0x2b, 0xff, 0xff), "stay");
      const beatThenSilent = yield* Effect.either(
        channel.request("s2", "x", { maxBytes: 1024, ackTimeoutMs: 60_000, silenceMs: 300 }),
      );
      expect(Either.isLeft(beatThenSilent) && beatThenSilent.left.reason).toBe("Silent");
    }).pipe(Effect.scoped),
  );

  it.live("a call that runs longer than the allowed silence is kept alive by heartbeats", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      yield* channel.listen(
        "s3",
        () => Effect.sleep("1500 millis").pipe(Effect.as("slow but alive")),
        { maxBytes: 1024, graceMs: 2_000, heartbeatMs: 20, requestMs: 10_000, maxConnections: 64 },
      );
      expect(
        yield* channel.request("s3", "x", { maxBytes: 1024, ackTimeoutMs: 2_000, silenceMs: 500 }),
      ).toBe("slow but alive");
    }).pipe(Effect.scoped),
  );

  it.live("answers that break the shape, or end before the newline, are Broken", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.either(channel.request("g0", "x", req(1024)));
      const cases: ReadonlyArray<readonly [string, Buffer, "stay" | "close"]> = [
        // No acknowledgement byte first.
        ["g1", Buffer.from('{"ok":1}\n'), "stay"],
        // A heartbeat inside the answer frame.
        [
          "g2",
          Buffer.concat([Buffer.of(0x2b), Buffer.from("ab"), Buffer.of(0xff), Buffer.from("c\n")]),
          "stay",
        ],
        // Half an answer, then the connection closes.
        ["g3", Buffer.concat([Buffer.of(0x2b, 0xff), Buffer.from('{"ok":{"pa')]), "close"],
        // Acknowledged, then closed with no answer.
        ["g4", Buffer.of(0x2b), "close"],
      ];
      for (const [name, reply, then] of cases) {
        yield* rawListener(directory, name, reply, then);
        const answer = yield* Effect.either(channel.request(name, "x", req(1024)));
        expect(Either.isLeft(answer) && answer.left.reason, name).toBe("Broken");
      }
      // Heartbeats before the frame are not part of it.
      yield* rawListener(
        directory,
        "g5",
        Buffer.concat([Buffer.of(0x2b, 0xff, 0xff), Buffer.from("whole\n")]),
        "stay",
      );
      expect(yield* channel.request("g5", "x", req(1024))).toBe("whole");
    }).pipe(Effect.scoped),
  );

  it.live("a caller that hangs up interrupts its handler", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      const started = yield* Deferred.make<void>();
      const interrupted = yield* Deferred.make<void>();
      yield* channel.listen(
        "n6",
        () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.zipRight(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)),
          ),
        options,
      );
      const call = yield* Effect.fork(channel.request("n6", "wait", req(1024)));
      yield* Deferred.await(started);
      yield* Fiber.interrupt(call);
      yield* Deferred.await(interrupted).pipe(Effect.timeout("5 seconds"));
    }).pipe(Effect.scoped),
  );

  it.live("oversized frames are refused on both sides", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      const handled: Array<string> = [];
      yield* channel.listen(
        "n7",
        (request) => Effect.sync(() => handled.push(request)).pipe(Effect.as("x".repeat(64))),
        { maxBytes: 16, graceMs: 1_000, heartbeatMs: 1_000, requestMs: 10_000, maxConnections: 64 },
      );
      const big = yield* Effect.either(channel.request("n7", "y".repeat(17), req(1024)));
      expect(Either.isLeft(big) && big.left.reason).toBe("Broken");
      const bigAnswer = yield* Effect.either(channel.request("n7", "small", req(32)));
      expect(Either.isLeft(bigAnswer) && bigAnswer.left.reason).toBe("Broken");
      expect(handled).toEqual(["small"]);
    }).pipe(Effect.scoped),
  );

  it.live("closing waits for calls in flight up to the grace, then interrupts them", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      const scope = yield* Scope.make();
      const started = yield* Deferred.make<void>();
      yield* channel
        .listen(
          "n8",
          (request) =>
            request === "slow"
              ? Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never))
              : Deferred.succeed(started, undefined).pipe(
                  Effect.zipRight(Effect.sleep("100 millis")),
                  Effect.as("done"),
                ),
          { maxBytes: 64, graceMs: 300, heartbeatMs: 1_000, requestMs: 10_000, maxConnections: 64 },
        )
        .pipe(Scope.extend(scope));
      const quick = yield* Effect.fork(channel.request("n8", "quick", req(64)));
      yield* Deferred.await(started);
      yield* Scope.close(scope, Exit.void);
      expect(yield* Fiber.join(quick)).toBe("done");

      const second = yield* Scope.make();
      const slowStarted = yield* Deferred.make<void>();
      yield* channel
        .listen(
          "n8",
          () => Deferred.succeed(slowStarted, undefined).pipe(Effect.zipRight(Effect.never)),
          { maxBytes: 64, graceMs: 300, heartbeatMs: 1_000, requestMs: 10_000, maxConnections: 64 },
        )
        .pipe(Scope.extend(second));
      const slow = yield* Effect.fork(channel.request("n8", "slow", req(64)));
      yield* Deferred.await(slowStarted);
      yield* Scope.close(second, Exit.void);
      const cut = yield* Effect.either(Fiber.join(slow));
      expect(Either.isLeft(cut) && cut.left.reason).toBe("Broken");
    }),
  );

  it.live(
    "reaps the temporary socket of a listener killed before it published it, and only that",
    () =>
      Effect.gen(function* () {
        const { directory, channel } = fresh();
        yield* Effect.either(channel.request("r1", "x", req(1024)));
        /** A socket at `file` bound by another process, killed (SIGKILL) unless `live`. */
        const boundBy = (file: string, live: boolean) =>
          Effect.async<void>((resume) => {
            const child = spawn(process.execPath, [
              "-e",
              `require("node:net").createServer().listen(${JSON.stringify(file)}, () => console.log("up"))`,
            ]);
            child.stdout.once("data", () => {
              if (live) {
                running.push(child);
                resume(Effect.void);
                return;
              }
              child.once("exit", () => resume(Effect.void));
              child.kill("SIGKILL");
            });
          });
        const running: Array<{ kill: (signal: NodeJS.Signals) => boolean }> = [];
        const old = new Date(Date.now() - 10 * 60_000);
        const stale = path.join(directory, "r1.0badc0de.t");
        const otherName = path.join(directory, "store-0123.89abcdef.t");
        const live = path.join(directory, "r1.1badc0de.t");
        const young = path.join(directory, "r1.2badc0de.t");
        const notOurs = path.join(directory, "r1.zzzzzzzz.t");
        yield* boundBy(stale, false);
        yield* boundBy(otherName, false);
        yield* boundBy(live, true);
        yield* boundBy(young, false);
        yield* boundBy(notOurs, false);
        for (const file of [stale, otherName, live, notOurs]) utimesSync(file, old, old);
        try {
          yield* Effect.scoped(channel.listen("r1", echo, options));
          // Dead and old: nobody can be about to publish them.
          expect(existsSync(stale)).toBe(false);
          expect(existsSync(otherName)).toBe(false);
          // A live one may be about to be published; a young one may be between its bind
          // and its listen; a name the adapter never makes is not its own.
          expect([existsSync(live), existsSync(young), existsSync(notOurs)]).toEqual([
            true,
            true,
            true,
          ]);
        } finally {
          for (const child of running) child.kill("SIGKILL");
        }
      }),
  );

  it.live("refuses a directory other users may enter, and names that are not tokens", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      yield* Effect.either(channel.request("n9", "x", req(1024)));
      chmodSync(directory, 0o755);
      const open = yield* Effect.either(Effect.scoped(channel.listen("n9", echo, options)));
      // Its own reason: the channel can never work here (unlike a transient failure).
      expect(Either.isLeft(open) && open.left.reason).toBe("Unusable");
      const sent = yield* Effect.either(channel.request("n9", "x", req(1024)));
      expect(Either.isLeft(sent) && sent.left.reason).toBe("Unusable");
      chmodSync(directory, 0o700);
      const badName = yield* Effect.either(channel.request("../n9", "x", req(1024)));
      expect(Either.isLeft(badName) && badName.left.reason).toBe("Unusable");
    }),
  );
});

describe("unixSocketChannel bind failures", () => {
  /** Makes every `server.listen` fail with `code`, as a bind on such a file system does. */
  const failingBinds = (code: string) => {
    const original = net.Server.prototype.listen;
    net.Server.prototype.listen = function (this: net.Server) {
      process.nextTick(() =>
        this.emit("error", Object.assign(new Error(`${code}: bind failed`), { code })),
      );
      return this;
    } as typeof original;
    return () => {
      net.Server.prototype.listen = original;
    };
  };

  it.live.each(["EOPNOTSUPP", "ENOTSUP", "EACCES", "EROFS"])(
    "a bind refused with %s for good is Unusable, not retried as a passing failure",
    (code) =>
      Effect.gen(function* () {
        const { channel } = fresh();
        const restore = failingBinds(code);
        const bound = yield* Effect.either(
          Effect.scoped(channel.listen("n10", echo, options)),
        ).pipe(Effect.ensuring(Effect.sync(restore)));
        expect(Either.isLeft(bound) && bound.left.reason).toBe("Unusable");
      }),
  );

  it.live("a bind that fails for lack of descriptors stays Other (passing)", () =>
    Effect.gen(function* () {
      const { channel } = fresh();
      const restore = failingBinds("EMFILE");
      const bound = yield* Effect.either(Effect.scoped(channel.listen("n11", echo, options))).pipe(
        Effect.ensuring(Effect.sync(restore)),
      );
      expect(Either.isLeft(bound) && bound.left.reason).toBe("Other");
    }),
  );
});

describe("unixSocketChannel connection bound", () => {
  it.live("a listener keeps at most maxConnections open: a request beyond is Broken, unrun", () =>
    Effect.gen(function* () {
      const { directory, channel } = fresh();
      let ran = 0;
      yield* channel.listen(
        "n12",
        (request) => Effect.sync(() => ran++).pipe(Effect.as(`echo:${request}`)),
        { ...options, maxConnections: 2 },
      );
      const socket = path.join(directory, "n12.sock");
      // Two idle connections, accepted before the request that follows them.
      const idle = [net.createConnection(socket), net.createConnection(socket)];
      for (const s of idle) s.on("error", () => undefined);
      const refused = yield* Effect.either(channel.request("n12", "x", req(1024)));
      expect(Either.isLeft(refused) && refused.left.reason).toBe("Broken");
      expect(ran).toBe(0);
      yield* Effect.async<void>((resume) => {
        let left = idle.length;
        for (const s of idle) {
          s.once("close", () => --left === 0 && resume(Effect.void));
          s.destroy();
        }
      });
      // Once the listener has seen them close (it may take a turn of its loop), room again.
      const after = yield* channel
        .request("n12", "y", req(1024))
        .pipe(Effect.retry({ while: (error) => error.reason === "Broken", times: 100 }));
      expect(after).toBe("echo:y");
    }).pipe(Effect.scoped),
  );
});
