/**
 * The race suite (SPEC §4.1): real `quire serve` processes pull and commit two working
 * copies while, in separate processes, a swapper swaps the first copy's directories for
 * symlinks to a directory outside the workspace root (or moves them right out of it) and
 * its files for directories, and editors save into both copies — all in tight loops,
 * with no injected delay. Afterwards nothing outside the workspace root was created,
 * changed or removed, and every token an editor saved is in the final notebook or still in
 * a copy. It prints its counts last: `calls=… swaps=… escapes=0 lost=0`.
 *
 * Run alone: `npm run test:races` (builds first). `QUIRE_RACE_ROUNDS` sets the rounds per
 * copy (default 500: 1,000 pulls and 1,000 commits in all).
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCodes } from "../../src/domain/errors.js";
import { assertBuilt, makeSandbox, type Sandbox } from "../cli/quireProcess.js";
import { call, serve, type Served, type ToolResult } from "../serve/serve.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const rounds = Number(process.env["QUIRE_RACE_ROUNDS"] ?? "500");

const dirs = ["s0", "s1", "s2"];
const swappedFiles = ["sw0.md", "sw1.md"];
const topFiles = ["t0.md", "t1.md", "t2.md"];
const innerFiles = dirs.flatMap((d) => ["f0.md", "f1.md"].map((f) => `${d}/${f}`));

let sandbox: Sandbox;
let workspace: string;
let outside: string;
let movedOut: string;
const servers: Served[] = [];
const helpers: ChildProcess[] = [];

/** Every entry below `dir` with its content (files) or kind, to compare before and after. */
const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    let names: string[];
    try {
      names = fs.readdirSync(d).sort();
    } catch {
      return; // swapped away meanwhile (only while the swapper runs)
    }
    for (const name of names) {
      const p = path.join(d, name);
      const r = rel === "" ? name : `${rel}/${name}`;
      try {
        const st = fs.lstatSync(p);
        if (st.isDirectory()) {
          out[r] = "<dir>";
          walk(p, r);
        } else out[r] = st.isFile() ? `${st.mode}:${fs.readFileSync(p, "utf8")}` : `<${st.mode}>`;
      } catch {
        // Vanished between the listing and the look: only while the swapper runs.
      }
    }
  };
  walk(dir, "");
  return out;
};

/** Every file of a working copy, concatenated: where the tokens are looked for. */
const allText = (dir: string): string =>
  Object.entries(snapshot(dir))
    .filter(([name, value]) => value !== "<dir>" && !name.startsWith(".quire"))
    .map(([, value]) => value)
    .join("\n");

const startHelper = (script: string, args: ReadonlyArray<string>): ChildProcess => {
  const child = spawn(process.execPath, [fixture(script), ...args], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  helpers.push(child);
  return child;
};

const stopHelper = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });

const markerLine = /^(<<<<<<< local|=======|>>>>>>> remote)\r?$/;

/**
 * Resolves conflicts as an agent would: keeps both sides, drops the marker lines. With
 * `topLevelOnly` (the swapped copy, while the swapper runs) it never writes below a
 * directory the swapper may have replaced by a symlink to outside: this test itself must
 * not write there.
 */
const resolveMarkers = (dir: string, topLevelOnly = false): void =>
  whileEditorWaits(dir, () => resolveMarkersNow(dir, topLevelOnly));

/** The lock a copy's editor honours (fixtures/editor.mjs): one person, one hand at a time. */
const editorLock = (dir: string): string => `${dir}.editing`;

const whileEditorWaits = (dir: string, body: () => void): void => {
  for (let tries = 0; ; tries++) {
    try {
      fs.mkdirSync(editorLock(dir));
      break;
    } catch {
      if (tries > 100_000) throw new Error(`the editor of ${dir} never let go`);
    }
  }
  try {
    body();
  } finally {
    fs.rmdirSync(editorLock(dir));
  }
};

const resolveMarkersNow = (dir: string, topLevelOnly: boolean): void => {
  for (const [name, value] of Object.entries(snapshot(dir))) {
    if (value === "<dir>" || !value.includes("<<<<<<< local")) continue;
    if (topLevelOnly && name.includes("/")) continue;
    const file = path.join(dir, name);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch {
      continue;
    }
    try {
      const { O_WRONLY, O_TRUNC, O_NOFOLLOW } = fs.constants;
      const descriptor = fs.openSync(file, O_WRONLY | O_TRUNC | O_NOFOLLOW);
      fs.writeSync(
        descriptor,
        text
          .split("\n")
          .filter((line) => !markerLine.test(line))
          .join("\n"),
      );
      fs.closeSync(descriptor);
    } catch {
      // Swapped for a directory (or a link) just now: resolved on a later round.
    }
  }
};

