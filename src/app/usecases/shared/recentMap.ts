/**
 * A map that keeps only its most recently used entries within a total weight (and, if
 * asked, a count): the one bounded memory behind the memo of decoded private state
 * (workingCopy/privateState.ts, weight 1 per copy), the process's recent packs
 * (commit/recentPacks.ts, weight = bytes, and a count), what the process last wrote per
 * store (commit/lastWritten.ts) and the notebooks a sharing process keeps for other
 * processes' settings (share/share.ts).
 */

/** A map that forgets its least recently used entries beyond its bound. */
export interface RecentMap<V> {
  /** The entry, if still remembered (and marks it most recently used). */
  readonly get: (key: string) => V | undefined;
  /**
   * Remembers `value` (replacing any entry of `key`) as the most recently used, then
   * forgets the least recently used entries until the total weight and the number of
   * entries are within their bounds.
   */
  readonly set: (key: string, value: V) => void;
  readonly delete: (key: string) => void;
  /** How many entries it holds. */
  readonly size: () => number;
}

/**
 * An empty {@link RecentMap} of at most `maxWeight` in total (default weight: 1 each)
 * and at most `maxEntries` entries (default: no bound on the count beyond the weight).
 */
export const makeRecentMap = <V>(
  maxWeight: number,
  weightOf: (value: V) => number = () => 1,
  maxEntries: number = Number.POSITIVE_INFINITY,
): RecentMap<V> => {
  // A Map iterates in insertion order: re-inserting on use keeps the oldest first.
  const entries = new Map<string, V>();
  let total = 0;
  const remove = (key: string) => {
    const value = entries.get(key);
    if (value === undefined) return;
    entries.delete(key);
    total -= weightOf(value);
  };
  return {
    get: (key) => {
      const value = entries.get(key);
      if (value !== undefined) {
        entries.delete(key);
        entries.set(key, value);
      }
      return value;
    },
    set: (key, value) => {
      remove(key);
      entries.set(key, value);
      total += weightOf(value);
      for (const oldest of entries.keys()) {
        if (total <= maxWeight && entries.size <= maxEntries) break;
        remove(oldest);
      }
    },
    delete: remove,
    size: () => entries.size,
  };
};
