/**
 * The opt-in memory probe of `serve` (docs/logging.md "Memory samples"): with
 * QUIRE_MEMORY_SAMPLES=1, SIGUSR2 yields one `memory after gc` debug record and the
 * server goes on serving.
 */
import { afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { assertBuilt, makeSandbox, runQuire, type Sandbox } from "./quireProcess.js";
import { servingIn, startSessionServe } from "../helpers/sessionServe.js";

let sandbox: Sandbox;
beforeAll(assertBuilt);
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

it("SIGUSR2 logs the heap after a full collection, and the server keeps serving", async () => {
  const server = await startSessionServe(servingIn(sandbox), {
    QUIRE_MEMORY_SAMPLES: "1",
    LOG_LEVEL: "memory=debug,info",
  });
  try {
    for (let sample = 1; sample <= 2; sample++) {
      server.child.kill("SIGUSR2");
      await server.waitForStderr('msg="memory after gc"', sample);
      const record =
        server
          .stderr()
          .split("\n")
          .filter((line) => line.includes('msg="memory after gc"'))[sample - 1] ?? "";
      expect(record).toMatch(/level=debug module=memory /);
      const field = (name: string) => Number(new RegExp(` ${name}=(\\d+)`).exec(record)?.[1]);
      expect(field("heapUsedBytes")).toBeGreaterThan(1_000_000);
      expect(field("codeBytes")).toBeGreaterThan(0);
      expect(field("codeBytes")).toBeLessThan(field("heapUsedBytes"));
      expect(field("rssBytes")).toBeGreaterThan(field("heapUsedBytes"));
      expect(field("externalBytes")).toBeGreaterThan(0);
      expect(field("arrayBuffersBytes")).toBeGreaterThanOrEqual(0);
      // Only the record's own fields: nothing of a call that ran before it.
      expect(record).not.toMatch(/diagnosticId=|tool=/);
    }
    expect(await server.call("notes_pull")).toMatchObject({ code: "OK" });
  } finally {
    expect(await server.stop("stdin")).toBe(0);
  }
});

it("QUIRE_MEMORY_SAMPLES takes 1/true/0/false; anything else is a configuration error", async () => {
  const result = await runQuire(["serve"], {
    cwd: sandbox.workspace,
    env: { ...sandbox.env, QUIRE_MEMORY_SAMPLES: "yes" },
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(/^quire: invalid configuration: .*QUIRE_MEMORY_SAMPLES/);
});
