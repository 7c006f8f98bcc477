/**
 * What this process last wrote to `current`, per store: the manifest and the ETag the
 * store answered. A commit may start from it instead of reading `current` first.
 *
 * Why: a writer that is the only one publishing (an agent committing again and again,
 * or the copies of one process publishing in batches, see publishBatch.ts) reads back the
 * manifest it just wrote before every commit — one round trip of three on S3, and a
 * tenth of the compare-and-swap window on the file store. Starting from what it wrote
 * is safe because the swap is conditional on that ETag: if anyone else replaced
 * `current` meanwhile, the swap fails, nothing is published, and the commit reads
 * `current` and tries again. That costs the attempt's pack upload, so after such a miss
 * the store is read first for a while (another process is publishing too).
 */
import { Option } from "effect";
import type { Manifest } from "../../../domain/manifest.js";
import { makeRecentMap } from "../shared/recentMap.js";

/** A manifest this process wrote, with the ETag the store gave it. */
export interface Written {
  readonly manifest: Manifest;
  readonly etag: string;
}

/** How long after a miss commits on that store read `current` first. */
const readFirstAfterMissMs = 5_000;

/**
 * How many stores this process remembers a manifest for. A process publishes to one
 * store or a few; one that opens store after store (a library host, a test run) keeps
 * the most recently used, not a manifest of every store it ever wrote to. A forgotten
 * store's next commit just reads `current` first.
 */
const maxStores = 16;

const written = makeRecentMap<Written>(maxStores);
const readFirstUntil = makeRecentMap<number>(maxStores);

/** What to start a commit on `storeIdentity` from, if anything (`nowMs`: the clock). */
export const lastWritten = (storeIdentity: string, nowMs: number): Option.Option<Written> => {
  const until = readFirstUntil.get(storeIdentity);
  if (until !== undefined && until > nowMs) return Option.none();
  if (until !== undefined) readFirstUntil.delete(storeIdentity);
  return Option.fromNullable(written.get(storeIdentity));
};

/** Records what this process just wrote to `current` (`None`: unknown, forget it). */
export const rememberWritten = (storeIdentity: string, next: Option.Option<Written>): void => {
  if (Option.isSome(next)) written.set(storeIdentity, next.value);
  else written.delete(storeIdentity);
};

/** A swap started from {@link lastWritten} lost: someone else writes `current` too. */
export const missedWritten = (storeIdentity: string, nowMs: number): void => {
  written.delete(storeIdentity);
  readFirstUntil.set(storeIdentity, nowMs + readFirstAfterMissMs);
};
