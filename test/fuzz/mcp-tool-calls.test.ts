/**
 * The MCP fuzz test (`npm run test:fuzz`): generated tools/call requests (random JSON
 * types, depth and sizes, Unicode edge cases, path tricks — see toolCalls.ts) sent one
 * after another to one real `quire serve --workspace-root <tmp>` process. After every
 * call:
 *
 * - the answer is a result (never a JSON-RPC error): OK, or the documented error envelope
 *   with every field (envelopeShape.ts), with a code these inputs can cause — never
 *   ENGINE_FAILED, RECOVERY_FAILURE or a storage error, which here would be bugs;
 * - a structurally malformed call is INVALID_REQUEST/INVALID_ARGUMENT;
 * - an OK result names a directory at or below the workspace root;
 * - the process is alive, and nothing outside the root was created, changed or removed
 *   (a sentinel tree next to the root, the root's parent, absolute probe paths).
 *
 * At the end, stdout carried only JSON-RPC, no answer was unasked for, and closing stdin
 * ends the process with status 0. The seed is fixed and printed; set QUIRE_FUZZ_SEED
 * (and QUIRE_FUZZ_CALLS) to replay or vary a run.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assertBuilt } from "../cli/quireProcess.js";
import { resultProblems } from "../mcp/envelopeShape.js";
import { type RawResponse, type RawServe, startRawServe } from "../mcp/rawServe.js";
import { type TreeSnapshot, snapshotTree, treeDifferences } from "./sentinel.js";
import { type FuzzLayout, type GeneratedCall, generatedCall } from "./toolCalls.js";

const seed = Number(process.env["QUIRE_FUZZ_SEED"] ?? "220008");
const calls = Number(process.env["QUIRE_FUZZ_CALLS"] ?? "10000");

/** Codes these inputs may produce: anything else is a bug (no store or disk fault is injected). */
const expectedCodes = new Set(["OK", "INVALID_REQUEST", "INVALID_CONTENT", "CONTENT_CONFLICT"]);

let base: string;
let layout: FuzzLayout;
let realRoot: string;
let server: RawServe;
let outsideBefore: TreeSnapshot;
let parentBefore: TreeSnapshot;
// The parent's snapshot leaves out what changes by design (the root, the server's own
// store and state) and the sentinel tree, which has its own.
const opaque = ["root", "outside", "store", "private", "tmp", "data", "cache"];

beforeAll(async () => {
  assertBuilt();
  base = mkdtempSync(path.join(tmpdir(), "quire-fuzz-"));
  const root = path.join(base, "root");
  const outside = path.join(base, "outside");
  for (const dir of ["root/copies", "root/home", "outside/dir/sub", "outside/empty", "tmp"]) {
    mkdirSync(path.join(base, dir), { recursive: true });
  }
  writeFileSync(path.join(outside, "file.md"), "outside\n");
  writeFileSync(path.join(outside, "dir", "a.md"), "a\n");
  writeFileSync(path.join(outside, "dir", "sub", "b.md"), "b\n");
  writeFileSync(path.join(root, "file.txt"), "a regular file inside the root\n");
  symlinkSync(outside, path.join(root, "link-out"));
  symlinkSync(path.join(outside, "dir"), path.join(root, "copies", "link-up"));
  symlinkSync("copies", path.join(root, "link-in"));
  symlinkSync(path.join(base, "nowhere"), path.join(root, "dangling"));
  layout = {
    root,
    outside,
    parent: base,
    probe: `quire-fuzz-probe-${process.pid}-${Date.now()}`,
  };
  realRoot = realpathSync(root);
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && !/^(QUIRE_|AWS_|LOG_LEVEL$|XDG_|TMPDIR$|HOME$)/.test(entry[0]),
    ),
  );
  server = await startRawServe(
    [
      "--store",
      `file:${path.join(base, "store")}`,
      "--private-root",
      path.join(base, "private"),
      "--workspace-root",
      root,
    ],
    {
      cwd: root,
      env: {
        ...inherited,
        // Inside the root, so that ~/… paths can succeed too.
        HOME: path.join(root, "home"),
        XDG_DATA_HOME: path.join(base, "data"),
        XDG_CACHE_HOME: path.join(base, "cache"),
        TMPDIR: path.join(base, "tmp"),
      },
    },
  );
  // One call first, so that the store and private state the server creates exist before the snapshot.
  await server.callTool({
    name: "notes_pull",
    arguments: { path: path.join(root, "copies", "first") },
  });
  outsideBefore = snapshotTree(outside);
  parentBefore = snapshotTree(base, opaque);
});

afterAll(() => {
  server.kill();
  rmSync(base, { recursive: true, force: true });
});

const cut = (text: string, length: number) =>
  text.length > length ? `${text.slice(0, length)}… (${text.length} characters)` : text;

/** `text` with every run of 12 or more equal characters written `c×count`, for the report. */
const compact = (text: string) =>
  text.replace(/(.)\1{11,}/gsu, (run: string, char: string) => `${char}×${[...run].length}`);

