/**
 * The content source of one operation: finds the bytes of a content id wherever they
 * are — in memory (just read, merged or downloaded), in a cached pack of private
 * state, or in the working copy — so the rest of a use case deals in ids only.
 */
import { Effect } from "effect";
import { contentId, maxFileBytes } from "../../../domain/content.js";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { FileSystemService, RootedTree } from "../../../ports/FileSystem.js";
import { localFailure, privateRootNamed, workingCopyFailure } from "../shared/failures.js";
import { packFile, type BlobRef } from "./privateState.js";

/** A per-operation registry of where each content id can be loaded from. */
export interface BlobSource {
  /** Registers bytes whose id is `id` (not copied). */
  readonly addBytes: (id: string, bytes: Uint8Array) => void;
  /** Registers a blob in a cached pack. */
  readonly addRef: (ref: BlobRef) => void;
  /**
   * Registers every blob of a tree of cached-pack refs (indexed only if a load needs
   * it; the tree must not change afterwards).
   */
  readonly addTree: (tree: ReadonlyMap<string, BlobRef>) => void;
  /** Registers a pack's bytes held in memory (avoids re-reading the cache file). */
  readonly addPack: (sha: string, bytes: Uint8Array) => void;
  /**
   * Registers the files of a scan of the working copy open as `tree`: notebook path → its
   * content id (indexed only if a load needs it; the scan must not change afterwards).
   */
  readonly addScan: (tree: RootedTree, scan: ReadonlyMap<string, { readonly id: string }>) => void;
  /**
   * Loads the bytes of `id`. A working-copy file that no longer hashes to `id` (edited
   * during the call) fails with ENGINE_FAILED/LOCAL_IO asking to call again.
   */
  readonly load: (id: string) => Effect.Effect<Uint8Array, DomainError>;
  /**
   * The bytes of `id` when they are in memory (registered bytes, or a blob of a pack
   * held in memory), without any I/O; `undefined` when {@link load} would have to read.
   */
  readonly inMemory: (id: string) => Uint8Array | undefined;
}

/** A working-copy file the call needs changed (or went) since the scan: call again. */
const changedDuringCall = (): DomainError =>
  domainError({
    code: "ENGINE_FAILED",
    reason: "LOCAL_IO",
    message: "A file changed while the call was running; call again.",
  });

/** Creates an empty blob source for one operation on the copy whose private dir is `copyDir`. */
export const makeBlobSource = (fs: FileSystemService, copyDir: string): BlobSource => {
  const bytesById = new Map<string, Uint8Array>();
  const refsById = new Map<string, BlobRef>();
  const packs = new Map<string, Uint8Array>();
  const localById = new Map<string, { readonly tree: RootedTree; readonly path: string }>();
  // Registered wholesale and indexed on the first load that needs them: a call that
  // loads nothing (a no-op pull) never pays for indexing 10,000 entries.
  const trees: Array<ReadonlyMap<string, BlobRef>> = [];
  const scans: Array<{ tree: RootedTree; scan: ReadonlyMap<string, { readonly id: string }> }> = [];
  const indexTrees = (): void => {
    for (const tree of trees.splice(0))
      for (const ref of tree.values()) if (!refsById.has(ref.id)) refsById.set(ref.id, ref);
  };
  const indexScans = (): void => {
    for (const { tree, scan } of scans.splice(0))
      for (const [path, file] of scan)
        if (!localById.has(file.id)) localById.set(file.id, { tree, path });
  };

  /** Bytes held in memory: registered ones, or a blob of a pack registered in memory. */
  const inMemory = (id: string): Uint8Array | undefined => {
    const bytes = bytesById.get(id);
    if (bytes !== undefined) return bytes;
    if (!refsById.has(id)) indexTrees();
    const ref = refsById.get(id);
    const pack = ref === undefined ? undefined : packs.get(ref.pack);
    return ref === undefined || pack === undefined
      ? undefined
      : pack.subarray(ref.offset, ref.offset + ref.size);
  };

  const fromCachedPack = (ref: BlobRef): Effect.Effect<Uint8Array, DomainError> =>
    fs.readRange(packFile(copyDir, ref.pack), ref.offset, ref.size).pipe(
      Effect.mapError((error) =>
        error.reason === "NotFound"
          ? domainError({
              code: "STORAGE_INTEGRITY",
              reason: "STATE_INVALID",
              message: "A cached pack of this working copy's private state is missing.",
            })
          : localFailure(error, `reading the object cache in the ${privateRootNamed}`),
      ),
      // A cached pack may be the store's own file (commit/remote.ts links it), so damage to
      // that one file reaches here: bytes that do not hash to their id are refused, never
      // merged as if they were the base.
      Effect.filterOrFail(
        (bytes) => contentId(bytes) === ref.id,
        () =>
          domainError({
            code: "STORAGE_INTEGRITY",
            reason: "STATE_INVALID",
            message:
              "A cached pack of this working copy's private state is damaged: its content does not match its id.",
          }),
      ),
    );

  const fromLocal = (
    id: string,
    local: { readonly tree: RootedTree; readonly path: string },
  ): Effect.Effect<Uint8Array, DomainError> =>
    local.tree.readFile(local.path, maxFileBytes).pipe(
      Effect.map(({ bytes }) => bytes),
      Effect.mapError((error) =>
        // Gone since the scan (deleted, or its directory swapped away), or grown past the
        // limit: changed meanwhile.
        error.reason === "NotFound" ||
        error.reason === "NotADirectory" ||
        error.reason === "TooLarge"
          ? changedDuringCall()
          : workingCopyFailure(error, "reading the working copy"),
      ),
      Effect.filterOrFail((bytes) => contentId(bytes) === id, changedDuringCall),
    );

  return {
    addBytes: (id, bytes) => {
      bytesById.set(id, bytes);
    },
    addRef: (ref) => {
      if (!refsById.has(ref.id)) refsById.set(ref.id, ref);
    },
    addPack: (sha, bytes) => {
      packs.set(sha, bytes);
    },
    addTree: (tree) => {
      trees.push(tree);
    },
    addScan: (tree, scan) => {
      scans.push({ tree, scan });
    },
    inMemory,
    load: (id) => {
      const held = inMemory(id);
      if (held !== undefined) return Effect.succeed(held);
      // inMemory indexed the trees: a ref known now is one in a cached pack's file.
      const ref = refsById.get(id);
      if (ref !== undefined) return fromCachedPack(ref);
      if (!localById.has(id)) indexScans();
      const local = localById.get(id);
      if (local !== undefined) return fromLocal(id, local);
      return Effect.fail(
        domainError({
          code: "ENGINE_FAILED",
          reason: "INTERNAL",
          message: "Content needed by the merge was not found.",
        }),
      );
    },
  };
};
