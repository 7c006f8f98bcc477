/**
 * The wiring from configuration to services (SPEC §1): which ObjectStore adapter runs,
 * the node file system and id generator, and the startup steps every command shares —
 * preparing the workspace and private root, and the store compatibility probe.
 */
import { randomBytes } from "node:crypto";
import * as NodePath from "node:path";
import { fileURLToPath } from "node:url";
import { Data, Effect, Layer, Option, type Scope } from "effect";
import * as FaultyObjectStore from "../adapters/faultyObjectStore.js";
import * as FileObjectStore from "../adapters/fileObjectStore.js";
import * as IdGeneratorAdapter from "../adapters/idGenerator.js";
import * as MemoryObjectStore from "../adapters/memoryObjectStore.js";
import * as NodeFileSystem from "../adapters/nodeFileSystem.js";
import type { DomainError, EngineDetail } from "../domain/errors.js";
import { FileSystem, type FileSystemService, type FsError } from "../ports/FileSystem.js";
import { IdGenerator } from "../ports/IdGenerator.js";
import { ObjectStore } from "../ports/ObjectStore.js";
import type { RuntimeConfig, StoreConfig } from "./config.js";
import { isAtOrBelow } from "./config/paths.js";
import { makeNotebook, notebookLayer } from "./usecases/notebookLayer.js";
import type { NotebookOptions } from "./usecases/shared/notebookOptions.js";
import * as UnixSocketChannel from "../adapters/unixSocketChannel.js";
import { LocalChannel } from "../ports/LocalChannel.js";
import { Notebook as NotebookTag } from "./Notebook.js";
import { sharedNotebook } from "./share/share.js";
import { probeStore } from "./usecases/commit/probe.js";
import { tidyUpsDone } from "./usecases/shared/afterAnswer.js";
import { withStoreLogging } from "./storeLogging.js";
import { abandonSession, claimSession, sessionsDirectory } from "./sessions.js";
import { keyDigest } from "./keyDigest.js";
import { detailOf } from "./usecases/shared/failures.js";

/**
 * Why the process could not start. `config`: the configuration names something
 * unusable (exit 2, like a parse error); `store`: the store failed the compatibility
 * probe (`INCOMPATIBLE_STORE`); `io`: a local failure preparing directories.
 */
export class StartupError extends Data.TaggedError("StartupError")<{
  readonly kind: "config" | "store" | "io";
  readonly message: string;
  /** For `store`: the probe's own error, which `--json` prints as it is. */
  readonly error?: DomainError;
  /**
   * For `io`: the file system's cause when classified (a permission or a read-only file
   * system is ENGINE_FAILED/LOCAL_ACCESS, not retryable; others LOCAL_IO).
   */
  readonly detail?: EngineDetail;
}> {}

/**
 * The ObjectStore adapter the configuration selects. The S3 and MinIO adapters (and
 * their SDKs, slow to load) are imported only when selected.
 */
export const storeLayer = (store: StoreConfig): Layer.Layer<ObjectStore> => {
  switch (store.kind) {
    case "file":
      return FileObjectStore.layer({ root: store.root });
    case "memory":
      return MemoryObjectStore.layer();
    case "s3":
    case "minio": {
      const options = {
        bucket: store.bucket,
        prefix: store.prefix,
        ...(store.endpoint === undefined ? {} : { endpoint: store.endpoint }),
        region: store.region,
        forcePathStyle: store.forcePathStyle,
      };
      return Layer.unwrapEffect(
        store.kind === "s3"
          ? Effect.promise(() => import("../adapters/s3ObjectStore.js")).pipe(
              Effect.map((adapter) => adapter.layer(options)),
            )
          : Effect.promise(() => import("../adapters/minioObjectStore.js")).pipe(
              Effect.map((adapter) => adapter.layer(options)),
            ),
      );
    }
  }
};

/** The ports every command needs: the selected store, the node file system, ids. */
export const portsLayer = (
  config: RuntimeConfig,
): Layer.Layer<ObjectStore | FileSystem | IdGenerator> =>
  Layer.mergeAll(
    Layer.effect(ObjectStore, Effect.map(ObjectStore, withStoreLogging)).pipe(
      Layer.provide(
        config.faultInjection === undefined
          ? storeLayer(config.store)
          : FaultyObjectStore.layer(storeLayer(config.store), config.faultInjection),
      ),
    ),
    NodeFileSystem.layer,
    IdGeneratorAdapter.layer,
  );

