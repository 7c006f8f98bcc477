/**
 * The record of a working copy's store (workingCopy/storeOfCopy.ts): removing it, when the
 * copy of its store is discarded, never takes away a record another call wrote between the
 * removal's read and its removal (a pull of the same path with another store, which no
 * copy lock orders against the removal).
 */
import { Deferred, Effect, Fiber } from "effect";
import { describe, expect, it } from "vitest";
import * as FaultyStore from "../../src/adapters/faultyObjectStore.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import {
  forgetStoreOfCopy,
  recordStoreOfCopy,
} from "../../src/app/usecases/workingCopy/storeOfCopy.js";
import { copyDirectory, lockFile } from "../../src/app/usecases/workingCopy/privateState.js";
import { keyDigest } from "../../src/app/keyDigest.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { openOn } from "./memNotebook.js";

const privateRoot = "/private";
const copy = "/ws/notes";
const author = { name: "t", version: "1" };

type World = ReturnType<typeof memFs.make>;
type FileSystem = World["service"];

/** Publishes one note, `/ws/seed-<name>/<name>.md`, to `store` through a copy of its own. */
const seedNote = async (
  world: World,
  store: ReturnType<typeof memoryStore.make>,
  name: string,
): Promise<void> => {
  const seeding = openOn(store, world.service);
  await Effect.runPromise(seeding.pull({ path: `/ws/seed-${name}` }));
  world.vol.writeFileSync(`/ws/seed-${name}/${name}.md`, `${name}\n`);
  await Effect.runPromise(seeding.commit({ path: `/ws/seed-${name}`, message: name, author }));
};

/** `base` whose atomic writes of the paths `failing` picks fail with an I/O error. */
const failingWrites = (base: FileSystem, failing: (path: string) => boolean): FileSystem => ({
  ...base,
  writeFileAtomic: (
    path: string,
    bytes: Uint8Array,
    options: { mode: number; durable: boolean },
  ) =>
    failing(path)
      ? Effect.fail(new FsError({ reason: "Other", path, message: "EIO: i/o error, open" }))
      : base.writeFileAtomic(path, bytes, options),
});

/** Store `store`'s copy at /ws/d, with a note `c.md` published from it; its notebook. */
const copyWithNote = async (world: World, store: ReturnType<typeof memoryStore.make>) => {
  const notebook = openOn(store, world.service);
  await Effect.runPromise(notebook.pull({ path: "/ws/d" }));
  world.vol.writeFileSync("/ws/d/c.md", "c\n");
  await Effect.runPromise(notebook.commit({ path: "/ws/d", message: "c", author }));
  return notebook;
};

/**
 * Runs `first` until it signals `paused`, then `second` until it signals `reached` (at
 * its watched lock) or ends, then lets `first` go on (`go`): both outcomes.
 */
const interleaved = <A, E, B, F>(
  first: Effect.Effect<A, E>,
  pause: { readonly paused: Deferred.Deferred<void>; readonly go: Deferred.Deferred<void> },
  second: Effect.Effect<B, F>,
  reached: Deferred.Deferred<void>,
) =>
  Effect.gen(function* () {
    const a = yield* Effect.fork(Effect.either(first));
    yield* Deferred.await(pause.paused);
    const b = yield* Effect.fork(
      Effect.either(second).pipe(Effect.ensuring(Deferred.succeed(reached, undefined))),
    );
    yield* Deferred.await(reached);
    yield* Deferred.succeed(pause.go, undefined);
    return [yield* Fiber.join(a), yield* Fiber.join(b)] as const;
  });

/**
 * `base` with one pause: right after the first read of a store record under `owners/`
 * (whether or not there is one) the call signals `paused` and waits for `go`; with
 * `beforeRead` set to n, right before the n-th read instead.
 */
