/**
 * Packs this process recently published or downloaded for a commit, per store, by
 * SHA-256: what a commit of one working copy needs from the commits of the process's
 * other copies.
 *
 * Why: when several working copies live in one process (a library host, a server for
 * several agents), they publish in batches (publishBatch.ts), and each commit must
 * first bring its copy up to date with the packs the others published moments before
 * — packs this process itself uploaded, or members of its own batch are uploading.
 * Downloading them back made a contended commit a quarter longer (8 library writers:
 * ~7 gets per commit), and writing each into every copy's cache (a file and two fsync
 * rounds per pack per copy) was most of the file system work of a contended commit; a
 * copy links the pack file another copy already wrote durably instead.
 *
 * Only commits use it, while they prepare in their batch; pulls always download, so a
 * pack damaged or lost in the store is still reported by every reader's next pull. A
 * hit is exactly the bytes the manifest names: every entry's SHA-256 was computed by
 * this process over those bytes (after a download, over what it received and verified;
 * after an upload, over what it sent), and a linked file was written with those bytes.
 * Callers still check the header against the descriptor and still cache the pack in
 * their copy's private state.
 */

import { makeRecentMap } from "../shared/recentMap.js";

/** A remembered pack: its bytes and, once known, a durable file holding exactly them. */
export interface RecentPack {
  readonly bytes: Uint8Array;
  /**
   * A private-state cache file of this process with these bytes, written durably (a
   * copy's cached pack): another copy may link to it instead of writing the bytes
   * again. It may have been removed since (its copy pruned it).
   */
  readonly file: string | undefined;
}

/** A bounded, least-recently-used memory of verified pack bytes. */
export interface RecentPacks {
  /** Pack `sha` of store `storeIdentity`, if remembered (marks it used). */
  readonly get: (storeIdentity: string, sha: string) => RecentPack | undefined;
  /**
   * Remembers `bytes`, whose SHA-256 `sha` the caller computed over exactly these bytes.
   * Packs larger than a quarter of the bound are not kept; the least recently used are
   * forgotten to stay within it.
   */
  readonly remember: (storeIdentity: string, sha: string, bytes: Uint8Array) => void;
  /** Records that `file` now durably holds remembered pack `sha` (if still remembered). */
  readonly cachedAt: (storeIdentity: string, sha: string, file: string) => void;
}

/** A {@link RecentPacks} holding at most `maxBytes` of packs and at most `maxPacks` packs. */
export const makeRecentPacks = (maxBytes: number, maxPacks: number): RecentPacks => {
  const packs = makeRecentMap<RecentPack>(maxBytes, (pack) => pack.bytes.length, maxPacks);
  const keyOf = (storeIdentity: string, sha: string) => `${sha} ${storeIdentity}`;
  return {
    get: (storeIdentity, sha) => packs.get(keyOf(storeIdentity, sha)),
    remember: (storeIdentity, sha, bytes) => {
      if (bytes.length > maxBytes / 4) return;
      const key = keyOf(storeIdentity, sha);
      packs.set(key, { bytes, file: packs.get(key)?.file });
    },
    cachedAt: (storeIdentity, sha, file) => {
      const key = keyOf(storeIdentity, sha);
      const pack = packs.get(key);
      if (pack !== undefined) packs.set(key, { bytes: pack.bytes, file });
    },
  };
};

/**
 * The process-wide memory, shared like the batches of publishBatch.ts: at most 32 MiB
 * of pack bytes and at most 256 packs.
 *
 * Why a count too: an increment of a one-line commit is a few hundred bytes, while what
 * remembering it costs (its key, the record, the cache file's path) is about as much
 * again, so a bound on bytes alone let a server committing small changes keep some
 * 45,000 of them — about 1.6 KB of heap for every commit of its first day (issue 26).
 * A commit needs only what was published since its copy last caught up: the members
 * before it in its batch (at most 31, publishBatch.ts) and the batches in between. 256
 * covers that for every copy of a busy process; an older pack is downloaded instead.
 */
export const recentPacks: RecentPacks = makeRecentPacks(32 * 1024 * 1024, 256);
