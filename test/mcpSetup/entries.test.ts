/**
 * The entry editors of `quire mcp install`: only quire's entry changes (plus the one
 * comma it needs), every other byte of the file stays, removing our entry gives the
 * original file back byte for byte, and a file that does not parse is refused.
 */
import { Either } from "effect";
import { type ParseError, parse } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { readJsonEntry, removeJsonEntry, setJsonEntry } from "../../src/app/mcpSetup/jsonEntry.js";
import { readTomlEntry, removeTomlEntry, setTomlEntry } from "../../src/app/mcpSetup/tomlEntry.js";

const ok = <A, E>(either: Either.Either<A, E>): A => {
  if (Either.isLeft(either)) throw new Error(`expected success: ${JSON.stringify(either.left)}`);
  return either.right;
};
const refusal = <A, E extends { message: string }>(either: Either.Either<A, E>): string => {
  if (Either.isRight(either)) throw new Error("expected a refusal");
  return either.left.message;
};

const entry = { command: "/opt/quire/bin/quire.js", args: ["serve", "--store=file:/srv/notes"] };
const path = ["mcpServers", "quire"];

/** The text with the inserted lines taken out: every remaining line must be an original line. */
const withoutLinesOf = (after: string, before: string): string => {
  const original = new Set(before.split("\n"));
  return after
    .split("\n")
    .map((line) => (original.has(line) ? line : line.replace(/,(\s*(\/\/.*)?)$/, "$1")))
    .filter((line) => original.has(line))
    .join("\n");
};

const jsonFixtures: Record<string, string> = {
  "comments, trailing commas and another server": `{
  // my settings
  "theme": "dark", /* inline */
  "mcpServers": {
    // github, do not touch
    "github": { "command": "npx", "args": ["-y", "gh"] }, // trailing
  },
  "zeta": [1, 2, 3],
}
`,
  "no trailing comma, comment after the last server": `{
  "mcpServers": {
    "github": {
      "command": "npx"
    } // the only one
  },
  "other": true
}
`,
  "tabs and CRLF": '{\r\n\t"mcpServers": {\r\n\t\t"a": {"command": "x"}\r\n\t}\r\n}\r\n',
  "four spaces, no mcpServers yet": `{
    "selectedAuthType": "gemini-api-key",
    "ui": { "theme": "Dracula" }
}`,
  "empty servers object": `{ "mcpServers": {} }\n`,
  "compact one-liner": `{"mcpServers":{"a":{"command":"x"}},"b":1}`,
  "empty object": "{}",
};

