import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { Deferred, Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import {
  commitDescription,
  describeCommit,
  describePull,
  instructions,
  pullDescription,
} from "../../src/app/mcp/descriptions.js";
import { domainError } from "../../src/domain/errors.js";
import { noPathSets } from "../../src/domain/pathSets.js";
import { type Harness, fieldsOf, notebookDirectory, startHarness } from "./harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const start = async (...args: Parameters<typeof startHarness>) => {
  harness = await startHarness(...args);
  return harness;
};

type Structured = Record<string, unknown>;

const call = async (h: Harness, name: string, args?: Record<string, unknown>) => {
  const result = await h.client.callTool({
    name,
    ...(args === undefined ? {} : { arguments: args }),
  });
  const content = result.content as Array<{ type: string; text: string }>;
  return {
    isError: result.isError === true,
    content,
    text: content[0]?.text ?? "",
    structured: result.structuredContent as Structured,
  };
};

const callLogs = (h: Harness, diagnosticId: string) =>
  h.logs.filter((line) => line.includes(` diagnosticId=${diagnosticId}`)).map(fieldsOf);

describe("advertised surface", () => {
  it("initialize: name quire, package version, tools capability only, instructions naming the directory", async () => {
    const h = await start();
    expect(h.client.getServerVersion()).toEqual({ name: "quire", version: "9.8.7" });
    expect(h.client.getServerCapabilities()).toEqual({ tools: {} });
    expect(h.client.getInstructions()).toBe(
      `The notebook directory is ${notebookDirectory}. Call notes_pull, edit UTF-8 text files (without U+0000) there, then call notes_commit to publish. Both tools default to that directory; pass path only to address a subdirectory of it.`,
    );
  });

  it("tools/list: exactly notes_pull and notes_commit, strict schemas, no output schema", async () => {
    const h = await start();
    const { tools } = await h.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["notes_pull", "notes_commit"]);
    const [pull, commit] = tools;
    expect(pull?.description).toBe(pullDescription);
    expect(commit?.description).toBe(commitDescription);
    expect(pull?.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
    expect(Object.keys(pull?.inputSchema.properties ?? {})).toEqual(["path"]);
    expect(pull?.inputSchema.required).toBeUndefined();
    expect(commit?.inputSchema).toMatchObject({
      type: "object",
      additionalProperties: false,
      required: ["message"],
    });
    expect(Object.keys(commit?.inputSchema.properties ?? {}).sort()).toEqual(["message", "path"]);
    for (const tool of tools) expect(tool.outputSchema).toBeUndefined();
  });

  it("without path sets, descriptions and instructions are exactly the base text", () => {
    expect(describePull(noPathSets)).toBe(pullDescription);
    expect(describeCommit(noPathSets)).toBe(commitDescription);
    expect(instructions("/d", noPathSets)).not.toMatch(/Writable|Read-only/);
  });

  it("path sets are advertised in the instructions, both descriptions and every result", async () => {
    const sets = { writable: ["notes"], readOnly: ["notes/fixed"] };
    const h = await start({}, sets);
    const writableSentence =
      "Writable paths: `notes`. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.";
    const readOnlySentence =
      "Read-only paths: `notes/fixed`. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; where the two sets nest, the longest matching entry decides.";
    expect(h.client.getInstructions()).toContain(`${writableSentence} ${readOnlySentence}`);
    const { tools } = await h.client.listTools();
    for (const tool of tools) {
      expect(tool.description?.endsWith(` ${writableSentence} ${readOnlySentence}`)).toBe(true);
    }
    const ok = await call(h, "notes_pull");
    expect(ok.text).toBe(
      `${notebookDirectory} (writable: notes; read-only: notes/fixed; longest match decides)`,
    );
    expect(ok.structured).toMatchObject({ readOnly: ["notes/fixed"], writable: ["notes"] });
    const bad = await call(h, "notes_pull", { path: 3 });
    expect(bad.structured).toMatchObject({ readOnly: ["notes/fixed"], writable: ["notes"] });
  });

  it("a read-only set alone ends with 'write elsewhere.'", () => {
    expect(describePull({ writable: [], readOnly: ["a", "b"] })).toBe(
      `${pullDescription} Read-only paths: \`a\`, \`b\`. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; write elsewhere.`,
    );
  });
});