const pausedAfterRecordRead = (base: FileSystem, beforeRead?: number) =>
  Effect.gen(function* () {
    const paused = yield* Deferred.make<void>();
    const go = yield* Deferred.make<void>();
    let reads = 0;
    const pause = Effect.zipRight(Deferred.succeed(paused, undefined), Deferred.await(go));
    const fs: FileSystem = {
      ...base,
      readFile: (path: string) => {
        if (!path.includes("/owners/")) return base.readFile(path);
        reads += 1;
        if (beforeRead !== undefined)
          return reads === beforeRead
            ? Effect.zipRight(pause, base.readFile(path))
            : base.readFile(path);
        return base.readFile(path).pipe(Effect.onExit(() => (reads === 1 ? pause : Effect.void)));
      },
    };
    return { fs, paused, go };
  });

/**
 * `base` signalling `reached` when a call starts waiting for a lock `watched` names (the
 * caller also signals it when the call ends, in case it never waits).
 */
const signallingAtLock = (base: FileSystem, watched: (path: string) => boolean) =>
  Effect.gen(function* () {
    const reached = yield* Deferred.make<void>();
    const fs: FileSystem = {
      ...base,
      lock: (path: string, timeoutMs: number) =>
        (watched(path) ? Deferred.succeed(reached, undefined) : Effect.void).pipe(
          Effect.zipRight(base.lock(path, timeoutMs)),
        ),
    };
    return { fs, reached };
  });

describe("the record of a copy's store", () => {
  it("a removal racing another store's record of the same path leaves that record", async () => {
    const { service: base, vol } = memFs.make({ "/ws/notes/.keep": "" });
    await Effect.runPromise(recordStoreOfCopy(base, privateRoot, copy, "store A"));
    const records = (): string[] =>
      vol
        .readdirSync(`${privateRoot}/owners`)
        .map(String)
        .filter((name) => !name.endsWith(".lock"));
    expect(records()).toHaveLength(1);
    const record = `${privateRoot}/owners/${records()[0]}`;

    const program = Effect.gen(function* () {
      // Signalled once the other store's write either waits for the record's lock or is done.
      const reached = yield* Deferred.make<void>();
      const other = {
        ...base,
        lock: (path: string, timeoutMs: number) =>
          Deferred.succeed(reached, undefined).pipe(Effect.zipRight(base.lock(path, timeoutMs))),
      };
      let raced: Fiber.RuntimeFiber<void> | undefined;
      const removing = {
        ...base,
        // Right after the removal read the record (it names store A): store B records
        // its pull of the same path.
        readFile: (path: string) =>
          base.readFile(path).pipe(
            Effect.tap(() =>
              path !== record || raced !== undefined
                ? Effect.void
                : Effect.gen(function* () {
                    raced = yield* Effect.fork(
                      recordStoreOfCopy(other, privateRoot, copy, "store B").pipe(
                        Effect.ensuring(Deferred.succeed(reached, undefined)),
                      ),
                    );
                    yield* Deferred.await(reached);
                  }),
            ),
          ),
      };
      yield* forgetStoreOfCopy(removing, privateRoot, copy, "store A");
      expect(raced).toBeDefined();
      if (raced !== undefined) yield* Fiber.join(raced);
    });
    await Effect.runPromise(program);
    expect(records()).toHaveLength(1);
    expect(String(vol.readFileSync(record))).toBe("store B");
  });
});

