/**
 * Sharing one process among the serve processes of a store (src/app/share): several
 * "processes" in this test share one store and one memfs host, each with its own
 * sharing notebook and scope, talking over the real Unix socket channel.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Cause, Deferred, Effect, Either, Exit, Option, Scope } from "effect";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { makeUnixSocketChannel } from "../../src/adapters/unixSocketChannel.js";
import type { NotebookService, SyncReport } from "../../src/app/Notebook.js";
import {
  decodeAnswer,
  maxAnswerBytes,
  maxRequestBytes,
  protocolVersion as version,
} from "../../src/app/share/protocol.js";
import {
  channelName,
  defaultShareTiming,
  maxConnections,
  sharedNotebook,
  type ShareTiming,
} from "../../src/app/share/share.js";
import { copyDirectory, lockFile } from "../../src/app/usecases/workingCopy/privateState.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import type { DomainError } from "../../src/domain/errors.js";
import { ChannelError, type LocalChannelService } from "../../src/ports/LocalChannel.js";
import { baseOptions } from "./memNotebook.js";

const socketRoot = mkdtempSync(path.join(tmpdir(), "quire-share-"));
afterAll(() => rmSync(socketRoot, { recursive: true, force: true }));
let worlds = 0;

/** Stops every process a test started, last first, whatever the test did. */
const running: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

const author = { name: "test", version: "1" };
const release = "9.9.9";

/** One store, one memfs host and one socket directory: a host with several processes. */
const world = () => {
  const store = memoryStore.make();
  const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
  vol.unlinkSync("/ws/.keep");
  const channel = makeUnixSocketChannel(path.join(socketRoot, `w${worlds++}`));
  const write = (file: string, text: string) => {
    vol.mkdirSync(file.slice(0, file.lastIndexOf("/")), { recursive: true });
    vol.writeFileSync(file, text);
  };
  const read = (file: string) => vol.readFileSync(file, "utf8").toString();
  return { store, fs, channel, write, read };
};
type World = ReturnType<typeof world>;

/** A process of `w`: its sharing notebook, how many calls its own notebook ran, its scope. */
const processOf = async (
  w: World,
  overrides: Partial<NotebookOptions> = {},
  options: {
    readonly channel?: LocalChannelService;
    readonly graceMs?: number;
    readonly timing?: ShareTiming;
  } = {},
) => {
  const services = {
    store: w.store,
    fs: w.fs,
    ids: ids.make(),
    // Overridden fields first: the order of fields must not matter (optionsKey).
    options: { ...overrides, ...baseOptions, ...overrides },
  };
  const made = Effect.runSync(makeNotebook(services));
  const ran = { calls: 0 };
  let gate: Effect.Effect<void> = Effect.void;
  let after: Effect.Effect<void> = Effect.void;
  let dies = false;
  const wrap = <A, E>(operation: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.sync(() => ran.calls++).pipe(
      Effect.zipRight(Effect.suspend(() => gate)),
      Effect.zipRight(
        Effect.suspend(() => (dies ? Effect.die("a defect in the use case") : operation)),
      ),
      Effect.tap(() => Effect.suspend(() => after)),
    );
  const local: NotebookService = {
    ...made,
    pull: (request) => wrap(made.pull(request)),
    commit: (request) => wrap(made.commit(request)),
  };
  const scope = await Effect.runPromise(Scope.make());
  const notebook = await Effect.runPromise(
    sharedNotebook(services, local, {
      channel: options.channel ?? w.channel,
      release,
      graceMs: options.graceMs ?? 2_000,
      ...(options.timing === undefined ? {} : { timing: options.timing }),
    }).pipe(Scope.extend(scope)),
  );
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Effect.runPromise(Scope.close(scope, Exit.void));
  };
  running.push(stop);
  return {
    notebook,
    ran,
    stop,
    /** Makes this process's own calls wait for `until` first. */
    hold: (until: Effect.Effect<void>) => {
      gate = until;
    },
    /** Makes this process's own calls wait for `until` once done, before answering. */
    holdAfter: (until: Effect.Effect<void>) => {
      after = until;
    },
    /** Makes this process's own calls die with a defect. */
    die: () => {
      dies = true;
    },
    stopSharing: () => Effect.runPromise(notebook.stopSharing ?? Effect.void),
  };
};

