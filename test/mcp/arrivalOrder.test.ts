/**
 * Calls on one copy run in the order they arrived (src/app/mcp/arrivalOrder.ts): a
 * client that sends notes_pull and then notes_commit without waiting must not see the
 * commit overtake the pull; calls on other copies still run side by side.
 */
import { Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { arrivalKey, makeArrivalOrder } from "../../src/app/mcp/arrivalOrder.js";
import { type Harness, defaultReport, notebookDirectory, startHarness } from "./harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A harness whose pull takes a while and whose commit does not, logging both ends. */
const startTimed = async (events: Array<string>) => {
  harness = await startHarness({
    pull: (request) =>
      Effect.sync(() => events.push(`pull ${request.path ?? ""} start`)).pipe(
        Effect.zipRight(Effect.sleep("40 millis")),
        Effect.zipRight(Effect.sync(() => events.push(`pull ${request.path ?? ""} end`))),
        Effect.as(defaultReport(request.path)),
      ),
    commit: (request) =>
      Effect.sync(() => events.push(`commit ${request.path ?? ""}`)).pipe(
        Effect.as(defaultReport(request.path)),
      ),
  });
  return harness;
};

describe("calls in flight on one copy", () => {
  it("a commit sent right after a pull of the same copy starts only once the pull has ended", async () => {
    const events: Array<string> = [];
    const h = await startTimed(events);
    const answers = await Promise.all([
      h.client.callTool({ name: "notes_pull", arguments: { path: "/w/a" } }),
      h.client.callTool({ name: "notes_commit", arguments: { path: "/w/a", message: "m" } }),
      h.client.callTool({ name: "notes_pull", arguments: { path: "/w/a" } }),
      h.client.callTool({ name: "notes_commit", arguments: { path: "/w/a", message: "n" } }),
    ]);
    expect(answers.map((answer) => answer.isError === true)).toEqual([false, false, false, false]);
    expect(events).toEqual([
      "pull /w/a start",
      "pull /w/a end",
      "commit /w/a",
      "pull /w/a start",
      "pull /w/a end",
      "commit /w/a",
    ]);
  });

  it("a commit spelling the copy differently (trailing slash, `//`, `..`) still waits for the pull", async () => {
    const events: Array<string> = [];
    const h = await startTimed(events);
    await Promise.all([
      h.client.callTool({ name: "notes_pull", arguments: { path: "/w/a" } }),
      h.client.callTool({ name: "notes_commit", arguments: { path: "/w//a/", message: "m" } }),
      h.client.callTool({ name: "notes_pull", arguments: {} }),
      h.client.callTool({
        name: "notes_commit",
        arguments: { path: `${notebookDirectory}/../notebook/`, message: "n" },
      }),
    ]);
    expect(events.indexOf("commit /w//a/")).toBeGreaterThan(events.indexOf("pull /w/a end"));
    expect(events.indexOf(`commit ${notebookDirectory}/../notebook/`)).toBeGreaterThan(
      events.indexOf("pull  end"),
    );
  });

  it("calls on different copies (or without a path) do not wait for each other", async () => {
    const events: Array<string> = [];
    const h = await startTimed(events);
    await Promise.all([
      h.client.callTool({ name: "notes_pull", arguments: { path: "/w/a" } }),
      h.client.callTool({ name: "notes_commit", arguments: { path: "/w/b", message: "m" } }),
      h.client.callTool({ name: "notes_commit", arguments: { message: "m" } }),
    ]);
    expect(events.indexOf("commit /w/b")).toBeLessThan(events.indexOf("pull /w/a end"));
    expect(events.indexOf("commit ")).toBeLessThan(events.indexOf("pull /w/a end"));
  });
});

describe("arrival order", () => {
  it("a call that ends (or is cancelled) while an earlier one runs keeps the later ones after both", async () => {
    const order = makeArrivalOrder();
    const seen: Array<string> = [];
    const first = order.enter("k");
    const second = order.enter("k");
    const third = order.enter("k");
    void third.ready.then(() => seen.push("third"));
    second.done(); // cancelled while waiting
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(seen).toEqual([]);
    first.done();
    await third.ready;
    expect(seen).toEqual(["third"]);
    third.done();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(order.size()).toBe(0);
  });

  it("a call that joins after a cancelled one still waits for the call that runs", async () => {
    const order = makeArrivalOrder();
    const seen: Array<string> = [];
    const first = order.enter("k");
    const second = order.enter("k");
    second.done(); // cancelled while waiting; the first still runs
    await new Promise((resolve) => setTimeout(resolve, 5));
    const third = order.enter("k");
    void third.ready.then(() => seen.push("third"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(seen).toEqual([]);
    first.done();
    await third.ready;
    expect(seen).toEqual(["third"]);
    third.done();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(order.size()).toBe(0);
  });

  it("keys are the path tidied lexically; anything else is the notebook directory's", () => {
    const home = "/w/notebook";
    expect(arrivalKey({ path: "/w/a" }, home)).toBe("/w/a");
    for (const spelling of ["/w/a/", "/w//a", "/w/./a", "/w/x/../a", "//w/a///"])
      expect(arrivalKey({ path: spelling }, home)).toBe("/w/a");
    expect(arrivalKey({ path: "/w/notebook/" }, home)).toBe("");
    expect(arrivalKey({ path: "" }, home)).toBe("");
    expect(arrivalKey({ path: "notes" }, home)).toBe("notes");
    expect(arrivalKey({ path: 3 }, home)).toBe("");
    expect(arrivalKey(undefined, home)).toBe("");
    expect(arrivalKey(["path"], home)).toBe("");
  });
});
