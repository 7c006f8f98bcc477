/**
 * Generated tools/call requests for the MCP fuzz test, as the exact JSON text of their
 * `params` (so repeated keys, `__proto__` keys and nesting millions deep are possible),
 * each with what the strict decode must make of it when it is structurally wrong.
 *
 * Paths are built around a {@link FuzzLayout}: the workspace root, a home inside it,
 * symlinks inside it pointing outside, a regular file, a dangling link, and places
 * outside the root (a sentinel tree, the root's parent, system directories).
 */
import fc from "fast-check";

/** Where the generated paths point. */
export interface FuzzLayout {
  /** The workspace root (`--workspace-root`), as given to the server. */
  readonly root: string;
  /** The sentinel tree outside the root, which must never change. */
  readonly outside: string;
  /** The root's parent. */
  readonly parent: string;
  /** A name that exists nowhere; generated absolute paths outside everything use it. */
  readonly probe: string;
}

/** One generated call. */
export interface GeneratedCall {
  /** The JSON text of the request's `params`. */
  readonly params: string;
  /**
   * Set when the call is structurally malformed (not an object, unknown or repeated
   * field, a field of the wrong type, no valid tool name): it must be refused with
   * INVALID_REQUEST/INVALID_ARGUMENT whatever else it holds.
   */
  readonly malformed?: string;
}

const json = (value: string): string => JSON.stringify(value);

/** Characters where Unicode, UTF-16 and file systems disagree. */
const edgeChars = [
  "\u0000",
  "\ud800", // lone high surrogate
  "\udfff", // lone low surrogate
  "\ud83d\ude00", // a pair (😀)
  "\ufeff", // BOM: not White_Space
  "\u0085", // NEL: White_Space, not JS \s
  "\u00a0",
  "\u3000",
  "\u200f", // RTL mark
  "\u202e", // RTL override
  "\u0301", // combining acute
  "é", // NFC
  "e\u0301", // NFD
  "ß",
  "İ",
  "\t",
  "\n",
  " ",
  "\\",
  ":",
  "*",
  '"',
  "%",
];

const edgeChar = fc.constantFrom(...edgeChars);
const plainText = fc.string({ unit: "grapheme", maxLength: 12 });
const binaryText = fc.string({ unit: "binary", maxLength: 12 });

/** Short strings full of edge characters. */
const edgeString = fc
  .array(fc.oneof(edgeChar, plainText, binaryText, fc.constantFrom("a", "notes", ".", "..", "~")), {
    maxLength: 6,
  })
  .map((parts) => parts.join(""));

/** One path segment, plain or hostile. */
const segment = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9]{1,8}$/) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "..",
      ".",
      "",
      "~",
      ".git",
      "CON",
      "nul",
      "a ",
      "a.",
      "é",
      "e\u0301",
      "\u200fx",
      "\u202eabc",
      "\ufeff",
      "x\u0000y",
      "\ud800",
      "A",
      "a",
    ),
  },
  { weight: 1, arbitrary: edgeString.filter((text) => !text.includes("/")) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom("a", "é", "😀"),
        fc.constantFrom(84, 85, 127, 128, 255, 256, 1365, 4096),
      )
      .map(([unit, count]) => unit.repeat(count)),
  },
);

/** A path string: a base (inside, outside, relative, ~ forms) and tricky tails. */
const pathString = (layout: FuzzLayout) => {
  const { root, outside, parent, probe } = layout;
  // Ancestors of working copies are rarer: each such pull walks every copy below it
  // (to refuse a nested copy), which grows with the run.
  const ancestors = fc.constantFrom("", root, `${root}/`, `${root}//`, `${root}/copies`);
  const elsewhere = fc.constantFrom(
    `${root}/copies/c1`,
    `${root}/copies/c2`,
    `${root}/copies/c1/inner`,
    `${root}/home/h1`,
    `${root}/link-out`, // → outside
    `${root}/link-out/new/deeper`,
    `${root}/copies/link-up/new`, // → outside/dir
    `${root}/link-in/c3`, // → copies (inside)
    `${root}/dangling`, // → nowhere
    `${root}/dangling/below`,
    `${root}/file.txt`,
    `${root}/file.txt/below`,
    `${root}/../${probe}`,
    `${root}/copies/../../${probe}`,
    outside,
    `${outside}/dir/new`,
    `${outside}/file.md`,
    parent,
    `${parent}/${probe}`,
    `/etc/${probe}`,
    `/${probe}`,
    "/",
    "~",
    "~/",
    "~/c4",
    "~/../..",
    `~/../../${probe}`,
    "~root/x",
    "~nobody",
    `~${probe}/x`,
    "relative",
    "./x",
    "../x",
    "copies/c1",
    "C:\\x",
  );
  const base = fc.oneof({ weight: 1, arbitrary: ancestors }, { weight: 19, arbitrary: elsewhere });
  return fc
    .tuple(
      base,
      fc.oneof(
        { weight: 2, arbitrary: fc.constant([]) },
        { weight: 3, arbitrary: fc.array(segment, { minLength: 1, maxLength: 3 }) },
      ),
      fc.constantFrom("", "", "", "/", "//", "/.", "/.."),
    )
    .map(([start, segments, tail]) =>
      segments.length === 0 ? `${start}${tail}` : `${start}/${segments.join("/")}${tail}`,
    );
};

