import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { minSecretLength, redact, redactCredentials } from "../../src/domain/redact.js";

const sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const sha1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709";
const uuid = "01890a5d-ac96-774b-bcce-b302099a8057";
const awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

describe("redact", () => {
  it("scrubs 40- and 64-hex ids, but not shorter hex such as a diagnosticId", () => {
    expect(redact(`pack ${sha256} and commit ${sha1}.`)).toBe("pack <hex> and commit <hex>.");
    expect(redact(`sha256:${sha256.toUpperCase()}`)).toBe("sha256:<hex>");
    expect(redact("diagnosticId 0011223344556677")).toBe("diagnosticId 0011223344556677");
    expect(redact(`x${sha1.slice(1)}`)).toBe(`x${sha1.slice(1)}`); // 39 hex
  });

  it("scrubs AWS access key ids, even inside a word", () => {
    expect(redact("key AKIAIOSFODNN7EXAMPLE refused")).toBe("key <aws-key-id> refused");
    expect(redact("id=ASIAY34FZKBOKMUTVV7A;")).toBe("id=<aws-key-id>;");
    expect(redact("xAKIAIOSFODNN7EXAMPLEx")).toBe("x<aws-key-id>x");
    expect(redact("AKIA is a prefix")).toBe("AKIA is a prefix");
  });

  it("scrubs URL user-info", () => {
    expect(redact("GET https://user:p%40ss@minio.local:9000/bucket failed")).toBe(
      "GET https://***@minio.local:9000/bucket failed",
    );
    expect(redact("s3://AKID@host")).toBe("s3://***@host");
    expect(redact("https://host/path@v2")).toBe("https://host/path@v2");
    expect(redact("mail me@example.com")).toBe("mail me@example.com");
  });

  it("scrubs object-store keys with their prefix", () => {
    expect(redact(`missing prod/notes/packs/increments/5-${uuid}.pack, re-reading`)).toBe(
      "missing <object-key>, re-reading",
    );
    expect(redact(`packs/checkpoints/1024-${uuid}.pack`)).toBe("<object-key>");
    expect(redact(`deleting probe/${uuid}`)).toBe("deleting <object-key>");
    expect(redact("If-Match lost on s3://bucket/team/current.")).toBe(
      "If-Match lost on <object-key>.",
    );
    expect(redact("the current manifest")).toBe("the current manifest");
    expect(redact("the currently running (a/currentx)")).toBe("the currently running (a/currentx)");
  });

  it("scrubs private paths and exact secret values, longest first", () => {
    const options = {
      privatePaths: ["/home/u/.cache/quire", "/home/u/.cache/quire/state/ab"],
      secretValues: [awsSecret],
    };
    expect(redact("lock /home/u/.cache/quire/state/ab/lock held", options)).toBe(
      "lock <private>/lock held",
    );
    expect(redact("cannot write /home/u/.cache/quire/x", options)).toBe("cannot write <private>/x");
    expect(redact(`signature with ${awsSecret}!`, options)).toBe("signature with <secret>!");
  });

  it("ignores secret values too short to be credentials and paths without a separator", () => {
    expect(redact("a b c", { secretValues: ["a", "b c"], privatePaths: ["a", ""] })).toBe("a b c");
  });

  it("leaves ordinary text alone", () => {
    const text = "Resolve the conflict blocks before notes_commit. See notes/today.md lines 12-18.";
    expect(redact(text)).toBe(text);
  });

  const secretArb = fc.string({ minLength: minSecretLength, maxLength: 48, unit: "grapheme" });
  const noise = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.constantFrom(
      sha1,
      sha256,
      "AKIAIOSFODNN7EXAMPLE",
      `probe/${uuid}`,
      "s3://u:p@h/x",
      "a/current",
      "<secret>",
    ),
  );
  const textArb = fc.array(noise, { maxLength: 6 }).map((parts) => parts.join(" "));

  it("never lets a secret survive, even embedded", () => {
    fc.assert(
      fc.property(
        textArb,
        secretArb,
        textArb,
        fc.string({ maxLength: 3 }),
        (before, secret, after, glue) => {
          const text = `${before}${glue}${secret}${glue}${after}${secret}`;
          expect(redact(text, { secretValues: [secret] })).not.toContain(secret);
        },
      ),
    );
  });

  it("never lets a private path survive", () => {
    const pathArb = fc
      .array(fc.stringMatching(/^[a-z0-9._-]{1,8}$/), { minLength: 1, maxLength: 5 })
      .map((segments) => `/${segments.join("/")}`);
    fc.assert(
      fc.property(textArb, pathArb, textArb, (before, path, after) => {
        expect(redact(`${before}${path}${after}`, { privatePaths: [path] })).not.toContain(path);
      }),
    );
  });

  it("never lets a hex id or access key id survive", () => {
    const hex = fc.stringMatching(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/);
    const keyId = fc.stringMatching(/^(AKIA|ASIA)[A-Z0-9]{16}$/);
    fc.assert(
      fc.property(textArb, fc.oneof(hex, keyId), textArb, (before, id, after) => {
        expect(redact(`${before}${id}${after}`)).not.toContain(id);
      }),
    );
  });

  it("is idempotent", () => {
    fc.assert(
      fc.property(
        textArb,
        fc.array(secretArb, { maxLength: 3 }),
        fc.constantFrom([], ["/p/q", "/home/u/.cache"]),
        (text, secretValues, privatePaths) => {
          const options = { secretValues, privatePaths };
          const once = redact(text, options);
          expect(redact(once, options)).toBe(once);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 80 }), (text) => {
        const once = redact(text);
        expect(redact(once)).toBe(once);
      }),
    );
  });

  // The patterns as they were before each got its run-start guard: simple, but quadratic
  // on a long run of key characters. The guarded ones must replace exactly the same text.
  const keyChar = "[^\\s\"'`()<>\\[\\]{},;]";
  const keyEnd = "(?=$|[\\s\"'`()<>\\[\\]{},;.:!?])";
  const unguarded: ReadonlyArray<readonly [RegExp, string]> = [
    [/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/giu, "$1***@"],
    [new RegExp(`${keyChar}*packs/(?:checkpoints|increments)/${keyChar}+`, "gu"), "<object-key>"],
    [new RegExp(`${keyChar}*probe/[0-9a-fA-F-]{36}${keyChar}*`, "gu"), "<object-key>"],
    [new RegExp(`${keyChar}*/current${keyEnd}`, "gu"), "<object-key>"],
    [/(?:AKIA|ASIA)[A-Z0-9]{16}/gu, "<aws-key-id>"],
    [/[0-9a-fA-F]{40,}/gu, "<hex>"],
    [/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/gu, "<id>"],
  ];
  const unguardedRedact = (text: string): string => {
    let current = text;
    for (let pass = 0; pass < 8; pass++) {
      let next = current;
      for (const [pattern, replacement] of unguarded) next = next.replace(pattern, replacement);
      if (next === current) return current;
      current = next;
    }
    return current;
  };

  it("replaces exactly what the unguarded patterns replace", () => {
    const piece = fc.constantFrom(
      "a",
      "Z",
      "1",
      "+",
      ".",
      "-",
      "/",
      ":",
      "://",
      "@",
      " ",
      ",",
      "(",
      "packs/",
      "checkpoints/",
      "increments/",
      "probe/",
      uuid,
      "/current",
      "current",
      "user:pw@",
      "s3",
      "AKIA",
      "IOSFODNN7EXAMPLE",
      sha1.slice(0, 20),
      "é",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const text = pieces.join("");
        expect(redact(text)).toBe(unguardedRedact(text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("redactCredentials", () => {
  it("scrubs URL user-info, AWS access key ids, secret values and secret parameters", () => {
    expect(
      redactCredentials(
        `/opt/quire serve --endpoint=http://AKIAIOSFODNN7EXAMPLE:${awsSecret}@host:9000 --store=s3://bucket`,
      ),
    ).toBe("/opt/quire serve --endpoint=http://***@host:9000 --store=s3://bucket");
    expect(redactCredentials("key AKIAIOSFODNN7EXAMPLE")).toBe("key <aws-key-id>");
    expect(redactCredentials(`x --opt=${awsSecret}`, [awsSecret])).toBe("x --opt=<secret>");
    expect(
      redactCredentials(
        "http://h/mcp?token=s3cr3t&x=1 --api-key=abc --password=pw https://h/o?X-Amz-Signature=f00&a=b",
      ),
    ).toBe(
      "http://h/mcp?token=<secret>&x=1 --api-key=<secret> --password=<secret> https://h/o?X-Amz-Signature=<secret>&a=b",
    );
  });

  it("leaves paths, ids and hex alone, unlike redact", () => {
    const line = `/home/me/current/bin/quire.js serve --store=file:/srv/${sha1} --author=${uuid}`;
    expect(redactCredentials(line)).toBe(line);
  });

  it("is idempotent", () => {
    const once = redactCredentials(
      `http://u:p@h/?token=abc --secret=AKIAIOSFODNN7EXAMPLE ${awsSecret}`,
      [awsSecret],
    );
    expect(redactCredentials(once, [awsSecret])).toBe(once);
    expect(once).not.toMatch(/u:p|abc|AKIA|wJalr/);
  });
});

describe("redactCredentials in configuration text", () => {
  // Each case: the text, what it becomes. The values that must go all contain "SEKRIT".
  const scrubbed: ReadonlyArray<readonly [string, string, string]> = [
    [
      "JSON member, pretty",
      `    "GITHUB_TOKEN": "ghp_SEKRIT1234",`,
      `    "GITHUB_TOKEN": "<secret>",`,
    ],
    [
      "a whole JSON file on one line",
      `{"mcpServers":{"github":{"command":"npx","env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"ghp_SEKRIT1234"}}}}`,
      `{"mcpServers":{"github":{"command":"npx","env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"<secret>"}}}}`,
    ],
    [
      "JSON value with escaped quotes and backslashes",
      String.raw`{"env":{"API_KEY":"a\"SEKRIT\\\" x\"y","AWS_REGION":"eu"}}`,
      `{"env":{"API_KEY":"<secret>","AWS_REGION":"eu"}}`,
    ],
    [
      "JSON names of every kind",
      `{"AWS_SECRET_ACCESS_KEY":"SEKRIT1","db_password":"SEKRIT2","Passwd":"SEKRIT3","apikey":"SEKRIT4","x-api-key":"SEKRIT5","privateKey":"SEKRIT6","CREDENTIALS":"SEKRIT7","Authorization":"Bearer SEKRIT8","auth":"SEKRIT9","bearer_token":"SEKRIT10","SESSION":"SEKRIT11","OPENAI_KEY":"SEKRIT12"}`,
      `{"AWS_SECRET_ACCESS_KEY":"<secret>","db_password":"<secret>","Passwd":"<secret>","apikey":"<secret>","x-api-key":"<secret>","privateKey":"<secret>","CREDENTIALS":"<secret>","Authorization":"<secret>","auth":"<secret>","bearer_token":"<secret>","SESSION":"<secret>","OPENAI_KEY":"<secret>"}`,
    ],
    ["TOML basic string", `GITHUB_TOKEN = "ghp_SEKRIT"`, `GITHUB_TOKEN = "<secret>"`],
    ["TOML literal string", `password = 'SEKRIT\\x'`, `password = '<secret>'`],
    [
      "TOML inline table",
      `env = { API_KEY = "SEKRIT1", AWS_REGION = "eu", "x.secret" = 'SEKRIT2' }`,
      `env = { API_KEY = "<secret>", AWS_REGION = "eu", "x.secret" = '<secret>' }`,
    ],
    [
      "TOML multi-line string",
      `token = """\nSEKRIT\n"""\nmodel = "o4"`,
      `token = """<secret>"""\nmodel = "o4"`,
    ],
    [
      "a secret flag and its value, elements of a JSON array",
      `"args":["serve","--token","tok_SEKRIT","--store","file:/srv/n"]`,
      `"args":["serve","--token","<secret>","--store","file:/srv/n"]`,
    ],
    [
      "a secret flag and its value, on lines of their own",
      `"args": [\n  "--api-key",\n  "SEKRIT"\n]`,
      `"args": [\n  "--api-key",\n  "<secret>"\n]`,
    ],
    [
      "a secret flag and its value, TOML array",
      `args = ['--password', 'SEKRIT', "--auth-token", "SEKRIT2"]`,
      `args = ['--password', '<secret>', "--auth-token", "<secret>"]`,
    ],
    [
      "a secret flag and its value, command line",
      `/opt/quire serve --token tok_SEKRIT --store file:/srv/n -X --Client-Secret SEKRIT2`,
      `/opt/quire serve --token <secret> --store file:/srv/n -X --Client-Secret <secret>`,
    ],
    [
      "--flag=value as a JSON element, to its closing quote",
      `["--token=SEKRIT","--password=correct SEKRIT \\" horse","--store=file:/srv/n"]`,
      `["--token=<secret>","--password=<secret>","--store=file:/srv/n"]`,
    ],
    [
      "--flag=value in a TOML literal string and a command line",
      `['--api-key=SEKRIT x'] quire --secret=SEKRIT2 --x=1`,
      `['--api-key=<secret>'] quire --secret=<secret> --x=1`,
    ],
    [
      "a query parameter inside a JSON string keeps the closing quote",
      `{"url":"http://h/mcp?x=1&token=SEKRIT","timeout":3}`,
      `{"url":"http://h/mcp?x=1&token=<secret>","timeout":3}`,
    ],
  ];

  it.each(scrubbed)("scrubs %s", (_, text, expected) => {
    expect(redactCredentials(text)).toBe(expected);
    expect(redactCredentials(expected)).toBe(expected);
  });

  // Values that are not credentials stay as written.
  const kept: ReadonlyArray<readonly [string, string]> = [
    [
      "a command and its arguments",
      `{"command":"npx","args":["-y","@modelcontextprotocol/server-github"]}`,
    ],
    [
      "quire's own options",
      `/opt/quire serve --store file:/srv/n --author me --no-share --writable notes`,
    ],
    [
      "quire's options as one element each",
      `["serve","--store=file:/srv/n","--author=me","--workspace-root","/w"]`,
    ],
    [
      "a JSON entry",
      `{"type":"stdio","command":"/opt/quire","cwd":"/w","timeout":30,"author":"me","AUTHOR_NAME":"me"}`,
    ],
    [
      "TOML settings",
      `model = "o4-mini"\nkeyboard = "dvorak"\nmonkey = 'x'\n[mcp_servers.github]\ncommand = "npx"`,
    ],
    [
      "a secret-named member that is not a string",
      `{"max_tokens": 4096, "auth": {"type": "none"}, "session": null}`,
    ],
    [
      "a secret flag followed by another option",
      `quire --no-auth --store file:/srv/n ["--session","--store","s3://b"]`,
    ],
    ["a store URL without user-info", `--store s3://bucket/prefix --endpoint=http://minio:9000`],
  ];

  it.each(kept)("leaves %s alone", (_, text) => {
    expect(redactCredentials(text)).toBe(text);
  });

  const word = fc.constantFrom(
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "api_key",
    "apikey",
    "api-key",
    "access.key",
    "private_key",
    "credential",
    "auth",
    "authorization",
    "bearer",
    "session",
    "key",
  );
  const part = fc.constantFrom("", "github", "x", "aws", "client", "id", "value");
  const separator = fc.constantFrom("_", "-", ".", "");
  // A name that says its value is a credential: the word among other parts, any
  // separator, any case.
  const secretName = fc
    .tuple(part, separator, word, separator, part, fc.boolean())
    .map(([before, sep1, w, sep2, after, upper]) => {
      const name = `${before}${before === "" ? "" : sep1 === "" ? "_" : sep1}${w}${after === "" ? "" : sep2 === "" ? "_" : sep2}${after}`;
      return upper ? name.toUpperCase() : name;
    });
  // Values written alike in JSON, TOML literal strings and argv; not starting with `-`,
  // which after an option would make the option a switch.
  const secretValue = fc.stringMatching(/^[A-Za-z0-9_+/=.~@:][A-Za-z0-9_+/=.~@:-]{7,39}$/);
  const forms: ReadonlyArray<(name: string, value: string) => string> = [
    (name, value) => `{"${name}": "${value}"}`,
    (name, value) => `{"a":{"b":"c","${name}":"${value}","d":1}}`,
    (name, value) => `{"${name}":"x\\"${value}\\"y"}`,
    (name, value) => `${name} = "${value}"`,
    (name, value) => `${name} = '${value}'`,
    (name, value) => `env = { ${name} = "${value}", other = "x" }`,
    (name, value) => `"${name}" = '${value}'`,
    (name, value) => `["serve", "--${name}", "${value}", "--store", "file:/p"]`,
    (name, value) => `['-${name}',\n  '${value}']`,
    (name, value) => `/opt/quire serve --${name} ${value} --store file:/p`,
    (name, value) => `/opt/quire serve --${name}=${value}`,
    (name, value) => `["--${name}=${value}"]`,
    (name, value) => `http://h/mcp?a=b&${name}=${value}#f`,
  ];

  it("never lets the value of a credential-named setting survive, in any of the forms", () => {
    fc.assert(
      fc.property(
        secretName,
        secretValue,
        fc.integer({ min: 0, max: forms.length - 1 }),
        fc.constantFrom("", "- ", "+ ", "  "),
        (name, value, form, prefix) => {
          const text = `${prefix}${forms[form]?.(name, value) ?? ""}`;
          fc.pre(!text.replace(value, "").includes(value) && !name.includes(value));
          const once = redactCredentials(text);
          expect(once).not.toContain(value);
          expect(once).toContain(name);
          expect(redactCredentials(once)).toBe(once);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("is idempotent on any text", () => {
    const piece = fc.constantFrom(
      '"',
      "'",
      "\\",
      "=",
      ":",
      ",",
      " ",
      "\n",
      "{",
      "[",
      "--",
      "-",
      "token",
      "auth",
      "or",
      "key",
      "x",
      '"""',
      "?",
      "&",
      "://",
      "u:p@",
      "<secret>",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const once = redactCredentials(pieces.join(""));
        expect(redactCredentials(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });

  it("stays fast on long runs of name characters and quotes", () => {
    const started = Date.now();
    for (const text of [
      `"${"token".repeat(20000)}`,
      `${"--token ".repeat(20000)}`,
      `${'"a":"b",'.repeat(20000)}`,
      `${"x".repeat(100000)}=`,
      `"${"\\\\".repeat(50000)}`,
    ])
      redactCredentials(text);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
