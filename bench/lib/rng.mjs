// Deterministic pseudo-random numbers, so every run benchmarks the same inputs.

/** mulberry32: a small, fast 32-bit PRNG. Returns a function yielding floats in [0, 1). */
export const makeRng = (seed) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/** An integer in [0, n). */
export const randInt = (rng, n) => Math.floor(rng() * n);

const WORDS = (
  "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november " +
  "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu note agent " +
  "merge commit pull store manifest pack notebook line file text change review plan todo " +
  "done fix test build run check write read sync remote local base result error retry"
).split(" ");

/** A line of prose-like words of roughly `targetLength` characters (no newline). */
export const words = (rng, targetLength) => {
  let line = "";
  while (line.length < targetLength) {
    line += (line.length === 0 ? "" : " ") + WORDS[randInt(rng, WORDS.length)];
  }
  return line;
};