/** The directories a run works with, canonical (symlinks resolved). */
export interface Workspace {
  readonly workspaceRoot: string;
  /** The root as configured, when that spelling reaches `workspaceRoot` through a symlink. */
  readonly workspaceRootSpelt?: string;
  readonly notebookDirectory: string;
  readonly privateRoot: string;
  /** The file store's directory (canonical when it exists), when the store is one. */
  readonly storeDirectory?: string;
  /** The id of the session directory this process made and claimed (sessions.ts). */
  readonly sessionId?: string;
}

/**
 * What to do when a directory of the private root or of the session cannot be made or
 * resolved: the line must say it (docs/errors.md: every failure names a next step), and
 * it is always the same one — choose a directory this user can write, with free space.
 */
const privateRootStep =
  "choose a writable directory with free space with --private-root (or QUIRE_PRIVATE_ROOT)";
const sessionStep =
  "set TMPDIR to a writable directory with free space, or name a directory with --workspace-root";

const ioFailure =
  (what: string, next = "check that path and its permissions, then start again") =>
  (error: FsError) => {
    const detail = detailOf(error);
    return new StartupError({
      kind: "io",
      message: `cannot ${what}: ${error.reason}: ${error.message}; ${next}`,
      ...(detail === undefined ? {} : { detail }),
    });
  };

/**
 * Prepares the directories. The private root is created (0700) first. A `session`
 * workspace is claimed in the private root for the life of the scope (sessions.ts:
 * its record names the directory before it exists, so that whatever becomes of this
 * process, a later start can remove what it leaves), then
 * `<tmp>/quire-<random>/notebook` is created (parent 0700) and is the workspace root
 * and notebook directory; a `root` workspace must be an existing directory and is its
 * own notebook directory. Once both are canonical, the private root must not be at or
 * below the workspace root (a symlink could hide that from the lexical check of the
 * parser), nor the workspace root below it; nor may a file store's directory overlap
 * the workspace root either way (its objects would be published as notes, and a pull
 * could write old manifest versions into it: SPEC §4.1). Fails with {@link StartupError}.
 */
export const prepareWorkspace = (
  config: RuntimeConfig,
): Effect.Effect<Workspace, StartupError, FileSystem | ObjectStore | Scope.Scope> =>
  Effect.suspend(() => {
    // The session this start claimed: a start that fails after its claim (no session
    // directory can be made, an overlap refused) undoes it, rather than leaving its
    // record for a later start to reap.
    let claimed: ClaimedSession | undefined;
    return prepared(config, (session) => (claimed = session)).pipe(
      Effect.tapError(() => {
        const session = claimed;
        return session === undefined
          ? Effect.void
          : Effect.flatMap(FileSystem, (fs) =>
              abandonSession(fs, session.privateRoot, session.id, session.notebook),
            );
      }),
    );
  });

/** A session a start claimed (sessions.ts): its id, notebook directory and private root. */
interface ClaimedSession {
  readonly id: string;
  readonly notebook: string;
  readonly privateRoot: string;
}

