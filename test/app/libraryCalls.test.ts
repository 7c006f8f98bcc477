/**
 * The Promise facade called as plain JavaScript would call it, badly: every argument of
 * every call replaced by junk (fast-check's `anything`, and near misses of the right
 * values). Each call must resolve — never reject, never throw — with the OK object or
 * the documented error object, and a bad argument is INVALID_REQUEST naming it. The
 * history calls' values (generations, limits, files) are checked the same way for the
 * CLI and MCP (docs/history.md "Arguments"); their own tests are in test/cli/history.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cause, Effect, Exit, Option } from "effect";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DomainError,
  type NotebookService,
  openNotebook,
  type QuireNotebook,
} from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-library-calls-"));
const ws = join(root, "ws");
let notebook: QuireNotebook;

beforeAll(async () => {
  mkdirSync(ws);
  notebook = await openNotebook({
    store: `file:${join(root, "store")}`,
    workspaceRoot: ws,
    privateRoot: join(root, "private"),
    probe: false,
  });
  expect((await notebook.pull()).code).toBe("OK");
  writeFileSync(join(ws, "a.md"), "one\n");
  expect((await notebook.commit("one")).code).toBe("OK");
  writeFileSync(join(ws, "a.md"), "one\ntwo\n");
  expect((await notebook.commit("two")).code).toBe("OK");
});
afterAll(async () => {
  await notebook.close();
  rmSync(root, { recursive: true, force: true });
});

/** Resolves with the call's answer, or records how it threw or rejected. */
const settle = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    return await call();
  } catch (error) {
    return { threw: fc.stringify(error) };
  }
};

const codes = ["OK", "INVALID_REQUEST", "NOT_PULLED", "CONTENT_CONFLICT"];

const near = fc.oneof(
  fc.anything(),
  fc.constantFrom<unknown>(
    undefined,
    null,
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 60,
    "2",
    "",
    "../a.md",
    "./a.md",
    "a.md/",
    "/a.md",
    "a//a.md",
    [],
    ["a.md"],
    ["../x"],
    [1],
    {},
    { limt: 1 },
    true,
    "relative/path",
  ),
);

/** `junk`, unless it names one of the two publications (then 3, which is none). */
const notAPublication = (junk: unknown): unknown =>
  junk === 1 ||
  junk === 2 ||
  (typeof junk === "object" && junk !== null && [1, 2].includes(Reflect.get(junk, "generation")))
    ? 3
    : junk;

/** A field of an answer, if it is an object. */
const field = (answer: unknown, name: string): unknown =>
  typeof answer === "object" && answer !== null ? Reflect.get(answer, name) : undefined;

/** Every facade call, given one junk value where its arguments go. */
const calls: ReadonlyArray<[string, (nb: QuireNotebook, junk: unknown) => Promise<unknown>]> = [
  // Only junk that passes the type checks reaches a use case; with a copy's path that
  // exists, a commit of junk could publish: the message is junk, the path the copy.
  ["commit message", (nb, junk) => Reflect.apply(nb.commit, nb, [junk, ws])],
  ["commit path", (nb, junk) => Reflect.apply(nb.commit, nb, ["junk path", junk])],
  ["pull", (nb, junk) => Reflect.apply(nb.pull, nb, [junk])],
  ["status", (nb, junk) => Reflect.apply(nb.status, nb, [junk])],
  ["log", (nb, junk) => Reflect.apply(nb.log, nb, [junk])],
  ["log limit", (nb, junk) => Reflect.apply(nb.log, nb, [{ limit: junk }])],
  ["log file", (nb, junk) => Reflect.apply(nb.log, nb, [{ file: junk }])],
  ["diff", (nb, junk) => Reflect.apply(nb.diff, nb, [junk])],
  ["diff files", (nb, junk) => Reflect.apply(nb.diff, nb, [{ files: junk }])],
  ["show", (nb, junk) => Reflect.apply(nb.show, nb, [junk])],
  ["show generation", (nb, junk) => Reflect.apply(nb.show, nb, [{ generation: junk }])],
  ["show files", (nb, junk) => Reflect.apply(nb.show, nb, [{ generation: 2, files: junk }])],
  [
    "restore files",
    // Generation 2 is what the copy holds: restoring any file of it changes nothing.
    (nb, junk) => Reflect.apply(nb.restore, nb, [{ generation: 2, files: junk }]),
  ],
  [
    "restore force",
    (nb, junk) => Reflect.apply(nb.restore, nb, [{ generation: 1, files: ["b.md"], force: junk }]),
  ],
  // Generations 1 and 2 are publications: reverting one would change the note.
  ["revert", (nb, junk) => Reflect.apply(nb.revert, nb, [notAPublication(junk)])],
  [
    "revert generation",
    (nb, junk) => Reflect.apply(nb.revert, nb, [{ generation: notAPublication(junk) }]),
  ],
];