/** Paths around the 4,096-byte bound (raw, and after ~/ expansion, which adds the home). */
const longPath = (layout: FuzzLayout) =>
  fc
    .tuple(
      fc.constantFrom(`${layout.root}/copies/`, "~/", "/"),
      // One segment far over 255 bytes, or some 370 segments of 10 bytes.
      fc.constantFrom("a", "é", "😀", "abcdefghij/"),
      fc.integer({ min: 4000, max: 4200 }),
    )
    .map(([start, unit, bytes]) => {
      const unitBytes = new TextEncoder().encode(unit).length;
      return `${start}${unit.repeat(Math.ceil((bytes - start.length) / unitBytes))}`;
    });

/** A commit message string: blank forms, encodings, bounds. */
const messageString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("fuzz", "ok ✓", "\ufeff", "é", "e\u0301", "\u200ftext") },
  {
    weight: 2,
    arbitrary: fc.constantFrom("", " ", "\t\r\n", "\u0085", "\u3000\u00a0", "\u2028", "a\u0000"),
  },
  { weight: 2, arbitrary: edgeString },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom("x", "é", "😀", " "),
        fc.constantFrom(4096, 5461, 8192, 16_383, 16_384, 16_385, 20_000),
      )
      .map(([unit, count]) => unit.repeat(count)),
  },
);

/** JSON text of a value that is never a string: every other JSON type, sizes and depth. */
const nonStringValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e308",
    "0.5",
    "[]",
    "{}",
    '[""]',
    '{"a":"b"}',
  ),
  fc
    .jsonValue({ maxDepth: 3 })
    .filter((value) => typeof value !== "string")
    .map((value) => JSON.stringify(value)),
  fc
    .tuple(fc.constantFrom(10, 1000, 20_000, 60_000), fc.constantFrom(["[", "]"], ['{"a":', "}"]))
    .map(([depth, [open, close]]) => `${open.repeat(depth)}0${close.repeat(depth)}`),
);

/** Field names that are not path or message. */
const unknownKey = fc.oneof(
  fc.constantFrom(
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "hasOwnProperty",
    "Path",
    "path ",
    "MESSAGE",
    "",
    "\ud800",
    "\ufeff",
    "path\u0000",
    "k".repeat(300),
    "k".repeat(20_000),
  ),
  edgeString.filter((key) => key !== "path" && key !== "message"),
);

interface Entry {
  readonly key: string;
  readonly value: string;
}

const objectText = (entries: ReadonlyArray<Entry>): string =>
  `{${entries.map((entry) => `${json(entry.key)}:${entry.value}`).join(",")}}`;

/** The arguments: mostly objects with the documented fields (valid or not), sometimes anything. */
interface ArgumentsText {
  /** The JSON text of `arguments`; `""` for no arguments member at all. */
  readonly text: string;
  readonly malformed?: string;
}

