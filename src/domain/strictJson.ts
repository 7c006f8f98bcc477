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
 * Scans already-valid JSON text for an object that repeats a key; returns the key.
 * A small tokenizer: strings are decoded with JSON.parse to compare keys by value.
 */
const findDuplicateKey = (text: string): string | undefined => {
  // One key set per open container; arrays get `undefined`.
  const stack: Array<Set<string> | undefined> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x7b /* { */) {
      stack.push(new Set());
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
      let j = i + 1;
      while (j < text.length) {
        const c = text.charCodeAt(j);
        if (c === 0x5c) j += 2;
        else if (c === 0x22) break;
        else j++;
      }
      if (expectKey) {
        const keys = stack[stack.length - 1];
        const key: unknown = JSON.parse(text.slice(i, j + 1));
        if (keys !== undefined && typeof key === "string") {
          if (keys.has(key)) return key;
          keys.add(key);
        }
        expectKey = false;
      }
      i = j;
    }
  }
  return undefined;
};