describe("the library facade called with junk", () => {
  it("answers every call with the OK object or the documented error object", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...calls), near, async ([name, call], junk) => {
        const answer = await settle(() => call(notebook, junk));
        // fc.stringify, not String: junk such as { toString: false } cannot be made a string.
        expect(answer, `${name}(${fc.stringify(junk)})`).toBeTypeOf("object");
        const code = field(answer, "code");
        expect(codes, `${name}: ${JSON.stringify(answer)}`).toContain(code);
        if (code !== "OK") expect(field(answer, "message"), name).toBeTypeOf("string");
      }),
      { numRuns: 400 },
    );
    // Whatever was called, the note is intact (a restore of junk wrote nothing).
    expect(readFileSync(join(ws, "a.md"), "utf8")).toBe("one\ntwo\n");
  });

  it("names the bad argument", async () => {
    const reason = async (answer: Promise<unknown>) => {
      const a = await answer;
      return `${String(field(a, "code"))}/${String(field(a, "reason"))}: ${String(field(a, "message"))}`;
    };
    expect(await reason(Reflect.apply(notebook.commit, notebook, [5]))).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to commit: message has the wrong type.",
    );
    expect(await reason(Reflect.apply(notebook.log, notebook, [{ limt: 5 }]))).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to log: limt is not a known field.",
    );
    expect(await reason(notebook.log({ limit: 0 }))).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: The limit must be a whole number from 1 to 1,000,000 (got 0).",
    );
    expect(await reason(notebook.show({ generation: 1.5 }))).toMatch(
      /^INVALID_REQUEST\/INVALID_ARGUMENT: The generation must be a whole number from 1 /,
    );
    expect(await reason(notebook.log({ file: "../a.md" }))).toMatch(
      /^INVALID_REQUEST\/INVALID_ARGUMENT: "\.\.\/a\.md" is not a notebook path: /,
    );
    expect(await reason(notebook.restore({ generation: 1, files: [] }))).toMatch(
      /^INVALID_REQUEST\/INVALID_ARGUMENT: Name at least one file to restore/,
    );
  });

  it("answers, never throws, when reading the arguments runs code that throws", async () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const hostile: ReadonlyArray<unknown> = [
      {
        get limit() {
          throw new Error("boom");
        },
      },
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("boom");
          },
        },
      ),
      revoked.proxy,
      {
        files: new Proxy(["a.md"], {
          get(target, key) {
            if (key === "0") throw new Error("boom");
            return Reflect.get(target, key);
          },
        }),
      },
    ];
    for (const [index, options] of hostile.entries())
      for (const method of ["log", "diff", "show", "restore", "revert"] as const) {
        const answer = await settle(() => Reflect.apply(notebook[method], notebook, [options]));
        expect(field(answer, "code"), `${method} #${index}: ${JSON.stringify(answer)}`).toBe(
          "INVALID_REQUEST",
        );
      }
  });

  it("refuses a message without a UTF-8 form, and cuts a huge refused file in the message", async () => {
    const lone = await notebook.commit("bad \ud800 message");
    expect(`${String(field(lone, "reason"))}: ${String(field(lone, "message"))}`).toBe(
      "INVALID_ARGUMENT: The message is not well-formed Unicode: it holds a lone surrogate (U+D800 at UTF-16 index 4), which has no UTF-8 form.",
    );
    const huge = await notebook.log({ file: `${"x/".repeat(100_000)}..` });
    expect(field(huge, "reason")).toBe("INVALID_ARGUMENT");
    expect(String(field(huge, "message")).length).toBeLessThan(400);
  });

  it("refuses a path without a UTF-8 form as MCP does, wherever the bad code unit is", async () => {
    for (const path of [`${ws}/\ud800`, `${ws}/a\udfffb`, "~/\ud83d", `/\u0000`]) {
      for (const answer of [
        await notebook.pull(path),
        await notebook.commit("m", path),
        await notebook.log({ path }),
      ]) {
        expect(`${String(field(answer, "code"))}/${String(field(answer, "reason"))}`).toBe(
          "INVALID_REQUEST/INVALID_ARGUMENT",
        );
        expect(field(answer, "message")).toMatch(
          path.includes("\u0000")
            ? /^The path must not contain U\+0000 \(found at UTF-16 index 1\)\.$/
            : /^The path is not well-formed Unicode: it holds a lone surrogate \(U\+D[89A-F][0-9A-F]{2} at UTF-16 index \d+\), which has no UTF-8 form\.$/,
        );
      }
    }
  });

  it("reads ./a.md and a.md/ as a.md, as a shell's completion writes them", async () => {
    const listed = async (file: string) => {
      const log = await notebook.log({ file });
      return "publications" in log ? log.publications.map((p) => p.generation) : log;
    };
    const expected = await listed("a.md");
    expect(expected).toEqual([2, 1]);
    expect(await listed("./a.md")).toEqual(expected);
    expect(await listed("././a.md")).toEqual(expected);
    expect(await listed("a.md/")).toEqual(expected);
  });

  it("refuses a file that names the copy's top, saying so instead of calling it reserved", async () => {
    for (const file of [".", "./", ".//", "./."]) {
      const answers = [
        await notebook.log({ file }),
        await notebook.diff({ files: [file] }),
        await notebook.restore({ generation: 1, files: [file] }),
      ];
      for (const answer of answers) {
        expect(field(answer, "reason")).toBe("INVALID_ARGUMENT");
        expect(field(answer, "message")).toBe(
          `${JSON.stringify(file)} names the working copy's top, not a file in it: name a file or a directory below the top, as notes_log lists them (log, diff and show cover the whole copy when no file is given).`,
        );
      }
    }
  });
});