describe("first pulls of one directory from two stores at once", () => {
  it("the second waits for the first, then is refused: the directory never holds both stores' notes", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeA = memoryStore.make();
    const storeB = memoryStore.make();
    await seedNote(world, storeA, "a");
    await seedNote(world, storeB, "b");
    vol.mkdirSync("/ws/race");
    const program = Effect.gen(function* () {
      const paused = yield* Deferred.make<void>();
      const go = yield* Deferred.make<void>();
      let armed = true;
      // A's first pull stops right after it recorded what it is writing, before any note.
      const fsA = {
        ...base,
        writeFileAtomic: (
          path: string,
          bytes: Uint8Array,
          options: { mode: number; durable: boolean },
        ) =>
          base
            .writeFileAtomic(path, bytes, options)
            .pipe(
              Effect.tap(() =>
                armed && path.endsWith("first-pull.json")
                  ? Effect.sync(() => (armed = false)).pipe(
                      Effect.zipRight(Deferred.succeed(paused, undefined)),
                      Effect.zipRight(Deferred.await(go)),
                    )
                  : Effect.void,
              ),
            ),
      };
      // Signalled once B's pull waits for the record's lock, or is done.
      const { fs: fsB, reached } = yield* signallingAtLock(base, (path) =>
        path.includes("/owners/"),
      );
      const [a, b] = yield* interleaved(
        openOn(storeA, fsA).pull({ path: "/ws/race" }),
        { paused, go },
        openOn(storeB, fsB).pull({ path: "/ws/race" }),
        reached,
      );
      return [a, b] as const;
    });
    const [a, b] = await Effect.runPromise(program);
    expect(a._tag).toBe("Right");
    expect(b._tag).toBe("Left");
    if (b._tag === "Left") expect(b.left.reason).toBe("NESTED_WORKING_COPY");
    expect(vol.readdirSync("/ws/race").map(String).sort()).toEqual(["a.md"]);
  });
});

describe("an ordinary pull racing another store's first pull of the emptied directory", () => {
  it("does not record its store over the other's: the other's notes are never published into it", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeA = memoryStore.make();
    const storeB = memoryStore.make();
    await seedNote(world, storeB, "b");
    // Store A's copy of the directory, empty (A's notebook is empty).
    const plainA = openOn(storeA, base);
    await Effect.runPromise(plainA.pull({ path: "/ws/d" }));

    const program = Effect.gen(function* () {
      // A's pull stops at its record step, after its answer (the third read of the
      // record: its checks read it twice): its copy's lock is released after the answer,
      // so another store's first pull can take the directory over before A records its
      // store. The record step must then leave B's record (it fails without that guard).
      const { fs: fsA, paused, go } = yield* pausedAfterRecordRead(base, 3);
      // B's first pull takes the empty directory over, all of it, while A waits.
      const done = yield* Deferred.make<void>();
      const [a, b] = yield* interleaved(
        openOn(storeA, fsA).pull({ path: "/ws/d" }),
        { paused, go },
        openOn(storeB, base).pull({ path: "/ws/d" }),
        done,
      );
      expect(a._tag).toBe("Right");
      expect(b._tag).toBe("Right");
    });
    await Effect.runPromise(program);
    expect(String(vol.readFileSync("/ws/d/b.md"))).toBe("b\n");

    // The directory is B's: A's calls are refused, B's work.
    const committed = await Effect.runPromise(
      Effect.either(plainA.commit({ path: "/ws/d", message: "x", author })),
    );
    expect(committed._tag === "Left" ? committed.left.reason : "accepted").toBe(
      "NESTED_WORKING_COPY",
    );
    const statusB = await Effect.runPromise(
      Effect.either(openOn(storeB, base).status({ path: "/ws/d" })),
    );
    expect(statusB._tag).toBe("Right");
    // Store A never got B's note.
    await Effect.runPromise(plainA.pull({ path: "/ws/fresh-a" }));
    expect(vol.readdirSync("/ws/fresh-a")).toEqual([]);
  });
});