/** Everything wrong with one answer and the world after it. */
const problemsOf = (call: GeneratedCall, response: RawResponse): Array<string> => {
  const problems: Array<string> = [];
  if (response.error !== undefined) {
    problems.push(`a JSON-RPC error instead of a result: ${JSON.stringify(response.error)}`);
  } else {
    problems.push(...resultProblems(response.result));
    const structured = response.result?.["structuredContent"];
    if (typeof structured === "object" && structured !== null && !Array.isArray(structured)) {
      const fields: Record<string, unknown> = { ...structured };
      const code = String(fields["code"]);
      const reason = String(fields["reason"]);
      if (!expectedCodes.has(code)) {
        problems.push(`unexpected ${code}/${reason}: ${cut(String(fields["message"]), 500)}`);
      }
      if (
        call.malformed !== undefined &&
        (code !== "INVALID_REQUEST" || reason !== "INVALID_ARGUMENT")
      ) {
        problems.push(`malformed (${call.malformed}) but answered ${code}/${reason}`);
      }
      if (code === "OK") {
        const relative = path.relative(realRoot, realpathSync(String(fields["path"])));
        if (relative.startsWith("..") || path.isAbsolute(relative)) {
          problems.push(`OK for a directory outside the root: ${String(fields["path"])}`);
        }
      }
    }
  }
  if (!server.alive()) problems.push("the server died");
  // Each escape is reported once, by the call that made it: the snapshots move on.
  const outsideNow = snapshotTree(layout.outside);
  const parentNow = snapshotTree(layout.parent, opaque);
  problems.push(
    ...treeDifferences(outsideBefore, outsideNow).map((d) => `outside: ${d}`),
    ...treeDifferences(parentBefore, parentNow).map((d) => `parent: ${d}`),
  );
  outsideBefore = outsideNow;
  parentBefore = parentNow;
  for (const probe of [
    `/etc/${layout.probe}`,
    `/${layout.probe}`,
    path.join(tmpdir(), layout.probe),
  ]) {
    if (existsSync(probe)) problems.push(`created ${probe}`);
  }
  return problems;
};

/** The problems seen, by kind (the first line with numbers blanked), each with its first inputs. */
interface Failures {
  readonly byKind: Map<string, { count: number; examples: Array<string> }>;
  total: number;
}

const record = (failures: Failures, problems: ReadonlyArray<string>, params: string) => {
  failures.total++;
  for (const problem of problems) {
    const tree = /^(outside|parent): (created|changed|removed) /.exec(problem);
    const kind =
      tree === null
        ? cut(problem.split("\n")[0] ?? "", 120).replace(/\d+/g, "N")
        : `${tree[1]}: ${tree[2]} an entry`;
    const entry = failures.byKind.get(kind) ?? { count: 0, examples: [] };
    entry.count++;
    if (entry.examples.length < 3) {
      entry.examples.push(
        `${cut(compact(problem), 600)}\n      params: ${cut(compact(params), 700)}`,
      );
    }
    failures.byKind.set(kind, entry);
  }
};

it(`${calls} generated tool calls: every answer OK or the envelope, nothing outside the root touched`, async () => {
  console.log(
    `mcp fuzz: seed=${seed} calls=${calls} (replay: QUIRE_FUZZ_SEED=${seed} npm run test:fuzz)`,
  );
  const outcomes = new Map<string, number>();
  // Where the run's time goes (reported, never asserted): answers by outcome, and the checks.
  const spent = new Map<string, number>();
  let checking = 0;
  const failures: Failures = { byKind: new Map(), total: 0 };
  let sent = 0;
  // Every call runs (no stop at the first failure, no shrinking): the report lists each kind
  // of problem with its first inputs, and the fixed seed replays the same sequence.
  await fc.assert(
    fc.asyncProperty(generatedCall(layout), async (call) => {
      sent++;
      let response: RawResponse;
      const startedAt = performance.now();
      try {
        response = await server.callToolText(call.params);
      } catch (error) {
        record(failures, [error instanceof Error ? error.message : String(error)], call.params);
        return;
      }
      const structured = response.result?.["structuredContent"];
      const fields: Record<string, unknown> =
        typeof structured === "object" && structured !== null ? { ...structured } : {};
      const key = `${String(fields["code"] ?? "no result")}/${String(fields["reason"] ?? "-")}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      spent.set(key, (spent.get(key) ?? 0) + performance.now() - startedAt);
      const checkedAt = performance.now();
      const problems = problemsOf(call, response);
      checking += performance.now() - checkedAt;
      if (problems.length > 0) record(failures, problems, call.params);
    }),
    { seed, numRuns: calls },
  );
  const summary = [...outcomes]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, n]) => `${k}=${n} (${Math.round(spent.get(k) ?? 0)} ms)`);
  console.log(`mcp fuzz: checks after each call took ${Math.round(checking)} ms in all`);
  console.log(`mcp fuzz: sent=${sent} failed=${failures.total} ${summary.join(" ")}`);
  const report = [...failures.byKind].map(
    ([kind, { count, examples }]) => `${count}× ${kind}\n    ${examples.join("\n    ")}`,
  );
  expect(report, `seed ${seed}: ${failures.total} of ${sent} calls failed`).toEqual([]);
  expect(server.violations).toEqual([]);
  expect(server.unclaimed()).toBe(0);
  expect(await server.close()).toEqual({ code: 0, signal: null });
});