/** {@link prepareWorkspace}'s steps; `onClaim` is told of the session once it is claimed. */
const prepared = (
  config: RuntimeConfig,
  onClaim: (session: ClaimedSession) => void,
): Effect.Effect<Workspace, StartupError, FileSystem | ObjectStore | Scope.Scope> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem;
    const privateRoot = yield* madePrivateRoot(fs, config.privateRoot);
    let workspaceRoot: string;
    let sessionId: string | undefined;
    if (config.workspace.kind === "session") {
      yield* fs
        .makeDirectory(config.workspace.tmpDirectory, 0o700)
        .pipe(Effect.mapError(ioFailure("create the session directory", sessionStep)));
      const tmp = yield* fs
        .realPath(config.workspace.tmpDirectory)
        .pipe(Effect.mapError(ioFailure("resolve the temporary directory", sessionStep)));
      sessionId = randomBytes(8).toString("hex");
      const parent = NodePath.join(tmp, `quire-${sessionId}`);
      const notebook = NodePath.join(parent, "notebook");
      const store = yield* ObjectStore;
      yield* claimSession(fs, privateRoot, sessionId, notebook, store.identity).pipe(
        Effect.mapError(ioFailure("record the session", privateRootStep)),
      );
      onClaim({ id: sessionId, notebook, privateRoot });
      yield* fs
        .makeDirectory(parent, 0o700)
        .pipe(Effect.mapError(ioFailure("create the session directory", sessionStep)));
      yield* fs
        .makeDirectory(notebook, 0o755)
        .pipe(Effect.mapError(ioFailure("create the session directory", sessionStep)));
      workspaceRoot = yield* fs
        .realPath(notebook)
        .pipe(Effect.mapError(ioFailure("resolve the session directory", sessionStep)));
      if (workspaceRoot !== notebook)
        return yield* new StartupError({
          kind: "io",
          message: `the session directory ${notebook} resolves to ${workspaceRoot}; ${sessionStep}`,
        });
    } else {
      workspaceRoot = yield* existingWorkspaceRoot(fs, config.workspace.root);
    }

    const storeDirectory = yield* fileStoreDirectory(fs, config);
    const overlap = overlapOf(config, privateRoot, workspaceRoot, storeDirectory);
    if (overlap !== undefined) return yield* overlap;
    // An agent spells paths as the root was given to it (macOS's /tmp is a symlink).
    const spelt =
      config.workspace.kind === "root" ? NodePath.resolve(config.workspace.root) : undefined;
    return {
      workspaceRoot,
      ...(spelt === undefined || spelt === workspaceRoot ? {} : { workspaceRootSpelt: spelt }),
      notebookDirectory: workspaceRoot,
      privateRoot,
      ...(storeDirectory === undefined ? {} : { storeDirectory }),
      ...(sessionId === undefined ? {} : { sessionId }),
    };
  });

/**
 * The private root, made (0700) and resolved. A start refused at the same instant on the
 * same new private root removes it while it is empty (`withNotebook`), possibly between
 * the making and the resolving: then it is made again, a few times at most.
 */
const madePrivateRoot = (
  fs: FileSystemService,
  path: string,
  makings = 5,
): Effect.Effect<string, StartupError> =>
  fs.makeDirectory(path, 0o700).pipe(
    Effect.mapError(ioFailure("create the private root", privateRootStep)),
    Effect.zipRight(
      fs.realPath(path).pipe(
        Effect.catchIf(
          (error) => error.reason === "NotFound" && makings > 1,
          () => madePrivateRoot(fs, path, makings - 1),
        ),
        Effect.mapError((error) =>
          error instanceof StartupError
            ? error
            : ioFailure("resolve the private root", privateRootStep)(error),
        ),
      ),
    ),
  );

/** A `root` workspace's root, canonical; a `config` error unless it is an existing directory. */
const existingWorkspaceRoot = (
  fs: FileSystemService,
  root: string,
): Effect.Effect<string, StartupError> =>
  Effect.gen(function* () {
    const notADirectory = new StartupError({
      kind: "config",
      message: `the workspace root ${root} is not an existing directory; create it, or choose another --workspace-root`,
    });
    const workspaceRoot = yield* fs
      .realPath(root)
      .pipe(
        Effect.mapError((error) =>
          error.reason === "NotFound" || error.reason === "NotADirectory"
            ? notADirectory
            : ioFailure("resolve the workspace root")(error),
        ),
      );
    const info = yield* fs
      .info(workspaceRoot)
      .pipe(Effect.mapError(ioFailure("inspect the workspace root")));
    if (info._tag === "None" || info.value.kind !== "directory") return yield* notADirectory;
    return workspaceRoot;
  });

/** A file store's directory, canonical (as it will be once made); none for other stores. */
const fileStoreDirectory = (
  fs: FileSystemService,
  config: RuntimeConfig,
): Effect.Effect<string | undefined, StartupError> => {
  const fileStore = config.store.kind === "file" ? config.store.root : undefined;
  return fileStore === undefined
    ? Effect.succeed(undefined)
    : canonicalToBe(fs, fileStore).pipe(
        Effect.catchTag("FsError", (error) =>
          // Not there (yet): compared as its canonical path will be once made (a symlink
          // on the way resolved); the store itself reports what is wrong.
          error.reason === "NotFound" || error.reason === "NotADirectory"
            ? Effect.succeed(NodePath.resolve(fileStore))
            : Effect.fail(ioFailure("resolve the file store's directory")(error)),
        ),
      );
};