/**
 * How one call of the Effect service ended: its success, its domain error as
 * `CODE/REASON: message`, or how it threw or died (what no call may do).
 */
const ended = async (call: () => Effect.Effect<unknown, DomainError>): Promise<unknown> => {
  let effect: Effect.Effect<unknown, DomainError>;
  try {
    effect = call();
  } catch (error) {
    return { threw: fc.stringify(error) };
  }
  const exit = await Effect.runPromiseExit(effect);
  if (Exit.isSuccess(exit)) return { ok: true };
  const failure = Cause.failureOption(exit.cause);
  if (Option.isNone(failure)) return { died: Cause.pretty(exit.cause) };
  const error: unknown = failure.value;
  return error instanceof DomainError
    ? `${error.code}/${error.reason}: ${error.message}`
    : { failedWith: fc.stringify(error) };
};

/** Every Effect service call, given one junk value where its arguments go. */
const serviceCalls: ReadonlyArray<
  [string, (nb: NotebookService, junk: unknown) => Effect.Effect<unknown, DomainError>]
> = [
  ["pull", (nb, junk) => Reflect.apply(nb.pull, nb, [junk])],
  ["pull path", (nb, junk) => Reflect.apply(nb.pull, nb, [{ path: junk }])],
  ["commit", (nb, junk) => Reflect.apply(nb.commit, nb, [junk])],
  [
    "commit message",
    (nb, junk) =>
      Reflect.apply(nb.commit, nb, [{ message: junk, author: { name: "t", version: "" } }]),
  ],
  ["commit author", (nb, junk) => Reflect.apply(nb.commit, nb, [{ message: "m", author: junk }])],
  ["log", (nb, junk) => Reflect.apply(nb.log, nb, [junk])],
  ["log limit", (nb, junk) => Reflect.apply(nb.log, nb, [{ limit: junk }])],
  ["log since", (nb, junk) => Reflect.apply(nb.log, nb, [{ limit: 5, sinceGeneration: junk }])],
  ["status", (nb, junk) => Reflect.apply(nb.status, nb, [junk])],
  ["diff", (nb, junk) => Reflect.apply(nb.diff, nb, [junk])],
  ["diff files", (nb, junk) => Reflect.apply(nb.diff, nb, [{ files: junk }])],
  ["show", (nb, junk) => Reflect.apply(nb.show, nb, [junk])],
  ["show generation", (nb, junk) => Reflect.apply(nb.show, nb, [{ generation: junk, files: [] }])],
  ["show files", (nb, junk) => Reflect.apply(nb.show, nb, [{ generation: 2, files: junk }])],
  // Generation 2 is what the copy holds: restoring any file of it changes nothing.
  [
    "restore files",
    (nb, junk) => Reflect.apply(nb.restore, nb, [{ generation: 2, files: junk, force: false }]),
  ],
  [
    "restore force",
    (nb, junk) => Reflect.apply(nb.restore, nb, [{ generation: 1, files: ["b.md"], force: junk }]),
  ],
  ["revert", (nb, junk) => Reflect.apply(nb.revert, nb, [notAPublication(junk)])],
  [
    "revert generation",
    (nb, junk) => Reflect.apply(nb.revert, nb, [{ generation: notAPublication(junk) }]),
  ],
  // Any string or no path could name the copy itself, which holds only published notes
  // and would be removed: those are given a directory that does not exist instead.
  [
    "discardIfPublished",
    (nb, junk) =>
      Reflect.apply(nb.discardIfPublished, nb, [
        typeof junk === "string" || junk === undefined ? join(ws, "nowhere") : junk,
      ]),
  ],
];