describe("success", () => {
  it("notes_pull without path: the notebook directory as text and the full structured object", async () => {
    const h = await start();
    const result = await call(h, "notes_pull");
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([{ type: "text", text: notebookDirectory }]);
    expect(result.structured).toEqual({
      code: "OK",
      path: notebookDirectory,
      generation: 18,
      filesChanged: 3,
      insertions: 3,
      deletions: 4,
      files: [
        { path: "archive/old.md", insertions: 0, deletions: 3 },
        { path: "notes/a.md", insertions: 1, deletions: 1 },
        { path: "notes/c.md", insertions: 2, deletions: 0 },
      ],
      readOnly: [],
      writable: [],
    });
    expect(h.calls).toEqual([{ op: "pull", request: {} }]);
  });

  it("passes path through, and '' as given", async () => {
    const h = await start();
    await call(h, "notes_pull", { path: "/work/copy" });
    await call(h, "notes_pull", { path: "" });
    await call(h, "notes_pull", { path: "~/copy" });
    expect(h.calls.map((c) => c.request)).toEqual([
      { path: "/work/copy" },
      { path: "" },
      { path: "~/copy" },
    ]);
  });

  it("notes_commit: message byte for byte, author from the client's clientInfo", async () => {
    const h = await start();
    const message = "  keep\r\n  all of it \u{1F600}\n";
    const result = await call(h, "notes_commit", { message, path: "/w" });
    expect(result.isError).toBe(false);
    expect(h.calls).toEqual([
      {
        op: "commit",
        request: { message, path: "/w", author: { name: "test-client", version: "1.2.3" } },
      },
    ]);
  });

  it("accepts a message of exactly 16,384 UTF-8 bytes and a path of exactly 4,096", async () => {
    const h = await start();
    const message = "é".repeat(8192);
    expect(new TextEncoder().encode(message).length).toBe(16_384);
    expect((await call(h, "notes_commit", { message })).isError).toBe(false);
    const path = `/${"a".repeat(4095)}`;
    expect((await call(h, "notes_pull", { path })).isError).toBe(false);
  });
});

describe("invalid requests", () => {
  const cases: ReadonlyArray<[string, string, Record<string, unknown> | undefined, string]> = [
    ["unknown field", "notes_pull", { path: "/a", extra: 1 }, "INVALID_ARGUMENT"],
    ["null path", "notes_pull", { path: null }, "INVALID_ARGUMENT"],
    ["numeric path", "notes_pull", { path: 5 }, "INVALID_ARGUMENT"],
    ["array path", "notes_pull", { path: ["/a"] }, "INVALID_ARGUMENT"],
    ["relative path", "notes_pull", { path: "notes/dir" }, "PATH_NOT_ABSOLUTE"],
    ["bare ~", "notes_pull", { path: "~" }, "PATH_NOT_ABSOLUTE"],
    ["path with U+0000", "notes_pull", { path: "/a\u0000b" }, "INVALID_ARGUMENT"],
    ["path with a lone surrogate", "notes_pull", { path: "/a\ud800" }, "INVALID_ARGUMENT"],
    ["4,097-byte path", "notes_pull", { path: `/${"a".repeat(4096)}` }, "PATH_TOO_LONG"],
    [
      "4,097-byte path in 2,049 code points",
      "notes_pull",
      { path: `/${"é".repeat(2048)}` },
      "PATH_TOO_LONG",
    ],
    ["missing message", "notes_commit", {}, "INVALID_ARGUMENT"],
    ["no arguments at all", "notes_commit", undefined, "INVALID_ARGUMENT"],
    ["null message", "notes_commit", { message: null }, "INVALID_ARGUMENT"],
    ["numeric message", "notes_commit", { message: 42 }, "INVALID_ARGUMENT"],
    ["empty message", "notes_commit", { message: "" }, "MESSAGE_BLANK"],
    [
      "white-space message",
      "notes_commit",
      { message: " \t\r\n\u00a0\u2003\u3000\u0085" },
      "MESSAGE_BLANK",
    ],
    ["message with U+0000", "notes_commit", { message: "fix\u0000" }, "INVALID_ARGUMENT"],
    [
      "16,385-byte message",
      "notes_commit",
      { message: `${"é".repeat(8192)}a` },
      "MESSAGE_TOO_LONG",
    ],
    ["unknown field on commit", "notes_commit", { message: "m", force: true }, "INVALID_ARGUMENT"],
    ["null path on commit", "notes_commit", { message: "m", path: null }, "INVALID_ARGUMENT"],
    ["unknown tool", "notes_delete", {}, "INVALID_ARGUMENT"],
  ];

  for (const [title, tool, args, reason] of cases) {
    it(`${title} → INVALID_REQUEST/${reason}, nothing called`, async () => {
      const h = await start();
      const result = await call(h, tool, args);
      expect(result.isError).toBe(true);
      expect(result.content).toHaveLength(1);
      expect(result.structured).toMatchObject({
        code: "INVALID_REQUEST",
        reason,
        action: "FIX_REQUEST",
        retryable: false,
        files: [],
        readOnly: [],
        writable: [],
      });
      const diagnosticId = result.structured["diagnosticId"];
      expect(diagnosticId).toMatch(/^[0-9a-f]{16}$/);
      expect(typeof result.structured["message"]).toBe("string");
      expect(result.text).toContain(`INVALID_REQUEST · ${reason}\n`);
      expect(result.text).toContain("action: FIX_REQUEST\nretryable: false\n");
      expect(result.text).toContain(`diagnosticId: ${String(diagnosticId)}`);
      expect(h.calls).toEqual([]);
    });
  }
});

