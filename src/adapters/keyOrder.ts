/** The key order of `ObjectStoreService.list`, shared by the store adapters that sort themselves. */

const encoder = new TextEncoder();

/**
 * Compares two keys by their UTF-8 bytes — the order S3 lists keys in, which differs
 * from JavaScript's UTF-16 order for characters beyond U+FFFF. Never throws.
 */
export const compareKeys = (a: string, b: string): number => {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
};
