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
import type { FileSystemService } from "../../../ports/FileSystem.js";
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

/**
 * Fails with INVALID_REQUEST/NESTED_WORKING_COPY, naming the other store, when the copy
 * at `canonicalPath` (which has no state for `store`) is a working copy of another store
 * that still has its state: never "not pulled", whose advice (pull) would merge the copy's
 * notes into this store.
 */
export const refuseCopyOfOtherStore = (
  fs: FileSystemService,
  privateRoot: string,
  canonicalPath: string,
  store: string,
): Effect.Effect<void, DomainError> =>
  recordedStore(fs, privateRoot, canonicalPath).pipe(
    Effect.flatMap((recorded) =>
      Option.isNone(recorded) || recorded.value === store
        ? Effect.succeed(false)
        : fs
            .info(join(copyDirectory(privateRoot, canonicalPath, recorded.value), "state.json"))
            .pipe(
              Effect.map(Option.isSome),
              Effect.orElseSucceed(() => false),
            ),
    ),
    Effect.flatMap((otherHasState) =>
      otherHasState
        ? recordedStore(fs, privateRoot, canonicalPath).pipe(
            Effect.flatMap((recorded) =>
              Effect.fail(
                domainError({
                  code: "INVALID_REQUEST",
                  reason: "NESTED_WORKING_COPY",
                  message: `This directory is a working copy of another store (${storeNamed(Option.getOrElse(recorded, () => ""))}), not of the one this call uses; call it with the store it was pulled from (--store), or move the copy aside or use a new directory to work with this store. A copy of one store is never merged into another.`,
                }),
              ),
            ),
          )
        : Effect.void,
    ),
  );
