// Summaries of repeated measurements.

/** The median of a non-empty list of numbers (mean of the middle two for even lengths). */
export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** The q-quantile (0..1) by nearest rank. */
export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
};

/** `{ median, min, max, n, samples }` of the measured values. */
export const summarize = (samples) => ({
  median: median(samples),
  min: Math.min(...samples),
  max: Math.max(...samples),
  n: samples.length,
  samples,
});

/** A single value presented as a summary (for measurements that are one number, e.g. a count). */
export const single = (value) => ({
  median: value,
  min: value,
  max: value,
  n: 1,
  samples: [value],
});

/** Milliseconds since an arbitrary origin, high resolution. */
export const now = () => performance.now();

/**
 * Runs `fn` `warmup` times unmeasured, then `runs` times measured; `fn` returns either
 * nothing (its wall time is the sample) or a number (that number is the sample).
 */
export const repeat = async (fn, { warmup = 1, runs = 5 } = {}) => {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const start = now();
    const value = await fn(i);
    samples.push(typeof value === "number" ? value : now() - start);
  }
  return summarize(samples);
};