describe("JSON with comments", () => {
  it.each(Object.entries(jsonFixtures))(
    "%s: set, read, then remove gives the file back",
    (_, before) => {
      const after = ok(setJsonEntry(before, path, entry));
      expect(ok(readJsonEntry(after, path))).toEqual(entry);
      // Every other entry reads the same.
      for (const key of ["theme", "zeta", "other", "ui", "b", "selectedAuthType"])
        expect(ok(readJsonEntry(after, [key]))).toEqual(ok(readJsonEntry(before, [key])));
      expect(ok(readJsonEntry(after, ["mcpServers", "github"]))).toEqual(
        ok(readJsonEntry(before, ["mcpServers", "github"])),
      );
      if (!before.includes('"mcpServers"')) return;
      // Only lines were added (and at most one comma): every original line is still there.
      if (before.includes("\n") && !before.includes("{}"))
        expect(withoutLinesOf(after, before)).toBe(withoutLinesOf(before, before));
      expect(ok(removeJsonEntry(after, path))).toBe(before);
    },
  );

  it("keeps comments and other servers byte for byte", () => {
    const before = jsonFixtures["comments, trailing commas and another server"] ?? "";
    const after = ok(setJsonEntry(before, path, entry));
    for (const kept of [
      "  // my settings\n",
      '  "theme": "dark", /* inline */\n',
      "    // github, do not touch\n",
      '    "github": { "command": "npx", "args": ["-y", "gh"] }, // trailing\n',
      '  "zeta": [1, 2, 3],\n',
    ])
      expect(after).toContain(kept);
  });

  it("replaces an existing quire entry in place, leaving its neighbours alone", () => {
    const before = `{
  "mcpServers": {
    "quire": { "command": "npx", "args": ["-y", "quire", "serve"] }, // the broken one
    "other": { "command": "y" }
  }
}
`;
    const after = ok(setJsonEntry(before, path, entry));
    expect(ok(readJsonEntry(after, path))).toEqual(entry);
    expect(after.startsWith('{\n  "mcpServers": {\n    "quire": {\n')).toBe(true);
    expect(after.endsWith(`}, // the broken one\n    "other": { "command": "y" }\n  }\n}\n`)).toBe(
      true,
    );
    // Setting it again changes nothing.
    expect(ok(setJsonEntry(after, path, entry))).toBe(after);
  });

  it("creates the file's content from nothing", () => {
    const created = ok(setJsonEntry("", ["servers", "quire"], entry));
    expect(JSON.parse(created)).toEqual({ servers: { quire: entry } });
    expect(created.endsWith("\n")).toBe(true);
  });

  it("removing an entry that is not there changes nothing", () => {
    for (const before of Object.values(jsonFixtures))
      expect(ok(removeJsonEntry(before, path))).toBe(before);
  });

  // A hand-written file may put the comma on the next line (comma-first style) or a
  // comment between a member and its comma: uninstall left a comma with no member
  // (`{\n  , "b": 1\n}`, a file the client can no longer read) and said "removed", or
  // dropped the comment before our entry.
  it.each([
    [
      "the comma first on the next line",
      '{"mcpServers": {\n  "quire": {"command": "q"}\n  , "b": 1\n}}',
    ],
    [
      "a comment before the comma",
      '{"mcpServers": {\n  "quire": {"command": "q"} /* y */ ,\n  "b": 1\n}}',
    ],
    [
      "a comment after the comma before it",
      '{"mcpServers": {"a": 0, /* x */ "quire": {"command": "q"}}}',
    ],
    [
      "a comment line between",
      '{"mcpServers": {\n  "a": 0\n  // keep\n  , "quire": {"command": "q"}\n}}',
    ],
  ])(
    "removes our entry and one comma, keeping the rest valid and every comment: %s",
    (_, before) => {
      const after = ok(removeJsonEntry(before, path));
      const errors: Array<ParseError> = [];
      const value: unknown = parse(after, errors, { allowTrailingComma: true });
      expect(errors).toEqual([]);
      const expected: unknown = parse(before, [], { allowTrailingComma: true });
      if (typeof expected === "object" && expected !== null && "mcpServers" in expected) {
        const servers = expected.mcpServers;
        if (typeof servers === "object" && servers !== null)
          Reflect.deleteProperty(servers, "quire");
      }
      expect(value).toEqual(expected);
      for (const comment of before.match(/\/\*[^*]*\*\/|\/\/.*/g) ?? [])
        expect(after).toContain(comment);
    },
  );

  it.each([
    ["a syntax error", '{ "mcpServers": { "a": 1 '],
    ["a top-level array", "[1, 2]"],
    ["a string", '"text"'],
    ["mcpServers not an object", '{ "mcpServers": [] }'],
  ])("refuses %s", (_, before) => {
    expect(refusal(setJsonEntry(before, path, entry))).toMatch(
      /not valid JSON|not a JSON object|is not an object/,
    );
    expect(Either.isLeft(removeJsonEntry(before, path)) || before.includes("[]")).toBe(true);
  });

  it.each([
    [
      "our entry",
      '{"mcpServers":{"quire":{"command":"a"},"x":{},"quire":{"command":"b"}}}',
      "mcpServers.quire",
    ],
    ["its parent", '{"mcpServers":{"quire":{"command":"a"}},"mcpServers":{"x":{}}}', "mcpServers"],
  ])(
    "refuses %s written twice, for a person to choose, and changes nothing",
    (_, before, named) => {
      for (const answer of [setJsonEntry(before, path, entry), removeJsonEntry(before, path)])
        expect(refusal(answer)).toBe(
          `"${named}" is written 2 times; remove all but one by hand, then run this again`,
        );
      expect(refusal(readJsonEntry(before, path))).toContain("written 2 times");
    },
  );

  it("names the place of a syntax error", () => {
    expect(refusal(setJsonEntry('{\n  "a": 1\n  "b": 2\n}', path, entry))).toMatch(/line 3/);
  });

  it("refuses a file nested too deep to parse without exhausting the stack, naming where", () => {
    const deep = `{"deep": ${"[".repeat(5000)}${"]".repeat(5000)}}`;
    for (const edited of [
      readJsonEntry(deep, path),
      setJsonEntry(deep, path, entry),
      removeJsonEntry(deep, path),
    ])
      expect(refusal(edited)).toBe(
        "nested more than 256 levels deep at line 1, column 265, which quire does not edit; edit the file by hand",
      );
    // Up to the limit it is an ordinary file; brackets in strings and comments do not count.
    const atLimit = `{"deep": ${"[".repeat(255)}${"]".repeat(255)}, "s": "${"[".repeat(300)}" /* ${"{".repeat(300)} */}`;
    expect(ok(readJsonEntry(ok(setJsonEntry(atLimit, path, entry)), path))).toEqual(entry);
  });
});

const tomlPath = ["mcp_servers", "quire"];
const tomlEntry = { command: "/opt/quire/bin/quire.js", args: ["serve", "--writable=notes"] };

