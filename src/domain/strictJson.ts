/**
 * Strict JSON parsing for stored records: standard JSON.parse plus a refusal of
 * duplicate object keys, which JSON.parse would silently resolve to the last one.
 */

/** The outcome of {@link parseStrictJson}. */
export type StrictJsonResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string };

/**
 * Parses `text` as JSON, refusing syntax errors and any object with a repeated key.
 * Linear in the input length.
 */
export const parseStrictJson = (text: string): StrictJsonResult => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problem: `not JSON (${error instanceof Error ? error.message : "parse error"})`,
    };
  }
  const duplicate = findDuplicateKey(text);
  return duplicate === undefined
    ? { ok: true, value }
    : { ok: false, problem: `duplicate key ${JSON.stringify(duplicate)}` };
};

/**
 * The keys seen so far in one object: a short list (most stored objects have a handful
 * of keys, and a Set per object costs more than scanning five), a Set once it grows.
 */
class KeysSeen {
  private list: Array<string> = [];
  private set: Set<string> | undefined;

  /** Adds `key`; `false` if it was already there. */
  add(key: string): boolean {
    if (this.set !== undefined) {
      if (this.set.has(key)) return false;
      this.set.add(key);
      return true;
    }
    if (this.list.includes(key)) return false;
    this.list.push(key);
    if (this.list.length > 16) this.set = new Set(this.list);
    return true;
  }
}

/**
 * Scans already-valid JSON text for an object that repeats a key; returns the key.
 * A small tokenizer: keys are compared by value (decoded with JSON.parse when they hold
 * an escape).
 */
const findDuplicateKey = (text: string): string | undefined => {
  // One key set per open container; arrays get `undefined`.
  const stack: Array<KeysSeen | undefined> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x7b /* { */) {
      stack.push(new KeysSeen());
      expectKey = true;
    } else if (ch === 0x5b /* [ */) {
      stack.push(undefined);
      expectKey = false;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
      expectKey = false;
    } else if (ch === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] !== undefined;
    } else if (ch === 0x22 /* " */) {
      const j = closingQuote(text, i);
      if (expectKey) {
        const keys = stack[stack.length - 1];
        const body = text.slice(i + 1, j);
        // Only a key with an escape needs decoding to be compared by value; most have
        // none, and a JSON.parse per key was most of this scan's time.
        const key: unknown = body.includes("\\") ? JSON.parse(text.slice(i, j + 1)) : body;
        if (keys !== undefined && typeof key === "string") {
          if (!keys.add(key)) return key;
        }
        expectKey = false;
      }
      i = j;
    }
  }
  return undefined;
};

/**
 * The index of the quote that closes the string opened at `open` in valid JSON text: the
 * next quote not escaped, i.e. preceded by an even number of backslashes.
 */
const closingQuote = (text: string, open: number): number => {
  let from = open + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (quote - backslashes - 1 > open && text.charCodeAt(quote - backslashes - 1) === 0x5c)
      backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
};