const argumentsFor = (layout: FuzzLayout, tool: string): fc.Arbitrary<ArgumentsText> => {
  const pathValue = fc.oneof(
    {
      weight: 16,
      arbitrary: pathString(layout).map((path) => ({ text: json(path), wrongType: false })),
    },
    {
      weight: 2,
      arbitrary: longPath(layout).map((path) => ({ text: json(path), wrongType: false })),
    },
    { weight: 1, arbitrary: nonStringValue.map((text) => ({ text, wrongType: true })) },
  );
  const messageValue = fc.oneof(
    {
      weight: 16,
      arbitrary: messageString.map((message) => ({ text: json(message), wrongType: false })),
    },
    { weight: 1, arbitrary: nonStringValue.map((text) => ({ text, wrongType: true })) },
  );
  /** `arbitrary` present about `percent` % of the time, else null. */
  const sometimes = <T>(arbitrary: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | null> =>
    fc.oneof(
      { weight: percent, arbitrary },
      { weight: 100 - percent, arbitrary: fc.constant(null) },
    );
  const fields = fc.record({
    path: sometimes(pathValue, 75),
    message: sometimes(messageValue, tool === "notes_commit" ? 92 : 4),
    extra: sometimes(
      fc.array(
        fc.record({ key: unknownKey, value: fc.oneof(nonStringValue, edgeString.map(json)) }),
        { minLength: 1, maxLength: 2 },
      ),
      10,
    ),
    repeat: sometimes(fc.constantFrom("path", "message"), 4),
    order: fc.boolean(),
  });
  const asObject = fields.map(({ path, message, extra, repeat, order }): ArgumentsText => {
    const entries: Array<Entry> = [];
    const why: Array<string> = [];
    if (path !== null) {
      entries.push({ key: "path", value: path.text });
      if (path.wrongType) why.push("path is not a string");
    }
    if (message !== null) {
      entries.push({ key: "message", value: message.text });
      if (message.wrongType) why.push("message is not a string");
      if (tool === "notes_pull") why.push("notes_pull has no message");
    }
    if (extra !== null) {
      for (const item of extra) entries.push(item);
      why.push("an unknown field");
    }
    if (repeat !== null) {
      const first = entries.find((entry) => entry.key === repeat);
      if (first !== undefined) {
        entries.push({ key: repeat, value: first.value });
        why.push(`${repeat} repeated`);
      }
    }
    if (tool === "notes_commit" && message === null) why.push("no message");
    if (order) entries.reverse();
    return {
      text: objectText(entries),
      ...(why.length === 0 ? {} : { malformed: why.join(", ") }),
    };
  });
  const none: ArgumentsText = { text: "" };
  return fc.oneof(
    { weight: 24, arbitrary: asObject },
    {
      weight: 2,
      arbitrary: nonStringValue
        .filter((text) => !text.startsWith("{"))
        .map((text) => ({ text, malformed: "arguments not an object" })),
    },
    {
      weight: 1,
      arbitrary: edgeString.map((text) => ({
        text: json(text),
        malformed: "arguments is a string",
      })),
    },
    { weight: 1, arbitrary: fc.constant(none) }, // no arguments member
  );
};

/** A tool name: mostly the two tools, sometimes anything, sometimes not a string. */
const toolName = fc.oneof(
  { weight: 24, arbitrary: fc.constantFrom("notes_pull", "notes_commit") },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          "",
          "notes_pull ",
          "NOTES_PULL",
          "notes_pull\u0000",
          "notes_delete",
          "n".repeat(20_000),
        ),
        edgeString.filter((name) => name !== "notes_pull" && name !== "notes_commit"),
      )
      .map((name) => ({ text: json(name) })),
  },
  { weight: 1, arbitrary: nonStringValue.map((text) => ({ text })) },
  { weight: 1, arbitrary: fc.constant({ text: "" }) }, // no name member
);

/** Generated tools/call params for `layout`. */
export const generatedCall = (layout: FuzzLayout): fc.Arbitrary<GeneratedCall> =>
  toolName.chain((name) => {
    const tool = typeof name === "string" ? name : undefined;
    const nameText = typeof name === "string" ? json(name) : name.text;
    return argumentsFor(layout, tool ?? "").map((args): GeneratedCall => {
      const members = [
        ...(nameText === "" ? [] : [`"name":${nameText}`]),
        ...(args.text === "" ? [] : [`"arguments":${args.text}`]),
      ];
      const why = [
        ...(tool === undefined ? ["not a known tool"] : []),
        ...(args.malformed === undefined ? [] : [args.malformed]),
      ];
      return {
        params: `{${members.join(",")}}`,
        ...(why.length === 0 ? {} : { malformed: why.join("; ") }),
      };
    });
  });