describe("an ordinary pull with notes to write racing another store's first pull of the emptied directory", () => {
  it("the first pull waits for the ordinary pull, then is refused: the directory never holds both stores' notes", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeA = memoryStore.make();
    const storeB = memoryStore.make();
    await seedNote(world, storeB, "b");
    // Store A's copy of the directory; then a note published to A since its last pull,
    // and the directory emptied.
    const plainA = openOn(storeA, base);
    await Effect.runPromise(plainA.pull({ path: "/ws/d" }));
    await Effect.runPromise(plainA.pull({ path: "/ws/seed-a" }));
    vol.writeFileSync("/ws/seed-a/y.md", "y\n");
    await Effect.runPromise(plainA.commit({ path: "/ws/seed-a", message: "y", author }));
    expect(vol.readdirSync("/ws/d")).toEqual([]);
    const copyLockOfA = lockFile(copyDirectory(privateRoot, "/ws/d", storeA.identity));

    const program = Effect.gen(function* () {
      // A's pull stops right after its check read the record (naming A).
      const { fs: fsA, paused, go } = yield* pausedAfterRecordRead(base);
      // Signalled once B's pull waits for A's copy, or is done.
      const { fs: fsB, reached } = yield* signallingAtLock(base, (path) => path === copyLockOfA);
      const [a, b] = yield* interleaved(
        openOn(storeA, fsA).pull({ path: "/ws/d" }),
        { paused, go },
        openOn(storeB, fsB).pull({ path: "/ws/d" }),
        reached,
      );
      return [a, b] as const;
    });
    const [a, b] = await Effect.runPromise(program);
    expect(a._tag).toBe("Right");
    expect(b._tag === "Left" ? b.left.reason : "accepted").toBe("NESTED_WORKING_COPY");
    expect(vol.readdirSync("/ws/d").map(String).sort()).toEqual(["y.md"]);
    // Store B never got A's note.
    await Effect.runPromise(openOn(storeB, base).pull({ path: "/ws/seed-b" }));
    expect(vol.readdirSync("/ws/seed-b").map(String)).toEqual(["b.md"]);
  });
});

describe("a copy with no record whose record step finds another store's first pull has claimed it", () => {
  it("its status is refused: the other store's notes are never reported as its own", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeA = memoryStore.make();
    const storeB = memoryStore.make();
    await seedNote(world, storeB, "b");
    // Store A's copy of the directory (A's notebook is empty), pulled before records were
    // kept: no record names A.
    const plainA = openOn(storeA, base);
    await Effect.runPromise(plainA.pull({ path: "/ws/d" }));
    const owners = `${privateRoot}/owners`;
    for (const name of vol.readdirSync(owners).map(String))
      if (String(vol.readFileSync(`${owners}/${name}`)) === storeA.identity)
        vol.unlinkSync(`${owners}/${name}`);

    const program = Effect.gen(function* () {
      // A's status stops right after its check read the record (there is none).
      const { fs: fsA, paused, go } = yield* pausedAfterRecordRead(base);
      const a = yield* Effect.fork(Effect.either(openOn(storeA, fsA).status({ path: "/ws/d" })));
      yield* Deferred.await(paused);
      // Meanwhile B's first pull of the (empty) directory, which knows no copy of A.
      const b = yield* Effect.either(openOn(storeB, base).pull({ path: "/ws/d" }));
      expect(b._tag).toBe("Right");
      yield* Deferred.succeed(go, undefined);
      return yield* Fiber.join(a);
    });
    const a = await Effect.runPromise(program);
    expect(a._tag === "Left" ? a.left.reason : JSON.stringify(a.right)).toBe("NESTED_WORKING_COPY");
  });
});

describe("the search for the store of a copy with no record", () => {
  it("reads records only: never a lock file, one set aside by a steal, or a temp file", async () => {
    const { service: base, vol } = memFs.make({ "/ws/.keep": "" });
    const storeA = memoryStore.make();
    const storeB = memoryStore.make();
    const plainA = openOn(storeA, base);
    await Effect.runPromise(plainA.pull({ path: "/ws/d" }));
    await Effect.runPromise(plainA.pull({ path: "/ws/other" }));
    // /ws/d's record is lost (a copy pulled before records were kept); the other names A.
    const owners = `${privateRoot}/owners`;
    vol.unlinkSync(`${owners}/${keyDigest(["store of", "/ws/d"])}`);
    expect(vol.readdirSync(owners).map(String)).toHaveLength(1);
    const digest = "0".repeat(64);
    vol.writeFileSync(`${owners}/${digest}.lock`, "pid 1 on host");
    vol.writeFileSync(`${owners}/${digest}.lock.stale-0123456789ab`, "pid 2 on host");
    vol.writeFileSync(`${owners}/.${digest}.quire-0123456789ab0.tmp`, "half");
    const read: string[] = [];
    const fsB = {
      ...base,
      readFile: (path: string) =>
        Effect.sync(() => read.push(path)).pipe(Effect.zipRight(base.readFile(path))),
    };
    const status = await Effect.runPromise(
      Effect.either(openOn(storeB, fsB).status({ path: "/ws/d" })),
    );
    expect(status._tag === "Left" ? status.left.reason : "accepted").toBe("NESTED_WORKING_COPY");
    const notRecords = read
      .filter((path) => path.startsWith(`${owners}/`))
      .map((path) => path.slice(owners.length + 1))
      .filter((name) => !/^[0-9a-f]{64}$/.test(name));
    expect(notRecords).toEqual([]);
  });
});

