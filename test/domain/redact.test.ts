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