describe("arguments of any JSON shape, as the client sent them", () => {
  /** Sends tools/call with `params` exactly as given (the client does not validate what it sends). */
  const rawCall = async (h: Harness, params: Record<string, unknown>) => {
    const result = await h.client.request(
      { method: "tools/call", params: { name: "", ...params } },
      CallToolResultSchema,
    );
    return {
      text: (result.content[0]?.type === "text" && result.content[0].text) || "",
      structured: result.structuredContent ?? {},
      isError: result.isError === true,
    };
  };

  const deepArray = (depth: number): unknown => {
    let value: unknown = "/x";
    for (let i = 0; i < depth; i++) value = [value];
    return value;
  };

  const shapes: ReadonlyArray<[string, unknown, RegExp]> = [
    ["null", null, /^notes_pull arguments must be a JSON object \(path\), not null\.$/],
    ["a string", "/x", /, not a string\.$/],
    ["a number", 5, /, not a number\.$/],
    ["an array", ["/x"], /, not an array\.$/],
    ["a boolean", false, /, not a boolean\.$/],
    ["100,000 nested arrays", deepArray(100_000), /, not an array\.$/],
    ["a __proto__ key", JSON.parse('{"__proto__":{"path":"/x"}}'), /has no field "__proto__"/],
    [
      "a path 100,000 arrays deep",
      { path: deepArray(100_000) },
      /^"path" must be a string, not an array\.$/,
    ],
  ];
  for (const [title, args, message] of shapes) {
    it(`arguments ${title} → INVALID_REQUEST/INVALID_ARGUMENT, nothing called`, async () => {
      const h = await start();
      const result = await rawCall(h, { name: "notes_pull", arguments: args });
      expect(result.isError).toBe(true);
      expect(result.structured).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "INVALID_ARGUMENT",
      });
      expect(String(result.structured["message"])).toMatch(message);
      expect(h.calls).toEqual([]);
    });
  }

  it("a tools/call without a string name is refused; its records carry no tool field", async () => {
    const h = await start();
    const result = await h.client.request(
      { method: "tools/call", params: { name: "notes_pull", arguments: {} } },
      CallToolResultSchema,
    );
    expect(result.isError).toBeFalsy();
    const missing = await rawCall(h, { name: 7 });
    expect(missing.structured).toMatchObject({ reason: "INVALID_ARGUMENT" });
    expect(String(missing.structured["message"])).toMatch(/^tools\/call needs "name"/);
    const records = callLogs(h, String(missing.structured["diagnosticId"]));
    expect(records.map((record) => record["msg"])).toEqual([
      "tool call started",
      "tool call completed",
    ]);
    expect(records.every((record) => record["tool"] === undefined)).toBe(true);
  });

  it("a message of only U+FEFF is not blank: it is kept byte for byte", async () => {
    const h = await start();
    const result = await call(h, "notes_commit", { message: "\uFEFF" });
    expect(result.isError).toBe(false);
    expect(h.calls).toMatchObject([{ op: "commit", request: { message: "\uFEFF" } }]);
  });

  it("an echoed name holding a secret is redacted before it is cut", async () => {
    const secret = "S".repeat(40) + "ecret-" + "T".repeat(60);
    const h = await startHarness({}, noPathSets, { secretValues: [secret] });
    harness = h;
    const byName = await call(h, secret, {});
    const byField = await call(h, "notes_pull", { [secret]: 1 });
    for (const result of [byName, byField]) {
      expect(result.text).toContain("<secret>");
      expect(result.text).not.toContain("S".repeat(20));
    }
    expect(h.logs.join("")).not.toContain("S".repeat(20));
  });
});