/**
 * The refusal of directories that overlap (canonical paths; `workspaceRoot` undefined
 * when it is not known yet, a session's), or `undefined`.
 */
const overlapOf = (
  config: RuntimeConfig,
  privateRoot: string,
  workspaceRoot: string | undefined,
  storeDirectory: string | undefined,
): StartupError | undefined => {
  const checked = config.workspace.kind === "session" || config.workspace.explicit;
  const overlaps = (a: string, b: string) => isAtOrBelow(a, b) || isAtOrBelow(b, a);
  if (checked && workspaceRoot !== undefined && overlaps(privateRoot, workspaceRoot))
    return new StartupError({
      kind: "config",
      message: `the private root (--private-root) and the workspace root ${workspaceRoot} overlap (one is inside the other); choose another --private-root or --workspace-root`,
    });
  if (storeDirectory === undefined) return undefined;
  if (checked && workspaceRoot !== undefined && overlaps(storeDirectory, workspaceRoot))
    return new StartupError({
      kind: "config",
      message: `the file store's directory (--store) and the workspace root ${workspaceRoot} overlap (one is inside the other); choose another --store or --workspace-root`,
    });
  if (overlaps(storeDirectory, privateRoot))
    return new StartupError({
      kind: "config",
      message:
        "the file store's directory (--store) and the private root (--private-root) overlap; choose another",
    });
  return undefined;
};

/**
 * The canonical path `path` will have once made: its nearest existing ancestor's, with
 * the missing rest appended (a symlink on the way is resolved as the made directory's
 * real path would be).
 */
const canonicalToBe = (fs: FileSystemService, path: string): Effect.Effect<string, FsError> => {
  const absolute = NodePath.resolve(path);
  return fs.realPath(absolute).pipe(
    Effect.catchTag("FsError", (error) => {
      const parent = NodePath.dirname(absolute);
      return error.reason === "NotFound" && parent !== absolute
        ? Effect.map(canonicalToBe(fs, parent), (real) =>
            NodePath.join(real, NodePath.basename(absolute)),
          )
        : Effect.fail(error);
    }),
  );
};

/**
 * The checks of {@link prepareWorkspace} that need no directory made: a `root` workspace
 * must be an existing directory, and the private root, the workspace root and a file
 * store's directory must not overlap (a private root not made yet as its canonical path
 * will be; a session's directory is new, so it overlaps nothing). `quire mcp install`
 * runs them, so a client is never given a server that refuses to start. Makes nothing.
 */
export const checkDirectories = (
  config: RuntimeConfig,
): Effect.Effect<void, StartupError, FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem;
    const privateRoot = yield* canonicalToBe(fs, config.privateRoot).pipe(
      Effect.mapError(ioFailure("resolve the private root", privateRootStep)),
    );
    const workspaceRoot =
      config.workspace.kind === "root"
        ? yield* existingWorkspaceRoot(fs, config.workspace.root)
        : undefined;
    const storeDirectory = yield* fileStoreDirectory(fs, config);
    const overlap = overlapOf(config, privateRoot, workspaceRoot, storeDirectory);
    if (overlap !== undefined) return yield* overlap;
  });

/** The use cases' settings for a prepared workspace. */
export const notebookOptions = (config: RuntimeConfig, workspace: Workspace): NotebookOptions => ({
  workspaceRoot: workspace.workspaceRoot,
  ...(workspace.workspaceRootSpelt === undefined
    ? {}
    : { workspaceRootSpelt: workspace.workspaceRootSpelt }),
  notebookDirectory: workspace.notebookDirectory,
  privateRoot: workspace.privateRoot,
  ...(workspace.storeDirectory === undefined ? {} : { storeDirectory: workspace.storeDirectory }),
  ...(config.checkpointBytes === undefined ? {} : { checkpointBytes: config.checkpointBytes }),
  ...(config.allowMassDelete === true ? { allowMassDelete: true } : {}),
  homeDirectory: config.homeDirectory,
  commitRetries: config.commitRetries,
  checkpointPacks: config.checkpointPacks,
  retainedCheckpoints: config.retainedCheckpoints,
  pathSets: config.pathSets,
});

