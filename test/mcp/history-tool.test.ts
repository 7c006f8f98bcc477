/**
 * `serve --history-tool` (SPEC §11) through real `quire serve` processes: three tools,
 * the first two exactly as without the flag; `notes_log` lists the publications with
 * their authors (the client's clientInfo, or `--author` beside it), filters by
 * generation and file, and decodes its arguments strictly. Without the flag there is no
 * such tool (the golden test, test/serve/golden.test.ts, proves the rest unchanged).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, makeWorld, type World } from "../helpers/cli.js";
import { call, serve, type Served } from "../serve/serve.js";

let world: World;
const servers: Served[] = [];

beforeAll(() => {
  assertBuilt();
  world = makeWorld();
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
  world?.cleanup();
});

const start = async (extra: ReadonlyArray<string>): Promise<Served> => {
  const served = await serve(
    [
      "--store",
      `file:${world.store}`,
      "--private-root",
      world.privateRoot,
      "--workspace-root",
      world.ws,
      ...extra,
    ],
    { env: world.env, cwd: world.ws },
  );
  servers.push(served);
  return served;
};

describe("serve --history-tool", () => {
  it(
    "adds notes_log beside the two tools, unchanged; it lists, filters and refuses",
    { timeout: 120_000 },
    async () => {
      const plain = await start([]);
      const withLog = await start(["--history-tool", "--author", "planner"]);
      const [plainTools, logTools] = await Promise.all([
        plain.client.listTools(),
        withLog.client.listTools(),
      ]);
      expect(logTools.tools.map((t) => t.name)).toEqual([
        "notes_pull",
        "notes_commit",
        "notes_log",
      ]);
      expect(JSON.stringify(logTools.tools.slice(0, 2))).toBe(JSON.stringify(plainTools.tools));
      const logTool = logTools.tools[2];
      expect(logTool?.annotations).toEqual({
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      });
      expect(logTool?.inputSchema).toMatchObject({ type: "object", additionalProperties: false });

      // Without the flag there is no such tool.
      const absent = await call(plain, "notes_log", {});
      expect(absent.isError).toBe(true);
      expect(absent.structured).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "INVALID_ARGUMENT",
      });
      expect(String(absent.structured["message"])).toContain(
        "the tools are notes_pull and notes_commit",
      );

      const copy = path.join(world.ws, "c");
      expect((await call(withLog, "notes_pull", { path: copy })).isError).toBe(false);
      for (const [i, file] of ["a.md", "b.md", "a.md"].entries()) {
        writeFileSync(path.join(copy, file), `v${i}\n`);
        const served = i === 1 ? plain : withLog;
        expect((await call(served, "notes_commit", { path: copy, message: `m${i}` })).isError).toBe(
          false,
        );
      }
      const all = await call(withLog, "notes_log", { path: copy });
      expect(all.isError).toBe(false);
      const publications = all.structured["publications"] as Array<Record<string, unknown>>;
      expect(all.structured).toMatchObject({ code: "OK", path: copy, generation: 3 });
      expect(publications.map((p) => [p["generation"], p["message"], p["author"]])).toEqual([
        [3, "m2", { name: "planner", version: "issue4-test 4.0.0" }],
        [2, "m1", { name: "issue4-test", version: "4.0.0" }],
        [1, "m0", { name: "planner", version: "issue4-test 4.0.0" }],
      ]);
      expect(all.text).toContain("generation 3");
      expect(all.text).toContain("M a.md  +1 -1");
      expect(JSON.stringify(all.structured)).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-7/);

      const since = await call(withLog, "notes_log", { path: copy, sinceGeneration: 1 });
      expect((since.structured["publications"] as unknown[]).length).toBe(2);
      // Above the notebook's generation: says where the notebook is, not a bare "no publications".
      const above = await call(withLog, "notes_log", { path: copy, sinceGeneration: 9 });
      expect(above.structured["publications"]).toEqual([]);
      expect(above.text).toBe(
        "no publications after generation 9: the notebook is at generation 3\n",
      );
      const file = await call(withLog, "notes_log", { path: copy, file: "b.md" });
      expect(
        (file.structured["publications"] as Array<{ generation: number }>).map((p) => p.generation),
      ).toEqual([2]);
      // A name no publication changed (misspelt: case matters) is named, not a bare "no publications".
      const typo = await call(withLog, "notes_log", { path: copy, file: "B.md" });
      expect(typo.structured["publications"]).toEqual([]);
      expect(typo.text).toMatch(
        /^no publications changed B\.md or a file below it: the notebook is at generation 3 /,
      );
      const one = await call(withLog, "notes_log", { path: copy, limit: 1 });
      expect((one.structured["publications"] as unknown[]).length).toBe(1);

      for (const bad of [
        { limit: 0 },
        { limit: 1001 },
        { limit: 1.5 },
        { limit: "3" },
        { sinceGeneration: -1 },
        { file: "/abs.md" },
        { file: "" },
        { file: 3 },
        { path: "relative" },
        { nope: 1 },
        JSON.parse('{"__proto__": {"limit": 2}}') as Record<string, unknown>,
      ]) {
        const refused = await call(withLog, "notes_log", { path: copy, ...bad });
        expect(refused.isError, JSON.stringify(bad)).toBe(true);
        expect(refused.structured["code"], JSON.stringify(bad)).toBe("INVALID_REQUEST");
      }
      const notPulled = await call(withLog, "notes_log", { path: path.join(world.ws, "never") });
      expect(notPulled.structured).toMatchObject({ code: "INVALID_REQUEST", reason: "NOT_PULLED" });

      // `~` is an ordinary notebook segment: a file below it is asked for as any other.
      mkdirSync(path.join(copy, "~"));
      writeFileSync(path.join(copy, "~", "n.md"), "tilde\n");
      expect((await call(withLog, "notes_commit", { path: copy, message: "m3" })).isError).toBe(
        false,
      );
      const tilde = await call(withLog, "notes_log", { path: copy, file: "~/n.md" });
      expect(tilde.isError, JSON.stringify(tilde.structured)).toBe(false);
      expect(
        (tilde.structured["publications"] as Array<{ generation: number }>).map(
          (p) => p.generation,
        ),
      ).toEqual([4]);
    },
  );

  it(
    "a refused file argument's advice names MCP tools, never a quire command an agent cannot run",
    { timeout: 120_000 },
    async () => {
      const served = await start(["--history-tool"]);
      const copy = path.join(world.ws, "advice");
      expect((await call(served, "notes_pull", { path: copy })).isError).toBe(false);
      for (const file of ["../x.md", "a//b.md", ".", "./"]) {
        const refused = await call(served, "notes_log", { path: copy, file });
        expect(refused.structured, file).toMatchObject({
          code: "INVALID_REQUEST",
          reason: "INVALID_ARGUMENT",
        });
        const message = String(refused.structured["message"]);
        expect(message, file).not.toMatch(/\bquire [a-z]/);
        expect(message, file).toContain("notes_log");
        expect(refused.text, file).not.toMatch(/\bquire [a-z]/);
      }
    },
  );
});