describe("a record naming a store whose first pull of the directory stopped before writing anything", () => {
  it("counts as no record: the copy there gets its record back, and another store's first pull is refused", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeC = memoryStore.make();
    const storeB = memoryStore.make();
    const plainC = await copyWithNote(world, storeC);
    // Store X's first pull of the directory recorded X, then stopped in its download (a
    // store failure, a kill): X has no copy there; C's copy is untouched.
    const record = `${privateRoot}/owners/${keyDigest(["store of", "/ws/d"])}`;
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
    vol.writeFileSync(record, "file:/elsewhere/store-x");

    // C's calls go on as C's, and record C again.
    const status = await Effect.runPromise(Effect.either(plainC.status({ path: "/ws/d" })));
    expect(status._tag).toBe("Right");
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
    // So B's first pull of the directory, which holds C's notes, is refused.
    const pulled = await Effect.runPromise(
      Effect.either(openOn(storeB, base).pull({ path: "/ws/d" })),
    );
    expect(pulled._tag === "Left" ? pulled.left.reason : "accepted").toBe("NESTED_WORKING_COPY");
    expect(vol.readdirSync("/ws/d").map(String)).toEqual(["c.md"]);
  });

  it("a first pull that fails before it has a copy puts the record it replaced back", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeC = memoryStore.make();
    const faultyB = FaultyStore.make(memoryStore.make());
    await seedNote(world, faultyB.store, "b");
    await copyWithNote(world, storeC);
    const record = `${privateRoot}/owners/${keyDigest(["store of", "/ws/d"])}`;
    // The directory emptied: B's first pull takes it over, and fails in its download.
    vol.unlinkSync("/ws/d/c.md");
    faultyB.inject({
      fault: { _tag: "FailBefore" },
      ops: ["get"],
      key: (key) => key.startsWith("packs/"),
      times: Infinity,
    });
    const failed = await Effect.runPromise(
      Effect.either(openOn(faultyB.store, base).pull({ path: "/ws/d" })),
    );
    expect(failed._tag).toBe("Left");
    expect(vol.readdirSync("/ws/d")).toEqual([]);
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
    // C's note back (a person undoing the deletion): B's next first pull is refused.
    vol.writeFileSync("/ws/d/c.md", "c\n");
    faultyB.clear();
    const retried = await Effect.runPromise(
      Effect.either(openOn(faultyB.store, base).pull({ path: "/ws/d" })),
    );
    expect(retried._tag === "Left" ? retried.left.reason : "accepted").toBe("NESTED_WORKING_COPY");
    expect(vol.readdirSync("/ws/d").map(String)).toEqual(["c.md"]);
  });

  it("a first pull that fails puts the record back even where its store has old state for the path", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeC = memoryStore.make();
    const storeB = memoryStore.make();
    await seedNote(world, storeB, "b");
    // B's copy of the directory first; emptied, then pulled from C, which publishes a note.
    const plainB = openOn(storeB, base);
    await Effect.runPromise(plainB.pull({ path: "/ws/d" }));
    vol.unlinkSync("/ws/d/b.md");
    await copyWithNote(world, storeC);
    const record = `${privateRoot}/owners/${keyDigest(["store of", "/ws/d"])}`;
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
    // Emptied again: B's pull takes it back afresh, and fails before its first note (its
    // record of what it is writing cannot be written). B's old state there does not make
    // it B's copy: C's record comes back.
    vol.unlinkSync("/ws/d/c.md");
    const failing = failingWrites(base, (path) => path.endsWith("/first-pull.json"));
    const failed = await Effect.runPromise(
      Effect.either(openOn(storeB, failing).pull({ path: "/ws/d" })),
    );
    expect(failed._tag).toBe("Left");
    expect(vol.readdirSync("/ws/d")).toEqual([]);
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
  });
});