const documented = new Set<string>(errorCodes);

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
  workspace = sandbox.workspace;
  outside = path.join(sandbox.root, "outside");
  movedOut = path.join(sandbox.root, "moved-out");
  fs.mkdirSync(movedOut);
  fs.mkdirSync(path.join(workspace, ".swap"));
  // The outside directory holds files named like the copy's, so a write, a create or an
  // unlink that followed a symlink would change something here.
  fs.mkdirSync(outside);
  for (const name of ["f0.md", "f1.md", "sw0.md", "e2-0.md", "x.md"])
    fs.writeFileSync(path.join(outside, name), `outside ${name}\n`);
  for (let i = 0; i < 40; i++)
    fs.writeFileSync(path.join(outside, `e2-${i * 7}.md`), `outside e2 ${i}\n`);
  fs.mkdirSync(path.join(outside, "sub"));
});

afterAll(async () => {
  await Promise.all(helpers.map(stopHelper));
  await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("working copies under concurrent editors and a hostile swapper", () => {
  it(
    "never touches anything outside the workspace root and never loses a saved edit",
    { timeout: 1_200_000 },
    async () => {
      const env = {
        ...sandbox.env,
        LOG_LEVEL: process.env["QUIRE_RACE_DEBUG"] === undefined ? "error" : "notebook=debug,warn",
      };
      const flags = (n: number) => [
        "--workspace-root",
        workspace,
        "--store",
        `file:${sandbox.store}`,
        "--private-root",
        path.join(sandbox.root, `private-${n}`),
        "--no-share",
      ];
      const one = await serve(flags(1), { env, cwd: workspace });
      const two = await serve(flags(2), { env, cwd: workspace });
      servers.push(one, two);
      const c1 = path.join(workspace, "c1");
      const c2 = path.join(workspace, "c2");

      const outcomes = new Map<string, number>();
      const examples = new Map<string, string>();
      let calls = 0;
      const tool = async (served: Served, name: string, args: Record<string, unknown>) => {
        const result: ToolResult = await call(served, name, args);
        calls++;
        const code = String(result.structured["code"]);
        const key = result.isError ? `${code}/${String(result.structured["reason"])}` : "OK";
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        if (result.isError && !examples.has(key))
          examples.set(
            key,
            `${String(result.structured["message"])} ${JSON.stringify(result.structured["recovery"] ?? "")}`,
          );
        // OK, or a documented envelope with every field.
        expect(code === "OK" || documented.has(code), JSON.stringify(result.structured)).toBe(true);
        if (result.isError)
          for (const field of ["reason", "action", "diagnosticId", "retryable", "message", "files"])
            expect(result.structured, field).toHaveProperty(field);
        return result;
      };

      // The notebook every copy starts from.
      expect((await tool(one, "notes_pull", { path: c1 })).structured["code"]).toBe("OK");
      for (const name of [...topFiles, ...swappedFiles, ...innerFiles]) {
        fs.mkdirSync(path.dirname(path.join(c1, name)), { recursive: true });
        fs.writeFileSync(path.join(c1, name), `${name}\n`);
      }
      expect((await tool(one, "notes_commit", { path: c1, message: "seed" })).isError).toBe(false);
      expect((await tool(two, "notes_pull", { path: c2 })).isError).toBe(false);
      const outsideBefore = snapshot(outside);
      const rootBefore = fs.readdirSync(sandbox.root).sort();

      const reports = path.join(sandbox.root, "reports");
      fs.mkdirSync(reports);
      const swapper = startHelper("swapper.mjs", [
        c1,
        path.join(workspace, ".swap"),
        outside,
        movedOut,
        path.join(reports, "swapper.json"),
        dirs.join(","),
        swappedFiles.join(","),
      ]);
      const editor1 = startHelper("editor.mjs", [
        c1,
        path.join(reports, "editor1.json"),
        "e1",
        topFiles.join(","),
        "e1-",
        editorLock(c1),
      ]);
      const editor2 = startHelper("editor.mjs", [
        c2,
        path.join(reports, "editor2.json"),
        "e2",
        [...topFiles, ...swappedFiles, ...innerFiles].join(","),
        "s0/e2-",
        editorLock(c2),
      ]);

      // Both copies pull and commit, side by side, while the others run.
      const drive = async (served: Served, copy: string, label: string) => {
        for (let round = 0; round < rounds; round++) {
          await tool(served, "notes_pull", { path: copy });
          const committed = await tool(served, "notes_commit", {
            path: copy,
            message: `${label} ${round}`,
          });
          if (committed.structured["code"] === "CONTENT_CONFLICT")
            resolveMarkers(copy, copy === c1);
        }
      };
      await Promise.all([drive(one, c1, "one"), drive(two, c2, "two")]);
      await Promise.all([stopHelper(swapper), stopHelper(editor1), stopHelper(editor2)]);

      // Settle: pull, resolve and commit each copy until both are clean and current.
      for (let round = 0; round < 12; round++) {
        let clean = true;
        for (const [served, copy] of [
          [one, c1],
          [two, c2],
        ] as const) {
          resolveMarkers(copy);
          const committed = await tool(served, "notes_commit", { path: copy, message: "settle" });
          if (committed.isError || (committed.structured["files"] as unknown[]).length > 0)
            clean = false;
          const pulled = await tool(served, "notes_pull", { path: copy });
          if (pulled.isError || (pulled.structured["files"] as unknown[]).length > 0) clean = false;
        }
        if (clean) break;
      }
      const c3 = path.join(workspace, "c3");
      const fresh = await tool(one, "notes_pull", { path: c3 });
      expect(fresh.isError).toBe(false);

      const swapped = JSON.parse(fs.readFileSync(path.join(reports, "swapper.json"), "utf8")) as {
        counts: {
          swaps: number;
          escapes: number;
          movedOut: number;
          undone: number;
          undoneLate: number;
        };
        escapes: unknown[];
      };
      const edits = [1, 2].map(
        (n) =>
          JSON.parse(fs.readFileSync(path.join(reports, `editor${n}.json`), "utf8")) as {
            written: string[];
            deleted: string[];
          },
      );

      // Nothing outside the workspace root changed; no directory moved out of it was written.
      const outsideAfter = snapshot(outside);
      const changedOutside = Object.keys({ ...outsideBefore, ...outsideAfter }).filter(
        (key) => outsideBefore[key] !== outsideAfter[key],
      );
      expect(fs.readdirSync(sandbox.root).sort()).toEqual([...rootBefore, "reports"].sort());
      expect(fs.readdirSync(movedOut)).toEqual([]);
      const escapes = changedOutside.length + swapped.counts.escapes;

      // Every token saved is in the final notebook or still in a copy.
      const everywhere = [c1, c2, c3].map(allText).join("\n");
      const deleted = new Set(edits.flatMap((e) => e.deleted));
      const lost = edits
        .flatMap((e) => e.written)
        .filter((t) => !deleted.has(t) && !everywhere.includes(t));

      const summary = [...outcomes].map(([k, v]) => `${k}=${v}`).join(" ");
      console.log(`outcomes: ${summary}`);
      for (const [key, example] of examples) console.log(`  ${key}: ${example}`);
      console.log(
        `edits=${edits.reduce((n, e) => n + e.written.length, 0)} movedOut=${swapped.counts.movedOut} undone=${swapped.counts.undone} undoneLate=${swapped.counts.undoneLate}`,
      );
      console.log(
        `calls=${calls} swaps=${swapped.counts.swaps} escapes=${escapes} lost=${lost.length}`,
      );
      if (escapes > 0)
        console.log(
          `escaped: ${JSON.stringify({ changedOutside, moved: swapped.escapes }).slice(0, 4000)}`,
        );
      if (process.env["QUIRE_RACE_DEBUG"] !== undefined) {
        fs.writeFileSync("/tmp/race-one.log", one.stderr());
        fs.writeFileSync("/tmp/race-two.log", two.stderr());
        fs.writeFileSync("/tmp/race-lost.json", JSON.stringify(lost));
        fs.copyFileSync(path.join(reports, "editor1.json"), "/tmp/race-editor1.json");
        fs.copyFileSync(path.join(reports, "editor2.json"), "/tmp/race-editor2.json");
        for (const [n, copy] of [
          ["c1", c1],
          ["c2", c2],
          ["c3", c3],
        ] as const)
          fs.writeFileSync(`/tmp/race-${n}.json`, JSON.stringify(snapshot(copy)));
      }
      expect(changedOutside).toEqual([]);
      expect(swapped.counts.escapes).toBe(0);
      expect(lost.slice(0, 20)).toEqual([]);
      expect(calls).toBeGreaterThanOrEqual(4 * rounds);
      expect(swapped.counts.swaps).toBeGreaterThan(0);
    },
  );
});
