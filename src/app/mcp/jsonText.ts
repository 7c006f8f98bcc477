/**
 * Facts about JSON text that `JSON.parse` hides: a key an object repeats (the parse keeps
 * the last value silently), and the top-level members of a message too large to parse.
 * Pure; iterative (a text nested millions deep costs an array, never the call stack).
 */

/** A key that one object of a JSON text repeats. */
export interface DuplicateKey {
  readonly key: string;
  /**
   * The member names leading to the object that repeats it, outermost first; an array
   * element appears as `[]`. Empty for the outermost object.
   */
  readonly path: ReadonlyArray<string>;
}

const quote = 0x22;
const backslash = 0x5c;

/** The index just past the string literal opening at `start`, or -1 if it never closes. */
const endOfString = (text: string, start: number): number => {
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === backslash) i++;
    else if (code === quote) return i + 1;
  }
  return -1;
};

/** The value of the string literal `text[start, end)`, or undefined if it is not valid. */
const stringValue = (text: string, start: number, end: number): string | undefined => {
  const body = text.slice(start + 1, end - 1);
  if (!body.includes("\\")) return body;
  try {
    const value: unknown = JSON.parse(text.slice(start, end));
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
};

type Frame =
  | { readonly kind: "array" }
  | { readonly kind: "object"; readonly keys: Set<string>; expectKey: boolean; key: string };

/**
 * The first repeated key (in text order) of any object in `text`, or undefined when every
 * object's keys are distinct. Keys compare by their decoded value, so `"a"` and
 * `"\u0061"` are the same key. `text` should be valid JSON (`JSON.parse` accepted it);
 * on anything else the answer is unspecified but the scan still ends.
 */
export const findDuplicateKey = (text: string): DuplicateKey | undefined => {
  const stack: Array<Frame> = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === quote) {
      const end = endOfString(text, i);
      if (end === -1) return undefined;
      const top = stack[stack.length - 1];
      if (top?.kind === "object" && top.expectKey) {
        const key = stringValue(text, i, end) ?? text.slice(i + 1, end - 1);
        if (top.keys.has(key)) {
          return {
            key,
            path: stack.slice(0, -1).map((frame) => (frame.kind === "object" ? frame.key : "[]")),
          };
        }
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = end - 1;
    } else if (code === 0x7b /* { */) {
      stack.push({ kind: "object", keys: new Set(), expectKey: true, key: "" });
    } else if (code === 0x5b /* [ */) {
      stack.push({ kind: "array" });
    } else if (code === 0x7d /* } */ || code === 0x5d /* ] */) {
      stack.pop();
    } else if (code === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.kind === "object") top.expectKey = true;
    }
  }
  return undefined;
};

/** What {@link topLevelMembers} found; a member is absent when not found or not a primitive. */
export interface TopLevelMembers {
  readonly id?: string | number;
  readonly method?: string;
}

const numberToken = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/;

/**
 * The `id` (string or number) and `method` (string) members of the outermost object of a
 * JSON text of which only `prefix` is known (a message too large to parse): found only
 * if they lie entirely within the prefix. Tolerates any truncation and any garbage.
 */
export const topLevelMembers = (prefix: string): TopLevelMembers => {
  const found: { id?: string | number; method?: string } = {};
  let depth = 0;
  let pendingKey: string | undefined;
  let expectKey = false;
  let afterColon = false;
  for (let i = 0; i < prefix.length; i++) {
    const code = prefix.charCodeAt(i);
    if (code === quote) {
      const end = endOfString(prefix, i);
      if (end === -1) break;
      const value = stringValue(prefix, i, end);
      if (depth === 1 && expectKey) {
        pendingKey = value;
        expectKey = false;
      } else if (depth === 1 && afterColon && value !== undefined) {
        if (pendingKey === "id") found.id = value;
        if (pendingKey === "method") found.method = value;
      }
      afterColon = false;
      i = end - 1;
    } else if (code === 0x3a /* : */) {
      afterColon = depth === 1;
    } else if (code === 0x7b || code === 0x5b) {
      depth++;
      expectKey = depth === 1 && code === 0x7b;
      afterColon = false;
    } else if (code === 0x7d || code === 0x5d) {
      depth--;
      if (depth < 1) break;
    } else if (code === 0x2c) {
      expectKey = depth === 1;
      afterColon = false;
    } else if (depth === 1 && afterColon && (code === 0x2d || (code >= 0x30 && code <= 0x39))) {
      const token = numberToken.exec(prefix.slice(i, i + 32))?.[0] ?? "";
      // A number running into the end of the prefix may be cut short: not trusted.
      const whole = token !== "" && i + token.length < prefix.length;
      if (pendingKey === "id" && whole) found.id = Number(token);
      afterColon = false;
      i += Math.max(token.length, 1) - 1;
    } else if (code > 0x20) {
      afterColon = false;
    }
  }
  return found;
};

/** Whether `value` is a JSON object (not `null`, not an array). */
export const isJsonObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `null`, `an array`, `a string`… — the JSON type of a value, never the value itself. */
export const jsonTypeOf = (value: unknown): string => {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "object":
      return "an object";
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "a boolean";
    default:
      return typeof value;
  }
};
