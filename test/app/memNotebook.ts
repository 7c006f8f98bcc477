/**
 * A notebook service over memfs (workspace `/ws`, private root `privateRoot`) and the
 * given store, with helpers to read and write the in-memory files: the common setup of
 * the use-case tests.
 */
import { Cause, Effect, Exit, Option } from "effect";
import type { DomainError } from "../../src/domain/errors.js";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import type { NotebookOptions } from "../../src/app/usecases/shared/notebookOptions.js";
import type { FileSystemService, RootedTree } from "../../src/ports/FileSystem.js";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";

/** The notebook options of the use-case and durability tests. */
export const baseOptions: NotebookOptions = {
  workspaceRoot: "/ws",
  notebookDirectory: "/ws/a",
  privateRoot: "/private",
  homeDirectory: "/home/u",
  commitRetries: 8,
  checkpointPacks: 1024,
  retainedCheckpoints: 1,
};

/** A notebook service on `store` and the file system `fs` ({@link baseOptions} over `overrides`). */
export const openOn = (
  store: ObjectStoreService,
  fs: FileSystemService,
  overrides: Partial<NotebookOptions> = {},
) =>
  Effect.runSync(
    makeNotebook({ store, fs, ids: ids.make(), options: { ...baseOptions, ...overrides } }),
  );

/** The notebook, its volume, file helpers and the store (see the module comment). */
export const memNotebook = (
  store: ObjectStoreService = memoryStore.make(),
  privateRoot = "/private",
) => {
  const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
  vol.unlinkSync("/ws/.keep");
  const notebook = openOn(store, fs, { privateRoot });
  const read = (path: string) => vol.readFileSync(path, "utf8").toString();
  const write = (path: string, text: string) => {
    vol.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    vol.writeFileSync(path, text);
  };
  return { notebook, vol, read, write, store };
};

/**
 * `fs` whose trees (and their subtrees) answer `hook(tree)`'s methods instead of their
 * own: a person or a process at work in the directory while quire calls them.
 */
export const hookedFileSystem = (
  fs: FileSystemService,
  hook: (tree: RootedTree) => Partial<RootedTree>,
): FileSystemService => {
  const hooked = (tree: RootedTree): RootedTree => ({
    ...tree,
    subtree: (directory) => tree.subtree(directory).pipe(Effect.map(hooked)),
    ...hook(tree),
  });
  return {
    ...fs,
    openTree: (root, resolvedAs) => fs.openTree(root, resolvedAs).pipe(Effect.map(hooked)),
  };
};

/**
 * A notebook on a fresh memfs volume and memory store whose working-copy trees (and
 * their subtrees) are `hook`ed: `hook(tree)` answers the tree's methods to replace, each
 * standing for a person working in the directory as quire calls them.
 */
export const hookedNotebook = (hook: (tree: RootedTree) => Partial<RootedTree>) => {
  const { service, vol } = memFs.make({ "/ws/.keep": "" });
  vol.unlinkSync("/ws/.keep");
  const fs = hookedFileSystem(service, hook);
  const notebook = Effect.runSync(
    makeNotebook({ store: memoryStore.make(), fs, ids: ids.make(), options: baseOptions }),
  );
  const write = (path: string, text: string) => {
    vol.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    vol.writeFileSync(path, text);
  };
  const read = (path: string) => String(vol.readFileSync(path, "utf8"));
  return { notebook, vol, write, read };
};

/**
 * Two copies on one store; `beforeWrite(path)` runs just before the rewrite of any copy
 * writes a note (each path once, unless `everyTime`), standing for a person working in
 * the directory.
 */
export const personAtWork = (beforeWrite: (path: string) => void = () => {}, everyTime = false) => {
  const seen = new Set<string>();
  return hookedNotebook((tree) => ({
    replaceFile: (path, bytes, expected, mode) =>
      Effect.sync(() => {
        const full = `${tree.root}/${path}`;
        if (everyTime || !seen.has(full)) {
          seen.add(full);
          beforeWrite(full);
        }
      }).pipe(Effect.zipRight(tree.replaceFile(path, bytes, expected, mode))),
  }));
};

/**
 * {@link personAtWork} appending a line (`appended N`) to b's note at every write attempt
 * of a rewrite while `arm(true)`: a person who keeps saving the file as quire rewrites
 * it, so the call holds it.
 */
export const appendingNote = () => {
  let armed = false;
  let count = 0;
  const world = personAtWork((path) => {
    if (!armed || path !== "/ws/b/note.md") return;
    count += 1;
    world.vol.appendFileSync(path, `appended ${count}\n`);
  }, true);
  const arm = (on: boolean) => {
    armed = on;
  };
  return { ...world, arm, appended: () => count };
};

/** The domain error `effect` fails with; throws when it succeeds or dies. */
export const failure = async <A>(effect: Effect.Effect<A, DomainError>): Promise<DomainError> => {
  const exit = await Effect.runPromiseExit(effect);
  if (Exit.isSuccess(exit))
    throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`);
  const error = Cause.failureOption(exit.cause);
  if (Option.isNone(error)) throw new Error(Cause.pretty(exit.cause));
  return error.value;
};
