/**
 * Which store a working copy belongs to. Private state is keyed by (path, store), so a
 * copy pulled from one store read as "never pulled" when called with another, and a pull
 * from that other store, as the answer said, then merged the copy's notes into it. The
 * store a directory was last pulled from is recorded under the private root, keyed by the
 * path alone (`<privateRoot>/owners/<digest>`, holding the store's redacted identity), so
 * a call with another store is refused naming the copy's own.
 */
import { join } from "node:path";
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { encodeText } from "../../../domain/content.js";
import type { FileSystemService, RootedTree } from "../../../ports/FileSystem.js";
import { keyDigest } from "../../keyDigest.js";
import { copyDirectory } from "./privateState.js";

const ownerFile = (privateRoot: string, canonicalPath: string): string =>
  join(privateRoot, "owners", keyDigest(["store of", canonicalPath]));

const decoder = new TextDecoder("utf-8", { fatal: true });

/** The store recorded for `canonicalPath`, if any (unreadable: none). */
const recordedStore = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
): Effect.Effect<Option.Option<string>> =>
  fs.readFile(ownerFile(privateRoot, canonicalPath)).pipe(
    Effect.map((bytes) => Option.some(decoder.decode(bytes))),
    Effect.catchAllDefect(() => Effect.succeed(Option.none<string>())),
    Effect.orElseSucceed(() => Option.none<string>()),
  );

/**
 * Records `store` as the store the copy at `canonicalPath` belongs to, after a pull that
 * succeeded. Best effort: a failure is logged, never the pull's answer.
 */
export const recordStoreOfCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void> =>
  recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.contains(recorded, store)
        ? Effect.void
        : fs.makeDirectory(join(privateRoot, "owners"), 0o700).pipe(
            Effect.zipRight(
              fs.writeFileAtomic(ownerFile(privateRoot, canonicalPath), encodeText(store), {
                mode: 0o600,
                durable: false,
              }),
            ),
            Effect.catchAll((error) =>
              Effect.logWarning("recording the store of a working copy failed", error.message),
            ),
          ),
    ),
  );

/**
 * How a message names a store: a file store's directory is never shown outside a
 * startup diagnostic (a caller learns no path of the store), so only that it is one.
 */
const storeNamed = (identity: string): string =>
  identity.startsWith("file:")
    ? "a file store in another directory"
    : identity.startsWith("memory:")
      ? "an in-memory store"
      : identity === ""
        ? "unknown"
        : identity;

/** True when `tree` holds nothing at all (no file, directory or unreadable name). */
const isEmpty = (tree: RootedTree): Effect.Effect<boolean> =>
  tree.walk().pipe(
    Effect.map(
      (walked) =>
        walked.entries.length === 0 &&
        walked.undecodable.length === 0 &&
        walked.tooDeep.length === 0 &&
        walked.tooDeepDirectories === 0,
    ),
    Effect.orElseSucceed(() => false),
  );

/**
 * Fails with INVALID_REQUEST/NESTED_WORKING_COPY, naming the other store, when the
 * directory at `canonicalPath` was last pulled from another store that still has its
 * state there: its notes may be that store's, and this store would take them as its own
 * (a pull, as "not pulled" says, and then a commit published them here; a copy this
 * store knew, moved aside and pulled afresh from the other, read the other's notes as
 * additions and its own as deletions). Which store's notes the directory holds now is not
 * known (a person may have moved directories around), so the advice is the way out that
 * always works: a pull into a path that does not exist yet. With `emptyAllowed` (a pull),
 * a directory holding nothing at all is not refused: there is nothing to take, and the
 * answer is `true` (pull it afresh: this store's own state for it, if any, is older than
 * the other store's pull). Otherwise `false`: nothing to refuse.
 */
export const refuseCopyOfOtherStore = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
  emptyAllowed?: RootedTree,
): Effect.Effect<boolean, DomainError> =>
  Effect.gen(function* () {
    const recorded = yield* recordedStore(fs, privateRoot, canonicalPath);
    if (Option.isNone(recorded) || recorded.value === store) return false;
    const otherHasState = yield* fs
      .info(join(copyDirectory(privateRoot, canonicalPath, recorded.value), "state.json"))
      .pipe(
        Effect.map(Option.isSome),
        Effect.orElseSucceed(() => false),
      );
    if (!otherHasState) return false;
    if (emptyAllowed !== undefined && (yield* isEmpty(emptyAllowed))) return true;
    return yield* Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "NESTED_WORKING_COPY",
        message: `This directory was last pulled from another store (${storeNamed(recorded.value)}), not the one this call uses, so its notes may be that store's; a copy of one store is never merged into another. To work with this store here, move the directory aside (or remove or empty it) and pull again into the path, then copy in the notes you want to add; or, only if it holds that store's notes, call it with that store.`,
      }),
    );
  });

/**
 * Removes the record of which store the directory at `canonicalPath` was pulled from,
 * when it names `store` and that store's copy there was just discarded (a session's copy,
 * all published): every session pulls into a directory of its own, so the records would
 * otherwise pile up. A record naming another store stays (its copy may still be there).
 * Best effort: a failure is logged.
 */
export const forgetStoreOfCopy = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void> =>
  recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.contains(recorded, store)
        ? fs.removeFile(ownerFile(privateRoot, canonicalPath))
        : Effect.void,
    ),
    Effect.catchAll((error) =>
      Effect.logWarning("removing the record of a working copy's store failed", error.message),
    ),
  );
