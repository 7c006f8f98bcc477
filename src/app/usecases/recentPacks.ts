/**
 * Packs this process recently published or downloaded for a commit, per store, by
 * SHA-256: what a commit of one working copy needs from the commits of the process's
 * other copies.
 *
 * Why: when several working copies live in one process (a library host, a server for
 * several agents), they take turns publishing (contention.ts), and each commit must
 * first bring its copy up to date with the packs the others published moments before
 * — packs this process itself uploaded. Downloading them back inside the
 * compare-and-swap window, which bounds throughput under contention, made that window
 * a quarter longer (8 library writers: ~7 gets per commit).
 *
 * Only commits use it, inside their turn; pulls always download, so a pack damaged or
 * lost in the store is still reported by every reader's next pull. A hit is exactly
 * the bytes the manifest names: every entry's SHA-256 was computed by this process over
 * those bytes (after a download, over what it received and verified; after an upload,
 * over what it sent). Callers still check the header against the descriptor and still
 * cache the pack in their copy's private state.
 */

import { makeRecentMap } from "./recentMap.js";

/** A bounded, least-recently-used memory of verified pack bytes. */
export interface RecentPacks {
  /** The bytes of pack `sha` of store `storeIdentity`, if remembered (marks them used). */
  readonly get: (storeIdentity: string, sha: string) => Uint8Array | undefined;
  /**
   * Remembers `bytes`, whose SHA-256 `sha` the caller computed over exactly these bytes.
   * Packs larger than a quarter of the bound are not kept; the least recently used are
   * forgotten to stay within it.
   */
  readonly remember: (storeIdentity: string, sha: string, bytes: Uint8Array) => void;
}

/** A {@link RecentPacks} holding at most `maxBytes` of packs. */
export const makeRecentPacks = (maxBytes: number): RecentPacks => {
  const packs = makeRecentMap<Uint8Array>(maxBytes, (bytes) => bytes.length);
  const keyOf = (storeIdentity: string, sha: string) => `${sha} ${storeIdentity}`;
  return {
    get: (storeIdentity, sha) => packs.get(keyOf(storeIdentity, sha)),
    remember: (storeIdentity, sha, bytes) => {
      if (bytes.length <= maxBytes / 4) packs.set(keyOf(storeIdentity, sha), bytes);
    },
  };
};

/** The process-wide memory (32 MiB), shared like the publish turns of contention.ts. */
export const recentPacks: RecentPacks = makeRecentPacks(32 * 1024 * 1024);