describe("a copy with no record whose record cannot be written", () => {
  it("its calls fail (LOCAL_IO) instead of going on unrecorded", async () => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeC = memoryStore.make();
    const plainC = await copyWithNote(world, storeC);
    vol.unlinkSync(`${privateRoot}/owners/${keyDigest(["store of", "/ws/d"])}`);
    const failing = failingWrites(base, (path) => path.includes("/owners/"));
    const status = await Effect.runPromise(
      Effect.either(openOn(storeC, failing).status({ path: "/ws/d" })),
    );
    expect(status._tag === "Left" ? status.left.reason : "accepted").toBe("LOCAL_IO");
    // Once it can be written, the copy is recorded and its calls work.
    const again = await Effect.runPromise(Effect.either(plainC.status({ path: "/ws/d" })));
    expect(again._tag).toBe("Right");
  });
});

/** `base` whose `info` and `readFile` of the paths `failing` picks fail with an I/O error. */
const failingReads = (base: FileSystem, failing: (path: string) => boolean): FileSystem => ({
  ...base,
  info: (path: string) =>
    failing(path)
      ? Effect.fail(new FsError({ reason: "Other", path, message: "EIO: i/o error, lstat" }))
      : base.info(path),
  readFile: (path: string) =>
    failing(path)
      ? Effect.fail(new FsError({ reason: "Other", path, message: "EIO: i/o error, open" }))
      : base.readFile(path),
});

describe("another store's copy whose private state cannot be read", () => {
  // A read that fails says nothing of whose the directory is: taken as "no copy there",
  // another store's pull took store C's notes as its own and its next commit published
  // them into that store.
  const refusedWhenUnreadable = async (
    failing: (copyDir: string, record: string) => (path: string) => boolean,
  ) => {
    const world = memFs.make({ "/ws/.keep": "" });
    const { service: base, vol } = world;
    const storeC = memoryStore.make();
    const storeD = memoryStore.make();
    await copyWithNote(world, storeC);
    const copyDir = copyDirectory(privateRoot, "/ws/d", storeC.identity);
    const record = `${privateRoot}/owners/${keyDigest(["store of", "/ws/d"])}`;
    const fs = failingReads(base, failing(copyDir, record));
    const pulled = await Effect.runPromise(
      Effect.either(openOn(storeD, fs).pull({ path: "/ws/d" })),
    );
    expect(pulled._tag === "Left" ? pulled.left.reason : "accepted").toBe("LOCAL_IO");
    // Nothing was taken: the directory and its record are store C's as before.
    expect(vol.readdirSync("/ws/d").map(String).sort()).toEqual(["c.md"]);
    expect(String(vol.readFileSync(record))).toBe(storeC.identity);
    // Once it can be read, the pull is refused as ever.
    const again = await Effect.runPromise(
      Effect.either(openOn(storeD, base).pull({ path: "/ws/d" })),
    );
    expect(again._tag === "Left" ? again.left.reason : "accepted").toBe("NESTED_WORKING_COPY");
  };

  it("its state: a pull with another store fails (LOCAL_IO) instead of taking its notes", () =>
    refusedWhenUnreadable((copyDir) => (path) => path.startsWith(`${copyDir}/`)));

  it("its record: a pull with another store fails (LOCAL_IO) instead of taking its notes", () =>
    refusedWhenUnreadable((_, record) => (path) => path === record));
});
