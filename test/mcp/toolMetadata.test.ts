/**
 * SPEC §12: both tools carry a title and truthful behaviour hints, and the descriptions
 * and instructions stay under 2,048 characters however many path-set entries are
 * configured, while every result's arrays still carry the sets whole.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  advertisedTextLimit,
  commitDescription,
  describeCommit,
  describePull,
  instructions,
  pathSetSentences,
  pullDescription,
} from "../../src/app/mcp/descriptions.js";
import { toolDefinitions } from "../../src/app/mcp/server.js";
import { noPathSets, type PathSets } from "../../src/domain/pathSets.js";
import { type Harness, startHarness } from "./harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const entries = (prefix: string, count: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, i) => `${prefix}/section-${String(i).padStart(5, "0")}`);

const surfaces = (sets: PathSets): ReadonlyArray<string> => [
  describePull(sets),
  describeCommit(sets),
  instructions("/home/someone/notebook", sets),
];

describe("titles and annotations", () => {
  it("both tools have a title and all four hints, with the documented values", () => {
    const [pull, commit] = toolDefinitions(noPathSets);
    expect(pull).toMatchObject({
      name: "notes_pull",
      title: "Pull the shared notebook",
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    });
    expect(commit).toMatchObject({
      name: "notes_commit",
      title: "Commit notebook changes",
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    });
  });

  it("a client sees them over MCP", async () => {
    harness = await startHarness();
    const { tools } = await harness.client.listTools();
    expect(tools.map((tool) => [tool.name, tool.title, tool.annotations])).toEqual(
      toolDefinitions(noPathSets).map((tool) => [tool.name, tool.title, tool.annotations]),
    );
  });
});

describe("advertised text stays under 2,048 characters", () => {
  it("short sets are named in full, exactly as before", () => {
    const sets = { writable: ["notes"], readOnly: ["notes/fixed"] };
    expect(describePull(sets)).toBe([pullDescription, ...pathSetSentences(sets)].join(" "));
    expect(describeCommit(sets)).toBe([commitDescription, ...pathSetSentences(sets)].join(" "));
    expect(describePull(sets)).not.toMatch(/more|entries/);
  });

  it.each([
    ["a long writable set", { writable: entries("w", 5_000), readOnly: [] }],
    ["a long read-only set", { writable: [], readOnly: entries("r", 5_000) }],
    ["two long sets", { writable: entries("w", 800), readOnly: entries("r", 900) }],
    ["one entry longer than the limit", { writable: ["x".repeat(3_000)], readOnly: ["b"] }],
  ])("%s: every surface fits, names what fits and counts the rest", (_, sets) => {
    for (const text of surfaces(sets)) {
      expect(text.length).toBeLessThanOrEqual(advertisedTextLimit);
      if (sets.writable.length > 0) expect(text).toContain("Writable paths: ");
      if (sets.readOnly.length > 0) expect(text).toContain("Read-only paths: ");
      expect(text).toMatch(
        /(more|entry|entries) \(every result's (writable|readOnly) array lists (it|them all)\)/,
      );
      // The consequence sentences survive whole.
      expect(text).toContain("reports READ_ONLY_PATH;");
    }
  });

  it("names as many entries as fit, from the start of the sorted set, and counts the rest exactly", () => {
    const sets = { writable: entries("w", 5_000), readOnly: [] };
    const text = describePull(sets);
    const named = [...text.matchAll(/`(w\/section-\d+)`/g)].map((match) => match[1]);
    expect(named.length).toBeGreaterThan(10);
    expect(named).toEqual(sets.writable.slice(0, named.length));
    expect(text).toContain(` and ${5_000 - named.length} more (every result's writable array`);
    // One more named entry would not have fitted.
    expect(text.length + `\`${sets.writable[named.length]}\`, `.length).toBeGreaterThan(
      advertisedTextLimit,
    );
  });

  it("two long sets take turns, so neither hides the other", () => {
    const text = describeCommit({ writable: entries("w", 800), readOnly: entries("r", 900) });
    const writable = [...text.matchAll(/`w\//g)].length;
    const readOnly = [...text.matchAll(/`r\//g)].length;
    expect(writable).toBeGreaterThan(3);
    expect(Math.abs(writable - readOnly)).toBeLessThanOrEqual(1);
  });

  it("the results still carry every entry", async () => {
    const sets = { writable: entries("w", 3_000), readOnly: [] };
    harness = await startHarness({}, sets);
    const { tools } = await harness.client.listTools();
    for (const tool of tools)
      expect(tool.description?.length).toBeLessThanOrEqual(advertisedTextLimit);
    expect(harness.client.getInstructions()?.length).toBeLessThanOrEqual(advertisedTextLimit);
    const result = await harness.client.callTool({ name: "notes_pull" });
    expect((result.structuredContent as { writable: ReadonlyArray<string> }).writable).toEqual(
      sets.writable,
    );
  });
});
