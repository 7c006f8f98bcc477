/**
 * With no path sets configured, what a real `quire serve` sends
 * for `tools/list` and the initialize `instructions` is exactly the checked-in golden
 * text (SPEC §2.2: byte-identical to a build without path-set support). The only
 * normalisation is the session notebook directory the instructions name, which is fresh
 * per process, replaced by `<NOTEBOOK_DIRECTORY>`.
 *
 * To accept a deliberate change of the wording, run with `UPDATE_GOLDEN=1` and review
 * the diff of `test/golden/`.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, makeWorld, type World } from "../helpers/cli.js";
import { call, serve, type Served } from "./serve.js";

const goldenDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../golden");
const toolsGolden = path.join(goldenDir, "tools-list.json");
const instructionsGolden = path.join(goldenDir, "instructions.txt");
const placeholder = "<NOTEBOOK_DIRECTORY>";
const update = process.env["UPDATE_GOLDEN"] === "1";

let world: World;
let served: Served;
let notebookDirectory: string;

beforeAll(async () => {
  assertBuilt();
  world = makeWorld();
  // No --workspace-root: the server makes its own session notebook directory.
  served = await serve(["--store", `file:${world.store}`, "--private-root", world.privateRoot], {
    env: world.env,
    cwd: world.ws,
  });
  const pulled = await call(served, "notes_pull");
  notebookDirectory = String(pulled.structured["path"]);
  // With no sets, the text item is exactly the directory.
  expect(pulled.text).toBe(notebookDirectory);
});

afterAll(async () => {
  await served?.close();
  if (world !== undefined) rmSync(world.root, { recursive: true, force: true });
});

/** The `result` of the server's answer to the request with method `method`'s id. */
const rawResult = (method: "initialize" | "tools/list"): Record<string, unknown> => {
  const answers = served.received.filter(
    (message): message is { jsonrpc: "2.0"; id: number; result: Record<string, unknown> } =>
      "result" in message,
  );
  // Requests go out in order with increasing ids: initialize is the first, tools/list a later one.
  const wanted =
    method === "initialize"
      ? answers.find((answer) => "protocolVersion" in answer.result)
      : answers.find((answer) => "tools" in answer.result);
  if (wanted === undefined) throw new Error(`no ${method} answer recorded`);
  return wanted.result;
};

describe("with no path sets, the advertised surfaces match the golden files", () => {
  it("tools/list is the golden JSON (same keys, order and strings)", async () => {
    await served.client.listTools();
    const tools = rawResult("tools/list");
    if (update) {
      writeFileSync(toolsGolden, `${JSON.stringify(tools, null, 2)}\n`);
    }
    const golden: unknown = JSON.parse(readFileSync(toolsGolden, "utf8"));
    // Serialised compactly both ways, so only the formatting of the golden file is free.
    expect(JSON.stringify(tools)).toBe(JSON.stringify(golden));
    expect(JSON.stringify(tools)).not.toMatch(/Writable paths|Read-only paths|READ_ONLY_PATH/);
  });

  it("the initialize instructions are the golden text, only the notebook directory normalised", () => {
    const instructions = rawResult("initialize")["instructions"];
    expect(typeof instructions).toBe("string");
    const text = String(instructions);
    expect(text.split(notebookDirectory)).toHaveLength(2);
    const normalised = text.replace(notebookDirectory, placeholder);
    if (update) writeFileSync(instructionsGolden, normalised);
    expect(normalised).toBe(readFileSync(instructionsGolden, "utf8"));
    expect(normalised).not.toMatch(/Writable paths|Read-only paths|READ_ONLY_PATH/);
  });
});