describe("domain errors and defects", () => {
  it("a use-case error becomes the error envelope with the same facts in text and structure", async () => {
    const conflict = domainError({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      message: "Resolve the conflict blocks before notes_commit.",
      files: [
        { path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] },
      ],
    });
    const h = await start({ commit: () => Effect.fail(conflict) });
    const result = await call(h, "notes_commit", { message: "m" });
    expect(result.isError).toBe(true);
    const diagnosticId = String(result.structured["diagnosticId"]);
    expect(result.structured).toEqual({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      action: "EDIT_FILES",
      diagnosticId,
      retryable: false,
      message: "Resolve the conflict blocks before notes_commit.",
      files: [
        { path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] },
      ],
      readOnly: [],
      writable: [],
    });
    expect(result.text).toBe(
      [
        "CONTENT_CONFLICT · MERGE_CONFLICT",
        "Resolve the conflict blocks before notes_commit.",
        "file: notes/today.md · TEXT_CONFLICT · lines 12-18",
        "action: EDIT_FILES",
        "retryable: false",
        `diagnosticId: ${diagnosticId}`,
      ].join("\n"),
    );
  });

  it("a file's name with control, bidi or invisible characters is one line of the text, shown with U+FFFD; the structured path is exact", async () => {
    const names = [
      "t\tab.md",
      "n\nl.md",
      "e\u001b[31m.md",
      "c1\u0085.md",
      "rlm\u200f.md",
      "rlo\u202e.md",
      "zw\u200b.md",
      "bom\ufeff.md",
    ];
    const refused = domainError({
      code: "INVALID_CONTENT",
      reason: "INVALID_FILES",
      message: "Bad names.",
      files: names.map((path) => ({ path, reason: "INVALID_NAME", ranges: [] })),
    });
    const h = await start({ commit: () => Effect.fail(refused) });
    const result = await call(h, "notes_commit", { message: "m" });
    expect(
      (result.structured["files"] as ReadonlyArray<{ path: string }>).map((f) => f.path),
    ).toEqual(names);
    expect(result.text.split("\n").filter((line) => line.startsWith("file: "))).toEqual([
      "file: t\uFFFDab.md · INVALID_NAME",
      "file: n\uFFFDl.md · INVALID_NAME",
      "file: e\uFFFD[31m.md · INVALID_NAME",
      "file: c1\uFFFD.md · INVALID_NAME",
      "file: rlm\uFFFD.md · INVALID_NAME",
      "file: rlo\uFFFD.md · INVALID_NAME",
      "file: zw\uFFFD.md · INVALID_NAME",
      "file: bom\uFFFD.md · INVALID_NAME",
    ]);
  });

  it("a defect becomes ENGINE_FAILED/INTERNAL, its cause logged under the same diagnosticId", async () => {
    const h = await start({ pull: () => Effect.die(new Error("kaboom")) });
    const result = await call(h, "notes_pull");
    expect(result.structured).toMatchObject({ code: "ENGINE_FAILED", reason: "INTERNAL" });
    expect(result.text).not.toContain("kaboom");
    const records = callLogs(h, String(result.structured["diagnosticId"]));
    expect(
      records.some((r) => r["level"] === "error" && (r["cause"] ?? "").includes("kaboom")),
    ).toBe(true);
  });
});

describe("log records", () => {
  it("exactly one start and one completion record per call, correlated by diagnosticId", async () => {
    const h = await start();
    const ok = await call(h, "notes_pull");
    const bad = await call(h, "notes_commit", { message: " " });
    const okRecords = h.logs
      .map(fieldsOf)
      .filter((r) => r["module"] === "mcp" && r["tool"] === "notes_pull");
    expect(okRecords.map((r) => r["msg"])).toEqual(["tool call started", "tool call completed"]);
    const okId = okRecords[0]?.["diagnosticId"];
    expect(okId).toMatch(/^[0-9a-f]{16}$/);
    expect(okRecords[1]).toMatchObject({ diagnosticId: okId, code: "OK", generation: "18" });
    expect(okRecords[1]?.["durationMs"]).toMatch(/^\d+$/);
    expect(ok.isError).toBe(false);

    const badId = String(bad.structured["diagnosticId"]);
    expect(badId).not.toBe(okId);
    const badRecords = callLogs(h, badId);
    expect(badRecords.map((r) => r["msg"])).toEqual(["tool call started", "tool call completed"]);
    expect(badRecords[1]).toMatchObject({
      module: "mcp",
      tool: "notes_commit",
      code: "INVALID_REQUEST",
      reason: "MESSAGE_BLANK",
    });
  });
});

