/**
 * In-process harness of the durability tests: one memfs volume and one in-memory store
 * (wrapped by the fault-injecting store) shared by any number of Notebook instances —
 * a new instance over the same volume and store is a restarted process.
 */
import {
  Cause,
  Context,
  Effect,
  Either,
  Exit,
  Layer,
  Logger,
  LogLevel,
  Option,
  Scope,
} from "effect";
import { afterAll } from "vitest";
import * as faulty from "../../src/adapters/faultyObjectStore.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import type { NotebookService, SyncReport } from "../../src/app/Notebook.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import type { DomainError } from "../../src/domain/errors.js";
import { allDescriptors, decodeManifest, type Manifest } from "../../src/domain/manifest.js";
import { ObjectStore, type ObjectStoreService } from "../../src/ports/ObjectStore.js";
import type { RootedTree } from "../../src/ports/FileSystem.js";
import { stagingPrefix } from "../../src/domain/staging.js";
import { baseOptions, hookedFileSystem, openOn } from "../app/memNotebook.js";
import { freshPrefix, s3TestEnv, storeOptions } from "../s3/env.js";

export const author = { name: "test", version: "1" };

/**
 * Deletes every staged record (commit/staging.ts), as a writer that never includes them
 * would leave them unused.
 */
export const dropStaged = (store: ObjectStoreService) =>
  store
    .list(stagingPrefix)
    .pipe(
      Effect.flatMap((listed) =>
        Effect.forEach(listed, (info) => store.delete(info.key), { discard: true }),
      ),
    );

export { baseOptions };

// QUIRE_DURABILITY_STORE=s3 runs every world on the real S3 server of the S3 suite
// (its environment; a fresh prefix per world) instead of the in-memory store.
const scope = Effect.runSync(Scope.make());
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)));

/** The store a world runs on by default: in-memory, or S3 when selected. */
export const defaultStore = (): ObjectStoreService => {
  if (process.env["QUIRE_DURABILITY_STORE"] !== "s3") return memoryStore.make();
  const layer = S3Store.layer(storeOptions(s3TestEnv(), freshPrefix("durability")));
  return Effect.runSync(
    Layer.buildWithScope(layer, scope).pipe(
      Effect.map((context) => Context.get(context, ObjectStore)),
    ),
  );
};

/** A world: the shared volume and store, and a way to start notebooks on them. */
export const world = (inner: ObjectStoreService = defaultStore()) => {
  const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
  vol.unlinkSync("/ws/.keep");
  const faults = faulty.make(inner);
  const open = (overrides: Partial<NotebookOptions> = {}): NotebookService =>
    openOn(faults.store, fs, overrides);
  /**
   * A notebook on this world whose working-copy trees (and their subtrees) answer
   * `hook(tree)`'s methods instead of their own: a person or a process at work in the
   * directory while quire calls them.
   */
  const openHooked = (
    hook: (tree: RootedTree) => Partial<RootedTree>,
    overrides: Partial<NotebookOptions> = {},
  ): NotebookService => openOn(faults.store, hookedFileSystem(fs, hook), overrides);
  const read = (path: string): string => vol.readFileSync(path, "utf8").toString();
  const exists = (path: string): boolean => vol.existsSync(path);
  const write = (path: string, text: string) => {
    vol.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    vol.writeFileSync(path, text);
  };
  const remove = (path: string) => vol.rmSync(path, { recursive: true, force: true });
  /** Every file below `dir` as notebook path → text. */
  const files = (dir: string): Record<string, string> => {
    const out: Record<string, string> = {};
    const visit = (sub: string) => {
      for (const name of vol.readdirSync(`${dir}${sub}`).map(String)) {
        const path = `${sub}/${name}`;
        if (vol.statSync(`${dir}${path}`).isDirectory()) visit(path);
        else out[path.slice(1)] = read(`${dir}${path}`);
      }
    };
    if (exists(dir)) visit("");
    return out;
  };
  return {
    fs,
    vol,
    inner,
    faults,
    store: faults.store,
    open,
    openHooked,
    read,
    exists,
    write,
    remove,
    files,
  };
};

export type World = ReturnType<typeof world>;

/** Quiet below warnings: checkpoint and cleanup log at info. */
const quiet = <A, E>(effect: Effect.Effect<A, E>) =>
  effect.pipe(Logger.withMinimumLogLevel(LogLevel.Warning));

export const ok = (effect: Effect.Effect<SyncReport, DomainError>): Promise<SyncReport> =>
  Effect.runPromise(quiet(effect));

/** The domain error of a failed call (throws on success or on a defect). */
export const fails = async (effect: Effect.Effect<unknown, DomainError>): Promise<DomainError> => {
  const exit = await Effect.runPromiseExit(effect);
  if (Exit.isSuccess(exit))
    throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`);
  const failure = Cause.failureOption(exit.cause);
  if (Option.isNone(failure))
    throw new Error(`expected a domain error, got ${Cause.pretty(exit.cause)}`);
  return failure.value;
};

/** Runs a call that must crash (die or be interrupted) rather than return. */
export const crashes = async (effect: Effect.Effect<unknown, DomainError>): Promise<void> => {
  const exit = await Effect.runPromiseExit(quiet(effect));
  if (Exit.isSuccess(exit)) throw new Error(`expected a crash, got ${JSON.stringify(exit.value)}`);
  if (Option.isSome(Cause.failureOption(exit.cause)))
    throw new Error(`expected a crash, got a failure: ${Cause.pretty(exit.cause)}`);
};

export const pull = (nb: NotebookService, path = "/ws/a") => ok(nb.pull({ path }));
export const commit = (nb: NotebookService, path = "/ws/a", message = "m") =>
  ok(nb.commit({ path, message, author }));
export const commitFails = (nb: NotebookService, path = "/ws/a", message = "m") =>
  fails(nb.commit({ path, message, author }));

/** The decoded `current` of a store (`undefined` when absent); throws if it is invalid. */
export const manifestOf = async (store: ObjectStoreService): Promise<Manifest | undefined> => {
  const object = await Effect.runPromise(store.get("current"));
  if (Option.isNone(object)) return undefined;
  const decoded = decodeManifest(new TextDecoder().decode(object.value.body));
  if (Either.isLeft(decoded)) throw new Error(`invalid manifest: ${decoded.left.problem}`);
  return decoded.right;
};

/** The ETag of `current` (`undefined` when absent). */
export const etagOf = async (store: ObjectStoreService): Promise<string | undefined> =>
  Option.getOrUndefined(
    Option.map(await Effect.runPromise(store.get("current")), (object) => object.etag),
  );

/** Every key below `prefix`. */
export const keysOf = async (store: ObjectStoreService, prefix = ""): Promise<string[]> =>
  (await Effect.runPromise(store.list(prefix))).map((info) => info.key);

/** Pack keys a manifest references. */
export const referencedKeys = (manifest: Manifest): string[] =>
  allDescriptors(manifest).map((d) => d.key);