/** Runs the store compatibility probe; a failure becomes a `store` {@link StartupError}. */
export const probe: Effect.Effect<void, StartupError, ObjectStore | IdGenerator> = probeStore.pipe(
  Effect.mapError(
    (error: DomainError) =>
      new StartupError({
        kind: "store",
        message: `${error.code} · ${error.reason}: ${error.message}`,
        error,
      }),
  ),
);

/** How a `serve` process may share itself with the others of its store (app/share). */
export interface Sharing {
  /** The release (package version); only processes of one release and one build share. */
  readonly release: string;
  /** How long others' calls may finish once this process stops. */
  readonly graceMs: number;
  /** The bound of an answer between sharing processes (protocol.ts's maxAnswerBytes). */
  readonly maxAnswerBytes?: number;
}

/**
 * Whether a process of this configuration shares: on a file store or a bucket (S3,
 * MinIO) — the `serve` processes of one store on one host run their calls in one of
 * them, which publishes them in batches — never on the in-memory store (nothing to
 * share), never under fault injection (the faults are this process's), and only where
 * Unix domain sockets are.
 */
export const canShare = (config: RuntimeConfig): boolean =>
  config.store.kind !== "memory" &&
  config.faultInjection === undefined &&
  config.share &&
  process.platform !== "win32";

/** The environment variables that choose a bucket store's credentials, besides secrets. */
const credentialChoosers = [
  // The default credentials and config files live in the home directory.
  "HOME",
  "USERPROFILE",
  "AWS_PROFILE",
  "AWS_DEFAULT_PROFILE",
  "AWS_CONFIG_FILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_ROLE_ARN",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
];

/**
 * What a sharing process's credentials are, as an opaque digest in its share channel's
 * release: a process runs others' calls with its own store client, so only processes
 * whose credentials come from the very same secrets and settings, and whose client
 * settings are the same (the endpoint's full URL, region, path style), share one (a
 * read-only agent never gets its calls run with another's write access). Empty for a
 * file store, whose access is the user's own.
 */
export const credentialScope = (config: RuntimeConfig): string =>
  config.store.kind === "file" || config.store.kind === "memory"
    ? ""
    : `+credentials-${keyDigest([
        ...[...config.secretValues].sort(),
        ...credentialChoosers.map((name) => `${name}=${process.env[name] ?? ""}`),
        `endpoint=${config.store.endpoint ?? ""}`,
        `region=${config.store.region}`,
        `pathStyle=${String(config.store.forcePathStyle)}`,
      ]).slice(0, 16)}`;

/**
 * The Notebook of a sharing `serve` process: runs calls itself or sends them to the
 * process sharing the store (share.ts); while the layer lives it may run others' calls.
 */
export const sharedNotebookLayer = (
  options: NotebookOptions,
  sharing: Sharing,
): Layer.Layer<NotebookTag, never, ObjectStore | FileSystem | IdGenerator> =>
  Layer.scoped(
    NotebookTag,
    Effect.gen(function* () {
      // Runs last: after sharing stopped, the calls it ran may still be tidying up.
      yield* Effect.addFinalizer(() => tidyUpsDone);
      const services = {
        store: yield* ObjectStore,
        fs: yield* FileSystem,
        ids: yield* IdGenerator,
        options,
      };
      const local = yield* makeNotebook(services);
      const channel = yield* LocalChannel;
      // Processes share only when they run the very same code: a rebuilt or reinstalled
      // quire of the same version must not run its calls in an older process.
      const code = yield* services.fs.info(fileURLToPath(import.meta.url)).pipe(
        Effect.map(Option.getOrUndefined),
        Effect.orElseSucceed(() => undefined),
      );
      if (code === undefined)
        return yield* Effect.logWarning(
          "cannot share this process (its code file is unreadable); every call runs here",
        ).pipe(Effect.annotateLogs("module", "share"), Effect.as(local));
      const release = `${sharing.release}+${code.ino}-${code.size}-${Math.trunc(code.mtimeMs)}`;
      return yield* sharedNotebook(services, local, { channel, ...sharing, release });
    }),
  ).pipe(Layer.provide(UnixSocketChannel.layer()));