const pull = (nb: NotebookService, dir: string) => Effect.runPromise(nb.pull({ path: dir }));
const commit = (nb: NotebookService, dir: string, message = `from ${dir}`) =>
  Effect.runPromiseExit(nb.commit({ path: dir, message, author }));

const okOf = (exit: Exit.Exit<SyncReport, DomainError>): SyncReport => {
  if (Exit.isSuccess(exit)) return exit.value;
  throw new Error(`expected success, got ${Cause.pretty(exit.cause)}`);
};
const errorOf = (exit: Exit.Exit<SyncReport, DomainError>): DomainError => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure");
  return Option.getOrThrow(Cause.failureOption(exit.cause));
};

describe("sharing a process among the serve processes of a store", () => {
  it("the first process runs the others' calls, with the same results", async () => {
    const w = world();
    const a = await processOf(w);
    const b = await processOf(w);
    w.write("/ws/a/x.md", "a\n");
    await pull(a.notebook, "/ws/a");
    okOf(await commit(a.notebook, "/ws/a"));
    await pull(b.notebook, "/ws/b");
    expect(w.read("/ws/b/x.md")).toBe("a\n");
    w.write("/ws/b/y.md", "b\n");
    const report = okOf(await commit(b.notebook, "/ws/b"));
    expect(report).toEqual({
      path: "/ws/b",
      generation: 2,
      files: [{ path: "y.md", insertions: 1, deletions: 0 }],
    });
    // Everything ran in a's process: its own two calls and b's two.
    expect(a.ran.calls).toBe(4);
    expect(b.ran.calls).toBe(0);
    // b's errors come back as they are.
    const notPulled = errorOf(await commit(b.notebook, "/ws/never"));
    expect([notPulled.code, notPulled.reason]).toEqual(["INVALID_REQUEST", "NOT_PULLED"]);
  });

  it("runs each call with its caller's own settings", async () => {
    const w = world();
    const a = await processOf(w);
    const b = await processOf(w, { pathSets: { readOnly: ["docs"], writable: [] } });
    await pull(a.notebook, "/ws/a");
    await pull(b.notebook, "/ws/b");
    w.write("/ws/b/docs/d.md", "mine\n");
    const refused = errorOf(await commit(b.notebook, "/ws/b"));
    expect([refused.code, refused.reason]).toEqual(["READ_ONLY_PATH", "PATH_SET_VIOLATION"]);
    w.write("/ws/a/docs/d.md", "allowed\n");
    okOf(await commit(a.notebook, "/ws/a"));
    expect(b.ran.calls).toBe(0);
  });

  it("when the sharing process stops, the next caller takes over and runs the others' calls", async () => {
    const w = world();
    const a = await processOf(w);
    const b = await processOf(w);
    const c = await processOf(w);
    await pull(a.notebook, "/ws/a");
    await a.stop();
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(1);
    await pull(c.notebook, "/ws/c");
    w.write("/ws/c/n.md", "c\n");
    okOf(await commit(c.notebook, "/ws/c"));
    expect(c.ran.calls).toBe(0);
    expect(b.ran.calls).toBe(3);
  });

  it("a call cut off by the sharing process's stop runs in the caller, losing nothing", async () => {
    const w = world();
    const a = await processOf(w, {}, { graceMs: 50 });
    const b = await processOf(w);
    await pull(a.notebook, "/ws/a");
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(0);
    const entered = Effect.runSync(Deferred.make<void>());
    a.hold(Deferred.succeed(entered, undefined).pipe(Effect.zipRight(Effect.never)));
    w.write("/ws/b/k.md", "kept\n");
    const pending = commit(b.notebook, "/ws/b");
    await Effect.runPromise(Deferred.await(entered));
    await a.stop();
    const report = okOf(await pending);
    expect(report.files).toEqual([{ path: "k.md", insertions: 1, deletions: 0 }]);
    expect(b.ran.calls).toBe(1);
  });

  it("a commit the sharing process published before it stopped is reported OK by the caller's retry", async () => {
    const w = world();
    const a = await processOf(w, {}, { graceMs: 50 });
    const b = await processOf(w);
    await pull(a.notebook, "/ws/a");
    await pull(b.notebook, "/ws/b");
    const done = Effect.runSync(Deferred.make<void>());
    a.holdAfter(Deferred.succeed(done, undefined).pipe(Effect.zipRight(Effect.never)));
    w.write("/ws/b/p.md", "published\n");
    const pending = commit(b.notebook, "/ws/b");
    await Effect.runPromise(Deferred.await(done));
    await a.stop();
    const report = okOf(await pending);
    // Published by a; b's retry found nothing left to publish, and says so.
    expect(report.files).toEqual([]);
    expect(b.ran.calls).toBe(1);
    a.holdAfter(Effect.void);
    const fresh = await processOf(w);
    await pull(fresh.notebook, "/ws/check");
    expect(w.read("/ws/check/p.md")).toBe("published\n");
    await fresh.stop();
  });

  it("a defect in the sharing process is the caller's ENGINE_FAILED/INTERNAL", async () => {
    const w = world();
    const a = await processOf(w);
    const b = await processOf(w);
    a.die();
    const failed = errorOf(await Effect.runPromiseExit(b.notebook.pull({ path: "/ws/b" })));
    expect([failed.code, failed.reason]).toEqual(["ENGINE_FAILED", "INTERNAL"]);
    expect(b.ran.calls).toBe(0);
  });

  it("equal settings share a notebook whatever the order of their fields", async () => {
    const w = world();
    const { allowMassDelete: _, ...rest } = { ...baseOptions, allowMassDelete: true };
    const a = await processOf(w, { checkpointBytes: 1 << 20, allowMassDelete: true });
    const reordered: Partial<NotebookOptions> = {
      allowMassDelete: true,
      ...rest,
      checkpointBytes: 1 << 20,
    };
    const b = await processOf(w, reordered);
    await pull(b.notebook, "/ws/b");
    expect(a.ran.calls).toBe(1);
    expect(b.ran.calls).toBe(0);
  });

  it("stopSharing hands the store's calls over at once", async () => {
    const w = world();
    const a = await processOf(w);
    const b = await processOf(w);
    await pull(b.notebook, "/ws/b");
    expect(a.ran.calls).toBe(1);
    await a.stopSharing();
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(1);
    await pull(a.notebook, "/ws/a");
    expect(a.ran.calls).toBe(2);
  });

  it("a listener nobody reaches any more sends its later calls to the one that is", async () => {
    const w = world();
    const a = await processOf(w);
    // a's socket is gone (as after a takeover race); b starts and listens at the name.
    const { readdirSync, rmSync: remove } = await import("node:fs");
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    for (const entry of readdirSync(directory)) remove(path.join(directory, entry));
    const b = await processOf(w);
    await pull(a.notebook, "/ws/a");
    expect(a.ran.calls).toBe(1);
    await pull(a.notebook, "/ws/a");
    expect(a.ran.calls).toBe(1);
    expect(b.ran.calls).toBe(1);
  });

  it("a transient local failure (EMFILE) runs that call here and keeps sharing for later calls", async () => {
    const w = world();
    const a = await processOf(w);
    // b's channel fails its next request and listen as a process out of descriptors does.
    let failures = 0;
    const emfile = <A, R>(
      operation: Effect.Effect<A, ChannelError, R>,
    ): Effect.Effect<A, ChannelError, R> =>
      Effect.suspend(() => {
        if (failures === 0) return operation;
        failures--;
        return Effect.fail(
          new ChannelError({ reason: "Other", name: "x", message: "EMFILE: too many open files" }),
        );
      });
    const flaky: LocalChannelService = {
      listen: (name, handle, options) => emfile(w.channel.listen(name, handle, options)),
      request: (name, frame, options) => emfile(w.channel.request(name, frame, options)),
    };
    const b = await processOf(w, {}, { channel: flaky });
    failures = 2;
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(1);
    expect(a.ran.calls).toBe(0);
    // The descriptors are back: b's later calls go to a again.
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(1);
    expect(a.ran.calls).toBe(1);
    const committed = okOf(await commit(b.notebook, "/ws/b"));
    expect(a.ran.calls).toBe(2);
    expect(committed.files).toEqual([]);
  });

  it("a call larger than a sharing process reads is not sent: it runs in its caller and succeeds", async () => {
    const w = world();
    const a = await processOf(w);
    // Read-only entries far beyond any real configuration: the request frame is larger
    // than maxRequestBytes.
    const readOnly = Array.from(
      { length: 12_000 },
      (_, i) => `ro/${String(i).padStart(6, "0")}-${"x".repeat(240)}`,
    );
    const pathSets = { readOnly, writable: ["notes"] };
    expect(JSON.stringify(pathSets).length).toBeGreaterThan(maxRequestBytes);
    const sent: Array<number> = [];
    const counting: LocalChannelService = {
      listen: w.channel.listen,
      request: (name, frame, options) => {
        sent.push(frame.length);
        return w.channel.request(name, frame, options);
      },
    };
    const b = await processOf(w, { notebookDirectory: "/ws/b", pathSets }, { channel: counting });
    await pull(b.notebook, "/ws/b");
    w.write("/ws/b/notes/n.md", "b\n");
    const committed = okOf(await commit(b.notebook, "/ws/b"));
    expect(committed.files.map((file) => file.path)).toEqual(["notes/n.md"]);
    expect(sent).toEqual([]);
    expect(b.ran.calls).toBe(2);
    expect(a.ran.calls).toBe(0);
    // Published once: the sharing process sees it, and has nothing new to commit.
    await pull(a.notebook, "/ws/a");
    expect(w.read("/ws/a/notes/n.md")).toBe("b\n");
    expect(okOf(await commit(a.notebook, "/ws/a", "nothing new")).generation).toBe(1);
  });

  it("a socket directory that fails its check ends sharing in that process", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const a = await processOf(w);
    const b = await processOf(w);
    await pull(b.notebook, "/ws/b");
    expect(a.ran.calls).toBe(1);
    const { chmodSync } = await import("node:fs");
    chmodSync(directory, 0o755);
    try {
      await pull(b.notebook, "/ws/b");
    } finally {
      chmodSync(directory, 0o700);
    }
    expect(b.ran.calls).toBe(1);
    // Off for good: even with the directory private again, b asks a no more.
    await pull(b.notebook, "/ws/b");
    expect(b.ran.calls).toBe(2);
    expect(a.ran.calls).toBe(1);
  });

  /**
   * A same-user peer process connected to the store's channel in `directory`: `flood`
   * writes a request line that never ends, as fast as the sharing process reads it;
   * `stall` writes the start of one and then nothing. It prints how many bytes it wrote
   * once the sharing process has closed the connection, and exits.
   */
  const peer = (w: World, directory: string, mode: "flood" | "stall") => {
    const socket = path.join(directory, `${channelName(w.store.identity, release)}.sock`);
    const script = `
      const net = require("node:net");
      let written = 0;
      const s = net.createConnection(${JSON.stringify(socket)}, () => {
        const chunk = Buffer.alloc(65536, 0x61);
        if (${JSON.stringify(mode)} === "stall") { s.write("99999999999999 {"); written = 16; return; }
        const more = () => { while (!s.destroyed && s.write(chunk)) written += chunk.length; written += chunk.length; };
        s.on("drain", more);
        more();
      });
      s.on("error", () => {});
      s.on("close", () => { process.stdout.write(String(written)); process.exit(0); });
    `;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    running.push(async () => {
      child.kill("SIGKILL");
    });
    let out = "";
    child.stdout.on("data", (data: Buffer) => (out += data.toString()));
    return new Promise<number>((resolve) => child.on("exit", () => resolve(Number(out))));
  };

  it("a peer sending a request line that never ends is cut off at what a real call can need", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const a = await processOf(w);
    const written = await peer(w, directory, "flood");
    // What a real call needs, plus what the socket buffers on its way.
    expect(written).toBeGreaterThan(maxRequestBytes);
    expect(written).toBeLessThan(maxRequestBytes + 8 * 1024 * 1024);
    const b = await processOf(w);
    await pull(b.notebook, "/ws/b");
    w.write("/ws/b/y.md", "b\n");
    expect(okOf(await commit(b.notebook, "/ws/b")).generation).toBe(1);
    expect(a.ran.calls).toBe(2);
    expect(b.ran.calls).toBe(0);
    // The notebook holds b's commit, once.
    await pull(a.notebook, "/ws/a");
    expect(w.read("/ws/a/y.md")).toBe("b\n");
    expect(okOf(await commit(a.notebook, "/ws/a", "nothing new")).generation).toBe(1);
  });

  it("a peer opening connections without end gets at most maxConnections; refused callers run here, the sharer keeps serving", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    // Connections that send nothing are kept far beyond the test's own time limit.
    const a = await processOf(w, {}, { timing: { ...defaultShareTiming, requestMs: 600_000 } });
    const socket = path.join(directory, `${channelName(w.store.identity, release)}.sock`);
    const extra = 16;
    const script = `
      const net = require("node:net");
      let connected = 0, closed = 0;
      for (let i = 0; i < ${maxConnections + extra}; i++) {
        const s = net.createConnection(${JSON.stringify(socket)}, () => {
          if (++connected === ${maxConnections + extra}) process.stdout.write("connected\\n");
        });
        s.on("error", () => {});
        s.on("close", () => process.stdout.write("closed " + ++closed + "\\n"));
      }
    `;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    running.push(async () => {
      child.kill("SIGKILL");
    });
    let out = "";
    const seen = (line: string) =>
      new Promise<void>((resolve) => {
        const check = () =>
          out.split("\n").includes(line) ? resolve() : child.stdout.once("data", check);
        check();
      });
    child.stdout.on("data", (data: Buffer) => (out += data.toString()));
    await seen("connected");
    // The sharer is full: b's call is refused and runs in b.
    const b = await processOf(w);
    w.write("/ws/b/n.md", "b\n");
    await pull(b.notebook, "/ws/b");
    expect([a.ran.calls, b.ran.calls]).toEqual([0, 1]);
    // The peer's connections beyond the bound were closed, not kept.
    await seen(`closed ${extra}`);
    // The sharer still serves its own calls.
    await pull(a.notebook, "/ws/a");
    expect(a.ran.calls).toBe(1);
    // Once the peer is gone, b's calls go to the sharer again, and its note is committed once.
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    expect(okOf(await commit(b.notebook, "/ws/b")).files.map((file) => file.path)).toEqual([
      "n.md",
    ]);
    expect([a.ran.calls, b.ran.calls]).toEqual([2, 1]);
  });

  it("a peer that stalls mid-line is dropped, and the others' calls run meanwhile", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const a = await processOf(w, {}, { timing: { ...defaultShareTiming, requestMs: 500 } });
    const stalled = peer(w, directory, "stall");
    const b = await processOf(w);
    await pull(b.notebook, "/ws/b");
    w.write("/ws/b/y.md", "b\n");
    expect(okOf(await commit(b.notebook, "/ws/b")).generation).toBe(1);
    expect(a.ran.calls).toBe(2);
    expect(b.ran.calls).toBe(0);
    // The sharing process closed the stalled connection (the peer then exits).
    expect(await stalled).toBe(16);
    w.write("/ws/b/z.md", "z\n");
    expect(okOf(await commit(b.notebook, "/ws/b", "again")).generation).toBe(2);
    expect(a.ran.calls).toBe(3);
    // The notebook holds both of b's commits, each once.
    await pull(a.notebook, "/ws/a");
    expect([w.read("/ws/a/y.md"), w.read("/ws/a/z.md")]).toEqual(["b\n", "z\n"]);
    expect(okOf(await commit(a.notebook, "/ws/a", "nothing new")).generation).toBe(2);
  });

  it("a sharing process that does not acknowledge is left alone for a while; calls run here", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const b = await processOf(w);
    // b listens; a stopped process holding the name is simulated by a socket that
    // accepts and never answers, in b's place.
    await b.stopSharing();
    const { createServer } = await import("node:net");
    const sockets: Array<{ destroy: () => void }> = [];
    const mute = createServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) =>
      mute.listen(path.join(directory, `${channelName(w.store.identity, release)}.sock`), resolve),
    );
    running.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          mute.close(() => resolve());
        }),
    );
    // c finds the name taken by a live socket (one connection to check), so it sends.
    const c = await processOf(w);
    expect(sockets).toHaveLength(1);
    await pull(c.notebook, "/ws/c");
    await pull(c.notebook, "/ws/c");
    expect(c.ran.calls).toBe(2);
    // One call waited for an acknowledgement; the next did not ask.
    expect(sockets).toHaveLength(2);
  });

  /**
   * In `w`'s socket directory, at the store's channel name, a "sharing process" that
   * answers every call with the bytes `reply` and then, by default, says nothing more
   * (`+` alone: acknowledged, then stopped mid-call), or closes the connection; it
   * exists until the test ends. `connections()` counts the calls sent to it.
   */
  const silentSharer = async (
    w: World,
    directory: string,
    reply: Buffer = Buffer.of(0x2b),
    then: "stay" | "close" = "stay",
  ) => {
    const { createServer } = await import("node:net");
    const sockets: Array<{ destroy: () => void }> = [];
    const silent = createServer((socket) => {
      sockets.push(socket);
      socket.once("data", () => (then === "close" ? socket.end(reply) : socket.write(reply)));
    });
    await new Promise<void>((resolve) =>
      silent.listen(
        path.join(directory, `${channelName(w.store.identity, release)}.sock`),
        resolve,
      ),
    );
    running.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    return { connections: () => sockets.length };
  };

  /** Short waits, so the silence is over quickly. */
  const quick: ShareTiming = { ...defaultShareTiming, silenceMs: 200, takeoverLockMs: 100 };

  it("a call whose sharing process goes silent after acknowledging it is taken over here", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const b = await processOf(w, {}, { timing: quick });
    await b.stopSharing();
    const silent = await silentSharer(w, directory);
    const c = await processOf(w, {}, { timing: quick });
    const before = silent.connections();
    w.write("/ws/c/n.md", "c\n");
    // Without a bound on the silence, this pull would wait as long as the sharer is stopped.
    const report = await pull(c.notebook, "/ws/c");
    expect(report.path).toBe("/ws/c");
    expect(c.ran.calls).toBe(1);
    expect(silent.connections()).toBe(before + 1);
    // Its next calls do not wait for the silent process again for a while.
    const committed = okOf(await commit(c.notebook, "/ws/c"));
    expect(committed.files).toEqual([{ path: "n.md", insertions: 1, deletions: 0 }]);
    expect(c.ran.calls).toBe(2);
    expect(silent.connections()).toBe(before + 1);
  });

  it("a taken-over call whose working copy is still held answers at once: pull BUSY, commit PUBLICATION_UNKNOWN", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const b = await processOf(w, {}, { timing: quick });
    await pull(b.notebook, "/ws/c");
    w.write("/ws/c/n.md", "c\n");
    await b.stopSharing();
    await silentSharer(w, directory);
    // The stopped sharing process holds the copy, in the middle of the call.
    const copy = copyDirectory(baseOptions.privateRoot, "/ws/c", w.store.identity);
    const release = await Effect.runPromise(w.fs.lock(lockFile(copy), 0));
    const c = await processOf(w, {}, { timing: quick });
    const pulled = errorOf(await Effect.runPromiseExit(c.notebook.pull({ path: "/ws/c" })));
    expect([pulled.code, pulled.reason, pulled.retryable]).toEqual(["ENGINE_FAILED", "BUSY", true]);
    expect(pulled.message).toContain("stopped answering");
    // A fresh process, so that this call, too, is sent to the silent one first.
    const d = await processOf(w, {}, { timing: quick });
    const committed = errorOf(await commit(d.notebook, "/ws/c"));
    expect([committed.code, committed.reason, committed.action, committed.retryable]).toEqual([
      "STORAGE_FAILURE",
      "PUBLICATION_UNKNOWN",
      "PULL_TO_VERIFY",
      false,
    ]);
    // Nothing was published by the caller.
    expect(Option.isNone(await Effect.runPromise(w.store.get("current")))).toBe(true);
    await Effect.runPromise(release);
    // Once the copy is free, committing again publishes the edit once.
    const again = okOf(await commit(d.notebook, "/ws/c"));
    expect(again.files).toEqual([{ path: "n.md", insertions: 1, deletions: 0 }]);
  });

  it("a sharing process stopped while it holds the copy of a call it answered: the next call answers BUSY after the bounded waits", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const b = await processOf(w, {}, { timing: quick });
    await pull(b.notebook, "/ws/c");
    w.write("/ws/c/n.md", "c\n");
    await b.stopSharing();
    // Stopped right after answering: it reads no more calls (no acknowledgement) and
    // still holds the caller's copy, tidying up after the call it answered.
    await silentSharer(w, directory, Buffer.alloc(0));
    const copy = copyDirectory(baseOptions.privateRoot, "/ws/c", w.store.identity);
    const release = await Effect.runPromise(w.fs.lock(lockFile(copy), 0));
    const timing: ShareTiming = { ...quick, acknowledgementMs: 300 };
    const c = await processOf(w, {}, { timing });
    // Not the copy lock's usual 30 s: the takeover's bound, and an answer that says why.
    const committed = errorOf(await commit(c.notebook, "/ws/c"));
    expect([committed.code, committed.reason, committed.retryable]).toEqual([
      "ENGINE_FAILED",
      "BUSY",
      true,
    ]);
    expect(committed.message).toContain("not answering");
    // It names the holder the lock file names (here another call of this test's
    // process), and does not guess that it is the sharing process.
    expect(committed.message).toContain("holds this working copy: another call of this process");
    expect(committed.message).not.toContain("most likely");
    // The calls of the next 30 s run here without asking it, with the same bound.
    const pulled = errorOf(await Effect.runPromiseExit(c.notebook.pull({ path: "/ws/c" })));
    expect([pulled.code, pulled.reason]).toEqual(["ENGINE_FAILED", "BUSY"]);
    expect(pulled.message).toContain("not answering");
    expect(pulled.message).toContain("another call of this process");
    expect(Option.isNone(await Effect.runPromise(w.store.get("current")))).toBe(true);
    await Effect.runPromise(release);
    // Once the copy is free, the commit publishes the edit, once.
    const again = okOf(await commit(c.notebook, "/ws/c"));
    expect(again.generation).toBe(1);
    expect(again.files).toEqual([{ path: "n.md", insertions: 1, deletions: 0 }]);
    await pull(c.notebook, "/ws/d");
    expect(w.read("/ws/d/n.md")).toBe("c\n");
    expect(okOf(await commit(c.notebook, "/ws/d", "nothing new")).generation).toBe(1);
  }, 120_000);

  it("an answer cut off mid-frame, or garbage instead of one, makes the caller run the call itself", async () => {
    const replies: ReadonlyArray<readonly [Buffer, "stay" | "close"]> = [
      [Buffer.concat([Buffer.of(0x2b, 0xff), Buffer.from('{"ok":{"path":"/ws/b","gen')]), "close"],
      [Buffer.from("garbage\n"), "stay"],
      [
        Buffer.concat([Buffer.of(0x2b), Buffer.from("{"), Buffer.of(0xff), Buffer.from("}\n")]),
        "stay",
      ],
    ];
    for (const [reply, then] of replies) {
      const w = world();
      const directory = path.join(socketRoot, `w${worlds - 1}`);
      const b = await processOf(w);
      await b.stopSharing();
      await silentSharer(w, directory, reply, then);
      const c = await processOf(w);
      w.write("/ws/c/n.md", "c\n");
      await pull(c.notebook, "/ws/c");
      expect(okOf(await commit(c.notebook, "/ws/c")).files).toHaveLength(1);
      expect(c.ran.calls).toBe(2);
    }
  });

  it("an impostor listener's endless answer is cut off at what a real answer can be; the call runs here", async () => {
    const w = world();
    const directory = path.join(socketRoot, `w${worlds - 1}`);
    const b = await processOf(w);
    await b.stopSharing();
    // A same-user process at the store's name: it acknowledges a request, then sends
    // answer bytes without end, as fast as the caller reads them, and prints how many it
    // wrote once that caller has hung up (a connection that sends nothing, as a
    // listener's liveness probe, is let go).
    const socket = path.join(directory, `${channelName(w.store.identity, release)}.sock`);
    const script = `
      const net = require("node:net");
      let written = 0;
      const server = net.createServer((s) => {
        s.on("error", () => {});
        s.once("data", () => {
          const chunk = Buffer.alloc(65536, 0x61);
          s.write(Buffer.of(0x2b));
          const more = () => { while (!s.destroyed && s.write(chunk)) written += chunk.length; written += chunk.length; };
          s.on("drain", more);
          more();
          s.on("close", () => { process.stdout.write(String(written)); process.exit(0); });
        });
      });
      server.listen(${JSON.stringify(socket)}, () => process.stdout.write("up\\n"));
    `;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    running.push(async () => {
      child.kill("SIGKILL");
    });
    let out = "";
    child.stdout.on("data", (data: Buffer) => (out += data.toString()));
    await new Promise<void>((resolve) => {
      const check = () => (out.startsWith("up\n") ? resolve() : child.stdout.once("data", check));
      check();
    });
    const exited = new Promise<number>((resolve) =>
      child.on("exit", () => resolve(Number(out.slice(3)))),
    );
    const c = await processOf(w);
    w.write("/ws/c/n.md", "c\n");
    await pull(c.notebook, "/ws/c");
    expect(c.ran.calls).toBe(1);
    const written = await exited;
    // What a real answer can be, plus what the socket buffers on its way: tens of MB at
    // most, never hundreds.
    expect(written).toBeGreaterThan(maxAnswerBytes);
    expect(written).toBeLessThan(maxAnswerBytes + 8 * 1024 * 1024);
    expect(written).toBeLessThan(32 * 1024 * 1024);
    // The note is committed once, by the caller itself.
    const committed = okOf(await commit(c.notebook, "/ws/c"));
    expect(committed.files.map((file) => file.path)).toEqual(["n.md"]);
    expect(c.ran.calls).toBe(2);
  });

  it("an answer that does not decode makes the caller run the call itself", async () => {
    const w = world();
    const name = channelName(w.store.identity, release);
    const garbage = Scope.make().pipe(Effect.runSync);
    running.push(() => Effect.runPromise(Scope.close(garbage, Exit.void)));
    await Effect.runPromise(
      w.channel
        .listen(name, () => Effect.succeed('{"ok":{"path":"/elsewhere"}}'), {
          maxBytes: 1024,
          graceMs: 100,
          heartbeatMs: 1_000,
          requestMs: 10_000,
          maxConnections: 64,
        })
        .pipe(Scope.extend(garbage)),
    );
    const b = await processOf(w);
    const report = await pull(b.notebook, "/ws/b");
    expect(report.path).toBe("/ws/b");
    expect(b.ran.calls).toBe(1);
  });

  it("refuses requests that do not decode or come from another release", async () => {
    const w = world();
    const a = await processOf(w);
    const name = channelName(w.store.identity, release);
    const ask = async (frame: string) => {
      const answer = await Effect.runPromise(
        w.channel.request(name, frame, {
          maxBytes: 1 << 20,
          ackTimeoutMs: 2_000,
          silenceMs: 10_000,
        }),
      );
      return Either.getOrThrow(decodeAnswer(answer));
    };
    const options = { ...baseOptions };
    const other = await ask(JSON.stringify({ op: "pull", version, release: "0.0.1", options }));
    expect(other._tag).toBe("Refused");
    const older = await ask(JSON.stringify({ op: "pull", version: version - 1, release, options }));
    expect(older._tag).toBe("Refused");
    const extra = await ask(
      JSON.stringify({ op: "pull", version, release, options, surprise: true }),
    );
    expect(extra._tag).toBe("Refused");
    expect((await ask("not json"))._tag).toBe("Refused");
    // Nested deep enough to overflow the stack of anything formatting it recursively.
    const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
    const nested = await ask(`{"op":"pull","version":${version},"release":"x","options":${deep}}`);
    expect(nested._tag).toBe("Refused");
    const huge = await ask(
      JSON.stringify({ op: "pull", version, release, options: "x".repeat(1 << 20) }),
    );
    expect(huge._tag === "Refused" && huge.why.length < 200).toBe(true);
    const fine = await ask(JSON.stringify({ op: "pull", version, release, options }));
    expect(fine._tag).toBe("Outcome");
    expect(a.ran.calls).toBe(1);
  });
});