describe("the Effect service (Notebook) called with junk from plain JavaScript", () => {
  it("diff without files, show without files, log without options: INVALID_REQUEST naming the argument, not a defect", async () => {
    const service = notebook.service;
    const call = (
      method: Exclude<keyof NotebookService, "notebookDirectory" | "stopSharing">,
      args: ReadonlyArray<unknown>,
    ) => ended(() => Reflect.apply(service[method], service, args));
    expect(await call("diff", [{}])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.diff: files is missing.",
    );
    expect(await call("diff", [])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.diff: the value has the wrong type.",
    );
    expect(await call("show", [{ generation: 1 }])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.show: files is missing.",
    );
    expect(await call("log", [])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.log: the value has the wrong type.",
    );
    expect(await call("commit", [{ message: "m" }])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.commit: author is missing.",
    );
    expect(await call("pull", [{ path: 5 }])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.pull: path has the wrong type.",
    );
    expect(await call("discardIfPublished", [5])).toBe(
      "INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to Notebook.discardIfPublished: the value has the wrong type.",
    );
    // What a typed caller passes still works, an omitted path included.
    expect(await call("diff", [{ files: [] }])).toEqual({ ok: true });
    expect(await call("log", [{ limit: 1, path: undefined }])).toEqual({ ok: true });
  });

  it("answers every call with a success or a DomainError: it never throws and never dies", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...serviceCalls), near, async ([name, call], junk) => {
        const answer = await ended(() => call(notebook.service, junk));
        const shown = `${name}(${fc.stringify(junk)}): ${JSON.stringify(answer)}`;
        if (typeof answer === "string") expect(answer, shown).toMatch(/^[A-Z_]+\/[A-Z_]+: /);
        else expect(answer, shown).toEqual({ ok: true });
      }),
      { numRuns: 400 },
    );
    expect(readFileSync(join(ws, "a.md"), "utf8")).toBe("one\ntwo\n");
  });
});

describe("openNotebook called badly", () => {
  const good = () => ({
    store: `file:${join(root, "store")}`,
    workspaceRoot: ws,
    privateRoot: join(root, "private"),
    probe: false,
  });
  const opened = async (options: unknown): Promise<string> => {
    try {
      // Plain JavaScript passes anything; a typed caller cannot, hence the Reflect.
      const nb: unknown = await Reflect.apply(openNotebook, undefined, [options]);
      return nb === undefined ? "undefined" : "opened";
    } catch (error) {
      return error instanceof Error ? error.message : `threw ${String(error)}`;
    }
  };

  it("refuses malformed options naming the option, before touching the store", async () => {
    const refused = (problem: string) =>
      `INVALID_REQUEST/INVALID_ARGUMENT: Invalid arguments to openNotebook: ${problem}.`;
    expect(await opened(undefined)).toBe(refused("the value has the wrong type"));
    expect(await opened(null)).toBe(refused("the value has the wrong type"));
    expect(await opened({})).toBe(refused("store is missing"));
    expect(await opened({ ...good(), store: 42 })).toBe(refused("store has the wrong type"));
    expect(await opened({ ...good(), workspaceRoot: 5 })).toBe(
      refused("workspaceRoot has the wrong type"),
    );
    expect(await opened({ ...good(), commitRetries: -1 })).toBe(
      refused("commitRetries has an invalid value"),
    );
    expect(await opened({ ...good(), checkpointPacks: 0 })).toBe(
      refused("checkpointPacks has an invalid value"),
    );
    expect(await opened({ ...good(), retainedCheckpoints: 1.5 })).toBe(
      refused("retainedCheckpoints has an invalid value"),
    );
    expect(await opened({ ...good(), remote: { region: 1 } })).toMatch(/remote/);
    // A misspelt option is refused, never silently ignored.
    expect(await opened({ ...good(), privateroot: "/x" })).toMatch(/privateroot/);
    expect(await opened(good())).toBe("opened");
  });

  it("never rejects with anything but a described Error for junk options", async () => {
    await fc.assert(
      fc.asyncProperty(fc.anything(), async (junk) => {
        const answer = await opened(junk);
        expect(answer, fc.stringify(junk)).toMatch(/^INVALID_REQUEST\/INVALID_ARGUMENT: /);
      }),
      { numRuns: 200 },
    );
  });
});