describe("cancellation and shutdown", () => {
  it("a cancelled call stays a protocol cancellation and interrupts the use case", async () => {
    const started = Effect.runSync(Deferred.make<void>());
    const interrupted = Effect.runSync(Deferred.make<void>());
    const h = await start({
      pull: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)),
        ),
    });
    const controller = new AbortController();
    const pending = h.client.callTool({ name: "notes_pull" }, undefined, {
      signal: controller.signal,
    });
    await Effect.runPromise(Deferred.await(started));
    controller.abort("changed my mind");
    await expect(pending).rejects.toThrow();
    await Effect.runPromise(Deferred.await(interrupted));
    // The completion record is written as the interrupted fiber unwinds.
    await h.waitForLog((r) => r["msg"] === "tool call completed");
    const records = h.logs.map(fieldsOf).filter((r) => r["module"] === "mcp");
    expect(records.map((r) => [r["msg"], r["code"]])).toEqual([
      ["tool call started", undefined],
      ["tool call completed", "CANCELLED"],
    ]);
  });

  it("drain refuses new calls and lets calls in flight finish", async () => {
    const started = Effect.runSync(Deferred.make<void>());
    const gate = Effect.runSync(Deferred.make<void>());
    const h = await start({
      pull: (request) =>
        Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Deferred.await(gate)),
          Effect.as({ path: request.path ?? notebookDirectory, generation: 1, files: [] }),
        ),
    });
    const inFlight = call(h, "notes_pull");
    await Effect.runPromise(Deferred.await(started));
    const draining = Effect.runPromise(h.handle.drain(600_000).pipe(Effect.provide(h.services)));
    await h.waitForLog((r) => r["msg"] === "waiting for calls in flight");
    await expect(call(h, "notes_pull")).rejects.toThrow(/shutting down/);
    Effect.runSync(Deferred.succeed(gate, undefined));
    expect((await inFlight).structured).toMatchObject({ code: "OK", generation: 1 });
    await draining;
  });

  it("drain interrupts what is still running after the grace period and answers it with what is known", async () => {
    const started = Effect.runSync(Deferred.make<void>());
    const h = await start({
      pull: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never)),
      commit: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never)),
    });
    // Two copies: both run (calls on one copy would queue, as the next test shows).
    const pulling = call(h, "notes_pull", { path: "/w/a" });
    const committing = call(h, "notes_commit", { path: "/w/b", message: "m" });
    await Effect.runPromise(Deferred.await(started));
    await h.waitForLog((r) => r["msg"] === "tool call started" && r["tool"] === "notes_commit");
    await Effect.runPromise(h.handle.drain(0).pipe(Effect.provide(h.services)));
    // Answered before drain returns (the process may exit right after it).
    expect((await pulling).structured).toMatchObject({
      code: "RECOVERY_FAILURE",
      reason: "UNEXPECTED_FAILURE",
      action: "PULL_AGAIN",
    });
    expect((await committing).structured).toMatchObject({
      code: "STORAGE_FAILURE",
      reason: "PUBLICATION_UNKNOWN",
      action: "PULL_TO_VERIFY",
    });
    const completions = h.logs.map(fieldsOf).filter((r) => r["msg"] === "tool call completed");
    expect(completions.map((r) => r["code"]).sort()).toEqual([
      "RECOVERY_FAILURE",
      "STORAGE_FAILURE",
    ]);
  });

  it("a call still queued behind an earlier one on its copy when the grace ends never runs, and says so", async () => {
    const started = Effect.runSync(Deferred.make<void>());
    let commits = 0;
    const h = await start({
      pull: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never)),
      commit: () => Effect.sync(() => void commits++).pipe(Effect.zipRight(Effect.never)),
    });
    const pulling = call(h, "notes_pull", { path: "/w/a" });
    const committing = call(h, "notes_commit", { path: "/w/a", message: "m" });
    await Effect.runPromise(Deferred.await(started));
    await Effect.runPromise(h.handle.drain(0).pipe(Effect.provide(h.services)));
    expect((await pulling).structured).toMatchObject({ code: "RECOVERY_FAILURE" });
    const queued = await committing;
    expect(queued.structured).toMatchObject({
      code: "STORAGE_FAILURE",
      reason: "STORE_UNAVAILABLE",
    });
    expect(queued.text).toContain("before this call ran");
    expect(commits).toBe(0);
  });
});