const tomlFixtures: Record<string, string> = {
  "settings, comments and another server": `# Codex settings
model = "o4" # inline comment

[mcp_servers.github]
command = "npx"
args = ["-y", "gh"]

# trailing comment about profiles
[profiles.fast]
model = "mini"
`,
  "a multi-line string that looks like our header": `notes = """
[mcp_servers.quire]
command = "not a table"
"""
[mcp_servers.other]
command = "x"
`,
  "a comment holding triple quotes": `# use """ in strings
model = "o4" # a comment

[mcp_servers.other]
command = "x"
`,
  "a string holding # before a multi-line string": `a = ["#", """
[mcp_servers.quire]
command = "not a table"
"""]
b = 'it is # not a comment'
c = "\\\\" # an escaped backslash ends the string before this comment """
`,
  "no newline at the end": `model = "o4"`,
  "empty file": "",
};

describe("TOML", () => {
  it.each(Object.entries(tomlFixtures))(
    "%s: set, read, then remove gives the file back",
    (_, before) => {
      const after = ok(setTomlEntry(before, tomlPath, tomlEntry));
      expect(ok(readTomlEntry(after, tomlPath))).toEqual(tomlEntry);
      expect(
        after.startsWith(before.endsWith("\n") || before === "" ? before : `${before}\n`),
      ).toBe(true);
      const parsedBefore = parseToml(before);
      const parsedAfter = parseToml(after) as Record<string, unknown>;
      const servers = { ...(parsedAfter["mcp_servers"] as Record<string, unknown>) };
      delete servers["quire"];
      expect({ ...parsedAfter, mcp_servers: servers }).toEqual({
        ...parsedBefore,
        mcp_servers: parsedBefore["mcp_servers"] ?? {},
      });
      const removed = ok(removeTomlEntry(after, tomlPath));
      expect(removed).toBe(before.endsWith("\n") || before === "" ? before : `${before}\n`);
    },
  );

  it("replaces our table and its sub-tables in place, keeping the comments around it", () => {
    const before = `model = "o4"

[mcp_servers.quire]
command = "npx"
args = ["-y", "quire", "serve"]

[mcp_servers.quire.env]
LOG_LEVEL = "debug"

# the next one is mine
[mcp_servers.other]
command = "x"
`;
    const after = ok(setTomlEntry(before, tomlPath, tomlEntry));
    expect(after).toBe(`model = "o4"

[mcp_servers.quire]
command = "/opt/quire/bin/quire.js"
args = ["serve", "--writable=notes"]

# the next one is mine
[mcp_servers.other]
command = "x"
`);
    expect(ok(setTomlEntry(after, tomlPath, tomlEntry))).toBe(after);
    expect(ok(removeTomlEntry(after, tomlPath))).toBe(`model = "o4"

# the next one is mine
[mcp_servers.other]
command = "x"
`);
  });

  it("replaces or removes our table after a comment holding triple quotes", () => {
    const before = `# use """ in strings
[mcp_servers.quire]
command = "old" # was ''' here
args = []

[profiles.fast]
model = "mini"
`;
    const after = ok(setTomlEntry(before, tomlPath, tomlEntry));
    expect(after).toBe(`# use """ in strings
[mcp_servers.quire]
command = "/opt/quire/bin/quire.js"
args = ["serve", "--writable=notes"]

[profiles.fast]
model = "mini"
`);
    expect(ok(removeTomlEntry(before, tomlPath))).toBe(`# use """ in strings

[profiles.fast]
model = "mini"
`);
  });

  it("escapes what TOML needs escaped", () => {
    const odd = {
      command: '/opt/my "quire"\\bin/quire.js',
      args: ["serve", "--writable=a\u007fb"],
    };
    const after = ok(setTomlEntry("", tomlPath, odd));
    expect(parseToml(after)).toEqual({ mcp_servers: { quire: odd } });
  });

  it.each([
    ["an inline table", 'mcp_servers = { quire = { command = "x" } }\n'],
    ["dotted keys", '[mcp_servers]\nquire.command = "x"\n'],
  ])("refuses an entry written as %s (rewriting it would touch other lines)", (_, before) => {
    expect(refusal(setTomlEntry(before, tomlPath, tomlEntry))).toMatch(/edit the file by hand/);
    expect(refusal(removeTomlEntry(before, tomlPath))).toMatch(/edit the file by hand/);
  });

  it("refuses a parent that is an inline table", () => {
    expect(
      refusal(setTomlEntry('mcp_servers = { other = { command = "x" } }\n', tomlPath, tomlEntry)),
    ).toMatch(/edit the file by hand/);
  });

  it("refuses a file that is not TOML", () => {
    expect(refusal(setTomlEntry("[mcp_servers\ncommand = 1\n", tomlPath, tomlEntry))).toMatch(
      /not valid TOML/,
    );
    expect(refusal(readTomlEntry('a = "unterminated\n', tomlPath))).toMatch(/not valid TOML/);
  });
});