/**
 * Runs `program` with every service of a configured process: prepares the workspace,
 * runs the probe (nothing is served or touched when it fails), then provides the
 * {@link NotebookTag Notebook} built for that workspace plus the ports; with `sharing`
 * (and {@link canShare}), the sharing one. `program` receives the prepared workspace.
 */
export const withNotebook = <A, E>(
  config: RuntimeConfig,
  program: (
    workspace: Workspace,
  ) => Effect.Effect<A, E, NotebookTag | ObjectStore | FileSystem | IdGenerator>,
  sharing?: Sharing,
): Effect.Effect<A, E | StartupError> =>
  Effect.suspend(() => {
    const fs = NodeFileSystem.make();
    // Set once the start succeeded: a failure after that is the program's, not a refusal.
    let started = false;
    return Effect.gen(function* () {
      // The checks that need nothing made, before any layer makes the file store's
      // directory or the private root: a refused start must leave nothing behind.
      yield* checkDirectories(config).pipe(Effect.provideService(FileSystem, fs));
      const made = yield* missingDirectories(fs, config.privateRoot);
      return yield* served(config, program, sharing, () => (started = true)).pipe(
        Effect.onExit((exit) =>
          exit._tag === "Success" || started
            ? Effect.void
            : removeMade(fs, config.privateRoot, made),
        ),
      );
    });
  });

/**
 * The directories `path` and its missing ancestors that a `makeDirectory(path)` would
 * make, deepest first (lexically, as `makeDirectory` walks them). Never fails: what
 * cannot be inspected is taken to exist, so it is never removed.
 */
const missingDirectories = (
  fs: FileSystemService,
  path: string,
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function* () {
    const missing: Array<string> = [];
    let current = NodePath.resolve(path);
    for (;;) {
      const info = yield* fs.info(current).pipe(Effect.orElseSucceed(() => Option.some(null)));
      if (Option.isSome(info)) return missing;
      missing.push(current);
      const parent = NodePath.dirname(current);
      if (parent === current) return missing;
      current = parent;
    }
  });

/**
 * Undoes the private root a refused start made: its sessions directory (a session's
 * record is gone by then) and each directory it made, deepest first, each only while
 * empty — anything another process put there meanwhile is kept. Never fails.
 */
const removeMade = (
  fs: FileSystemService,
  privateRoot: string,
  made: ReadonlyArray<string>,
): Effect.Effect<void> =>
  made.length === 0
    ? Effect.void
    : Effect.forEach(
        [sessionsDirectory(NodePath.resolve(privateRoot)), ...made],
        (directory) => fs.removeEmptyDirectory(directory).pipe(Effect.ignore),
        { discard: true },
      );

/** {@link withNotebook} once the directories are checked; `onStarted` once it serves. */
const served = <A, E>(
  config: RuntimeConfig,
  program: (
    workspace: Workspace,
  ) => Effect.Effect<A, E, NotebookTag | ObjectStore | FileSystem | IdGenerator>,
  sharing: Sharing | undefined,
  onStarted: () => void,
): Effect.Effect<A, E | StartupError> =>
  Effect.gen(function* () {
    const workspace = yield* prepareWorkspace(config);
    const sessionId = workspace.sessionId;
    // A session that never served leaves nothing: its directories are still empty.
    yield* probe.pipe(
      Effect.tapError(() =>
        sessionId === undefined
          ? Effect.void
          : Effect.flatMap(FileSystem, (fs) =>
              abandonSession(fs, workspace.privateRoot, sessionId, workspace.notebookDirectory),
            ),
      ),
    );
    const options = notebookOptions(config, workspace);
    onStarted();
    return yield* program(workspace).pipe(
      Effect.provide(
        sharing !== undefined && canShare(config)
          ? sharedNotebookLayer(options, {
              ...sharing,
              release: `${sharing.release}${credentialScope(config)}`,
              ...(config.shareAnswerBytes === undefined
                ? {}
                : { maxAnswerBytes: config.shareAnswerBytes }),
            })
          : notebookLayer(options),
      ),
    );
  }).pipe(Effect.scoped, Effect.provide(portsLayer(config)));
