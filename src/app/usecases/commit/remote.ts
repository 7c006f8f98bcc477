/**
 * The accepted remote state R (SPEC §7): reading `current`, bringing a known tree up
 * to date with only the packs it lacks (verified, cached), uploading packs and
 * publishing a manifest with one compare-and-swap.
 */
import { createHash } from "node:crypto";
import { dirname } from "node:path";
import { Effect, Either, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import {
  allDescriptors,
  catchUpPlan,
  decodeManifest,
  encodeManifest,
  manifestKey,
  type Manifest,
  type PackDescriptor,
} from "../../../domain/manifest.js";
import {
  blobsMatchIds,
  decodePack,
  type DecodedPack,
  type PackHeader,
} from "../../../domain/pack.js";
import { encodeText } from "../../../domain/content.js";
import type { FileSystemService, FsError, PathInfo } from "../../../ports/FileSystem.js";
import { StoreError, type LocalFile, type ObjectStoreService } from "../../../ports/ObjectStore.js";
import type { BlobSource } from "../workingCopy/blobs.js";
import type { PendingWrites } from "../workingCopy/pendingWrites.js";
import { forEachPooled } from "../shared/pooled.js";
import { localFailure, privateRootNamed, storeFailure } from "../shared/failures.js";
import { packFile, type BlobRef } from "../workingCopy/privateState.js";
import { recentPacks } from "./recentPacks.js";

/** A tree at an accepted generation, with where every blob is cached. */
export interface RemoteView {
  readonly generation: number;
  readonly head: string;
  readonly tree: ReadonlyMap<string, BlobRef>;
}

/**
 * Whether two records name the same accepted state: the same generation and head
 * publication (a generation alone could come from a replaced history).
 */
export const samePublication = (
  a: { readonly generation: number; readonly head: string },
  b: { readonly generation: number; readonly head: string },
): boolean => a.generation === b.generation && a.head === b.head;

/** The empty notebook at generation 0. */
export const emptyView: RemoteView = { generation: 0, head: "", tree: new Map() };

/** A read of `current`: the view it names, and the ETag to replace it conditionally. */
export interface RemoteRead {
  readonly view: RemoteView;
  /** `None` when `current` does not exist (the first publication creates it). */
  readonly etag: Option.Option<string>;
  readonly manifest: Option.Option<Manifest>;
}

/** What the remote operations need. */
export interface RemoteContext {
  readonly store: ObjectStoreService;
  readonly fs: FileSystemService;
  readonly copyDir: string;
  readonly blobs: BlobSource;
  /** Where downloaded packs' cache writes run until a durable record awaits them. */
  readonly cacheWrites: PendingWrites;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

const integrity = (
  reason:
    | "CHECKSUM_MISMATCH"
    | "MANIFEST_INVALID"
    | "PACK_MISSING"
    | "PACK_INVALID"
    | "UNSUPPORTED_VERSION",
  message: string,
): DomainError => domainError({ code: "STORAGE_INTEGRITY", reason, message });

const isStoreError = (error: unknown): error is StoreError => error instanceof StoreError;

/**
 * A store failure reading or writing `current`: a malformed answer or a key the store
 * cannot write (a foreign file in its place or its history, a body cut short) is the
 * manifest's trouble, STORAGE_INTEGRITY/MANIFEST_INVALID, not a pack's; any other is
 * {@link storeFailure}.
 */
const manifestFailure = (error: StoreError, doing: "read" | "write"): DomainError =>
  error.reason === "Corrupt"
    ? integrity(
        "MANIFEST_INVALID",
        `The manifest could not be ${doing === "read" ? "read" : "written"}: ${error.message}`,
      )
    : storeFailure(error, doing === "read" ? "reading the manifest" : "publishing the manifest");

/**
 * Reads and strictly decodes `current`. Fails with STORAGE_INTEGRITY/MANIFEST_INVALID
 * (or UNSUPPORTED_VERSION) when it, or the store's answer for it, is malformed, and with
 * STORAGE_FAILURE when the store cannot be read.
 */
export const readManifest = (
  store: ObjectStoreService,
): Effect.Effect<
  { readonly manifest: Option.Option<Manifest>; readonly etag: Option.Option<string> },
  DomainError
> =>
  store.get(manifestKey).pipe(
    Effect.mapError((error) => manifestFailure(error, "read")),
    Effect.flatMap((object) => {
      if (Option.isNone(object))
        return Effect.succeed({ manifest: Option.none(), etag: Option.none() });
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(object.value.body);
      } catch {
        return Effect.fail(integrity("MANIFEST_INVALID", "The manifest is not UTF-8."));
      }
      const decoded = decodeManifest(text);
      return Either.isLeft(decoded)
        ? Effect.fail(
            integrity(decoded.left.reason, `The manifest is invalid: ${decoded.left.problem}`),
          )
        : Effect.succeed({
            manifest: Option.some(decoded.right),
            etag: Option.some(object.value.etag),
          });
    }),
  );

interface LoadedPack {
  readonly descriptor: PackDescriptor;
  readonly bytes: Uint8Array;
  readonly pack: DecodedPack;
}

/**
 * Fetches one pack (from the process's recent packs when `recent`, the private cache or
 * the store), verified; `None` if missing from the store.
 */
const fetchPack = (
  ctx: RemoteContext,
  descriptor: PackDescriptor,
  recent: boolean,
): Effect.Effect<Option.Option<LoadedPack>, DomainError> =>
  Effect.gen(function* () {
    const cachePath = packFile(ctx.copyDir, descriptor.sha256);
    const write = (bytes: Uint8Array) =>
      ctx.fs
        .writeFileAtomic(cachePath, bytes, { mode: 0o600, durable: true })
        .pipe(
          Effect.tap(() =>
            recent
              ? Effect.sync(() =>
                  recentPacks.cachedAt(ctx.store.identity, descriptor.sha256, cachePath),
                )
              : Effect.void,
          ),
        );
    const cacheFailure = (error: FsError) =>
      localFailure(error, `caching a pack in the ${privateRootNamed}`);
    // Durable before any record names it, not before the call goes on
    // (workingCopy/pendingWrites.ts).
    const cacheInCopy = (bytes: Uint8Array) =>
      ctx.cacheWrites.start(write(bytes).pipe(Effect.mapError(cacheFailure)));
    // `source` holds `bytes` durably and is never changed in place: a link and one sync of
    // the directory (shared by every pack linked into it) instead of a durable write of
    // the bytes. Any failure (the file gone, another file system, no right to link it)
    // falls back to that write. Another copy's cache file (a path) may find the entry
    // already there, which it keeps. A store's file (`LocalFile`) is linked only after the
    // entry was found invalid or absent, so an existing entry is replaced, and the link
    // must still be the very file the store read, or it is replaced by the write too.
    const cacheAsLinkTo = (source: string | LocalFile, bytes: Uint8Array) => {
      const directory = dirname(cachePath);
      const fromStore = typeof source !== "string";
      const isTheFileRead = (read: LocalFile, info: Option.Option<PathInfo>): boolean =>
        Option.isSome(info) &&
        info.value.ino === read.ino &&
        info.value.size === read.size &&
        info.value.mtimeMs === read.mtimeMs;
      const linked = fromStore
        ? ctx.fs.linkFile(source.path, cachePath).pipe(
            Effect.zipRight(ctx.fs.info(cachePath)),
            Effect.flatMap((info) => (isTheFileRead(source, info) ? Effect.void : write(bytes))),
          )
        : ctx.fs.linkFile(source, cachePath);
      return ctx.cacheWrites.startThenSync(
        linked.pipe(
          Effect.tap(() =>
            recent
              ? Effect.sync(() =>
                  recentPacks.cachedAt(ctx.store.identity, descriptor.sha256, cachePath),
                )
              : Effect.void,
          ),
          Effect.catchTag("FsError", (error) =>
            error.reason === "Exists" && !fromStore ? Effect.void : write(bytes),
          ),
          Effect.mapError(cacheFailure),
        ),
        directory,
        ctx.fs.syncDirectory(directory).pipe(Effect.mapError(cacheFailure)),
      );
    };
    const remembered = recent ? recentPacks.get(ctx.store.identity, descriptor.sha256) : undefined;
    if (remembered !== undefined) {
      const file = remembered.file;
      // Another copy's cache, when it holds these bytes, is linked rather than written.
      yield* file === undefined || file === cachePath
        ? cacheInCopy(remembered.bytes)
        : cacheAsLinkTo(file, remembered.bytes);
      // Remembered bytes were built by this process or verified when downloaded.
      return yield* verified(ctx, descriptor, remembered.bytes, false);
    }
    const cached = yield* ctx.fs.readFile(cachePath).pipe(
      Effect.map(Option.some),
      Effect.catchTag("FsError", (error) =>
        error.reason === "NotFound"
          ? Effect.succeed(Option.none<Uint8Array>())
          : Effect.fail(localFailure(error, `reading the object cache in the ${privateRootNamed}`)),
      ),
    );
    let bytes: Uint8Array;
    if (
      Option.isSome(cached) &&
      cached.value.length === descriptor.size &&
      sha256(cached.value) === descriptor.sha256
    ) {
      bytes = cached.value;
    } else {
      const object = yield* ctx.store
        .get(descriptor.key)
        .pipe(Effect.mapError((error) => storeFailure(error, "downloading a pack")));
      if (Option.isNone(object)) return Option.none();
      bytes = object.value.body;
      if (bytes.length !== descriptor.size || sha256(bytes) !== descriptor.sha256) {
        return yield* Effect.fail(
          integrity(
            "CHECKSUM_MISMATCH",
            "A pack does not match its size and SHA-256 in the manifest.",
          ),
        );
      }
      // Verified before it is remembered: remembered bytes are not checked again.
      const loaded = yield* verified(ctx, descriptor, bytes, true);
      if (recent) recentPacks.remember(ctx.store.identity, descriptor.sha256, bytes);
      // A store whose objects are local files (the file store) lends its own file: a
      // cold pull then writes the notes, not also a second copy of the whole checkpoint.
      const localFile = object.value.localFile;
      yield* localFile === undefined ? cacheInCopy(bytes) : cacheAsLinkTo(localFile, bytes);
      return loaded;
    }
    return yield* verified(ctx, descriptor, bytes, true);
  });

/**
 * Checks a pack whose size and SHA-256 match `descriptor` against it (the header
 * decodes and names the descriptor's publication, generation and kind; with
 * `checkBlobs`, every blob hashes to its content id) and registers its blobs. Fails with
 * STORAGE_INTEGRITY/PACK_INVALID otherwise.
 */
const verified = (
  ctx: RemoteContext,
  descriptor: PackDescriptor,
  bytes: Uint8Array,
  checkBlobs: boolean,
): Effect.Effect<Option.Option<LoadedPack>, DomainError> =>
  Effect.gen(function* () {
    const decoded = decodePack(bytes);
    if (Either.isLeft(decoded))
      return yield* Effect.fail(integrity("PACK_INVALID", `A pack is malformed: ${decoded.left}`));
    if (checkBlobs && !blobsMatchIds(bytes, decoded.right))
      return yield* Effect.fail(
        integrity("PACK_INVALID", "A pack holds content that does not match its content id."),
      );
    const header = decoded.right.header;
    if (
      header.publicationId !== descriptor.publicationId ||
      header.generation !== descriptor.generation
    ) {
      return yield* Effect.fail(
        integrity("PACK_INVALID", "A pack's header does not match its manifest descriptor."),
      );
    }
    const expectedKind = descriptor.key.startsWith("packs/checkpoints/")
      ? "checkpoint"
      : "increment";
    if (header.kind !== expectedKind)
      return yield* Effect.fail(integrity("PACK_INVALID", "A pack's kind does not match its key."));
    ctx.blobs.addPack(descriptor.sha256, bytes);
    return Option.some({ descriptor, bytes, pack: decoded.right });
  });

/** Registers every blob a verified pack puts, calling `each` with its path and reference. */
const registerPuts = (
  loaded: LoadedPack,
  blobs: BlobSource,
  each: (path: string, ref: BlobRef) => void = () => undefined,
): void => {
  const { header, blobStart } = loaded.pack;
  for (const put of header.puts) {
    const ref: BlobRef = {
      id: put.id,
      pack: loaded.descriptor.sha256,
      offset: blobStart + put.offset,
      size: put.size,
    };
    blobs.addRef(ref);
    each(put.path, ref);
  }
};

/** Applies a verified pack to a mutable tree, registering its blobs. */
const applyPack = (tree: Map<string, BlobRef>, loaded: LoadedPack, blobs: BlobSource): void => {
  const { header } = loaded.pack;
  if (header.kind === "checkpoint") tree.clear();
  for (const path of header.deletes) tree.delete(path);
  registerPuts(loaded, blobs, (path, ref) => tree.set(path, ref));
};

/** A pack read for what it records (the history): its descriptor and header. */
export interface ReadPack {
  readonly descriptor: PackDescriptor;
  readonly header: PackHeader;
}

/**
 * Reads the packs `descriptors` (the copy's cache first, then the store), each verified
 * against its descriptor, and registers their blobs in `ctx.blobs` so that
 * `ctx.blobs.load` finds every content they put. `undefined` in place of a pack the store
 * no longer has (pruned by a later checkpoint's cleanup). Fails on store, cache or
 * integrity errors.
 */
export const readPacks = (
  ctx: RemoteContext,
  descriptors: ReadonlyArray<PackDescriptor>,
): Effect.Effect<Array<ReadPack | undefined>, DomainError> =>
  fetchPacks(ctx, descriptors, false).pipe(
    Effect.map((loaded) =>
      loaded.map((pack) => {
        if (Option.isNone(pack)) return undefined;
        registerPuts(pack.value, ctx.blobs);
        return { descriptor: pack.value.descriptor, header: pack.value.pack.header };
      }),
    ),
  );

/**
 * STORAGE_INTEGRITY/MANIFEST_INVALID when `manifest` (none: `current` is absent) does not
 * continue the history a copy has seen at `known` — it is older, names another head at
 * the same generation, or is newer but names another publication at `known`'s generation
 * (the store was rolled back, or replaced by another notebook's, or restored from an
 * older backup that others published on since);
 * `undefined` when it does. A copy never reads such a manifest onto itself: pull and
 * commit refuse it, and so do the history calls made on a copy (status, log, show,
 * restore, revert).
 */
export const notContinuing = (
  manifest: Option.Option<Manifest>,
  known: { readonly generation: number; readonly head: string },
): DomainError | undefined => {
  if (Option.isNone(manifest))
    return known.generation > 0
      ? integrity(
          "MANIFEST_INVALID",
          `The manifest is missing, but this copy already saw generation ${known.generation}.`,
        )
      : undefined;
  const m = manifest.value;
  // Ahead of the copy, `current` must still hold the publication the copy saw at its
  // generation wherever it names one: a store restored from an older backup that others
  // then published on names other publications there, and catching up on it (only the
  // increments after the copy's generation) would silently mix two histories in the copy.
  const increments = [m.increments, ...m.retained.map((chain) => chain.increments)].flat();
  const otherAtKnown = increments.some(
    (d) => d.generation === known.generation && d.publicationId !== known.head,
  );
  return m.generation < known.generation ||
    (m.generation === known.generation && m.head !== known.head) ||
    otherAtKnown
    ? integrity(
        "MANIFEST_INVALID",
        "The manifest does not continue the history this copy has seen (rolled back or replaced).",
      )
    : undefined;
};

/**
 * Whether two reads of `current` answered the same ETag (both absent included): a pack
 * still missing after such a second read is damage, not a cleanup racing the reader.
 */
export const sameEtag = (a: Option.Option<string>, b: Option.Option<string>): boolean =>
  Option.getEquivalence((x: string, y: string) => x === y)(a, b);

/**
 * STORAGE_INTEGRITY/PACK_MISSING for a history reader (log, show, restore, revert) that
 * found a pack `current` references missing, and `current` unchanged when read again.
 */
export const historyPackMissing: DomainError = integrity(
  "PACK_MISSING",
  "A pack the current manifest references is missing from the store.",
);

/**
 * Reads `current` and brings `known` up to its generation, downloading only the packs
 * `known` lacks ({@link catchUpPlan}): the increments after it — from retained chains
 * too when it is older than the active checkpoint — or else the checkpoint and its
 * tail. With `recent` (a commit preparing in its batch) packs come from the process's
 * recent packs when they are there (recentPacks.ts). With `startFrom` (a manifest this
 * process wrote, or its batch's tip, and the ETag to swap on) the first round uses it
 * instead of reading `current`; if it is older than `known`, or a pack it names is
 * missing, `current` is read as usual. Refuses a
 * manifest older than `known` or naming a different history at the same generation
 * (STORAGE_INTEGRITY). A referenced pack that is missing makes it re-read `current`;
 * the same manifest again is PACK_MISSING.
 */
export const readRemote = (
  ctx: RemoteContext,
  known: RemoteView,
  startFrom: Option.Option<{ readonly manifest: Manifest; readonly etag: string }> = Option.none(),
  recent = false,
): Effect.Effect<RemoteRead, DomainError> =>
  Effect.gen(function* () {
    let previousEtag: Option.Option<string> | undefined;
    let given = startFrom;
    for (;;) {
      const { manifest, etag } = Option.isSome(given)
        ? { manifest: Option.some(given.value.manifest), etag: Option.some(given.value.etag) }
        : yield* readManifest(ctx.store);
      const wasGiven = Option.isSome(given);
      given = Option.none();
      const diverged = notContinuing(manifest, known);
      if (diverged !== undefined) {
        // What this process wrote is older than what the copy has seen since: read it.
        if (wasGiven) continue;
        return yield* Effect.fail(diverged);
      }
      if (Option.isNone(manifest)) return { view: emptyView, etag, manifest };
      const m = manifest.value;
      if (m.generation === known.generation) return { view: known, etag, manifest };
      const { incremental, packs: needed } = catchUpPlan(m, known.generation);
      const loaded = yield* fetchPacks(ctx, needed, recent);
      if (loaded.some(Option.isNone)) {
        if (previousEtag !== undefined && sameEtag(previousEtag, etag)) {
          return yield* Effect.fail(
            integrity("PACK_MISSING", "A pack named by the manifest is missing from the store."),
          );
        }
        previousEtag = etag;
        continue;
      }
      const tree = new Map(incremental ? known.tree : []);
      for (const pack of loaded) if (Option.isSome(pack)) applyPack(tree, pack.value, ctx.blobs);
      return { view: { generation: m.generation, head: m.head, tree }, etag, manifest };
    }
  });

/**
 * The packs `needed`, in their order, as {@link fetchPack} gives each. Those to read from
 * the copy's cache or the store wait on I/O, so up to 8 are fetched at once; those the
 * process remembers take microseconds (bytes in memory, a cache write started in the
 * background), so they run one after another in this fiber, which costs less than a
 * fiber each (shared/pooled.ts).
 */
const fetchPacks = (
  ctx: RemoteContext,
  needed: ReadonlyArray<PackDescriptor>,
  recent: boolean,
): Effect.Effect<Array<Option.Option<LoadedPack>>, DomainError> =>
  Effect.gen(function* () {
    const remembered = (d: PackDescriptor) =>
      recent && recentPacks.get(ctx.store.identity, d.sha256) !== undefined;
    const fetched = new Map<PackDescriptor, Option.Option<LoadedPack>>();
    yield* forEachPooled(
      needed.filter((d) => !remembered(d)),
      (d) => fetchPack(ctx, d, recent).pipe(Effect.map((pack) => fetched.set(d, pack))),
      { workers: 8, itemsPerWorker: 1 },
    );
    return yield* Effect.forEach(needed, (d) => {
      const pack = fetched.get(d);
      return pack === undefined ? fetchPack(ctx, d, recent) : Effect.succeed(pack);
    });
  });

/**
 * Uploads an immutable pack under its unique key (create-only). A lost response is
 * resolved by reading the key back: the same size and SHA-256 means it landed.
 */
export const uploadPack = (
  store: ObjectStoreService,
  key: string,
  bytes: Uint8Array,
  metadata: Readonly<Record<string, string>>,
): Effect.Effect<void, DomainError> => {
  const verify = store.get(key).pipe(
    Effect.mapError((error) => storeFailure(error, "verifying an uploaded pack")),
    Effect.flatMap((object) =>
      Option.isSome(object) &&
      object.value.body.length === bytes.length &&
      sha256(object.value.body) === sha256(bytes)
        ? Effect.void
        : Effect.fail(
            domainError({
              code: "STORAGE_FAILURE",
              reason: "TIMEOUT",
              message: "Uploading a pack did not complete; nothing was published.",
            }),
          ),
    ),
  );
  return store.put(key, bytes, { _tag: "IfNoneMatch" }, metadata).pipe(
    Effect.asVoid,
    Effect.catchTag("StoreError", (error) =>
      error.reason === "Ambiguous" || error.reason === "PreconditionFailed"
        ? verify
        : Effect.fail(storeFailure(error, "uploading a pack")),
    ),
  );
};

/** The outcome of one compare-and-swap of `current`. */
export type PublishOutcome =
  | {
      readonly _tag: "Accepted";
      readonly generation: number;
      /** The ETag the store gave `next` (`None` when only a re-read proved acceptance). */
      readonly etag: Option.Option<string>;
      /** When a re-read proved it: the manifest that re-read found, naming the publication. */
      readonly found?: Manifest;
    }
  | { readonly _tag: "LostRace" };

/**
 * Replaces `current` with `next` if it still has `etag` (creates it if `etag` is
 * `None`), once `after` has succeeded (the store stages the write meanwhile; if `after`
 * fails, nothing is written and that is the error). A lost response is resolved by
 * re-reading `current` and looking for
 * `publicationId` (default: `next.head`; a checkpoint passes its own) in every
 * descriptor, active and retained: found → accepted; not found →
 * STORAGE_FAILURE/PUBLICATION_UNKNOWN (never an automatic republish).
 */
export const publishManifest = <E = never>(
  store: ObjectStoreService,
  next: Manifest,
  etag: Option.Option<string>,
  publicationId: string = next.head,
  after: Effect.Effect<void, E> = Effect.void,
): Effect.Effect<PublishOutcome, DomainError | E> =>
  store
    .putAfter(
      manifestKey,
      encodeText(encodeManifest(next)),
      Option.isSome(etag) ? { _tag: "IfMatch", etag: etag.value } : { _tag: "IfNoneMatch" },
      after,
    )
    .pipe(
      Effect.map((written): PublishOutcome => ({
        _tag: "Accepted",
        generation: next.generation,
        etag: Option.some(written.etag),
      })),
      // Only the put's own failures: `after`'s pass through as they are.
      Effect.catchIf(isStoreError, (error) => {
        if (error.reason === "PreconditionFailed")
          return Effect.succeed<PublishOutcome>({ _tag: "LostRace" });
        if (error.reason !== "Ambiguous") return Effect.fail(manifestFailure(error, "write"));
        return readManifest(store).pipe(
          Effect.catchAll(() =>
            Effect.succeed({ manifest: Option.none<Manifest>(), etag: Option.none<string>() }),
          ),
          Effect.flatMap(({ manifest }) => {
            const found = Option.isSome(manifest)
              ? allDescriptors(manifest.value).find((d) => d.publicationId === publicationId)
              : undefined;
            return found !== undefined && Option.isSome(manifest)
              ? Effect.succeed<PublishOutcome>({
                  _tag: "Accepted",
                  generation: next.generation,
                  etag: Option.none(),
                  found: manifest.value,
                })
              : Effect.fail(
                  domainError({
                    code: "STORAGE_FAILURE",
                    reason: "PUBLICATION_UNKNOWN",
                    message:
                      "The store did not confirm the publication and it is not visible; pull to see whether it landed.",
                  }),
                );
          }),
        );
      }),
    );
