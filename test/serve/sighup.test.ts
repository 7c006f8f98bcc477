/**
 * SIGHUP (the terminal running `serve` closed, a session manager hanging up) stops the
 * server like SIGTERM: it ends its own session (removes its directory when everything
 * in it is published, keeps it otherwise) and exits 0. Node's default for SIGHUP once
 * killed it outright, leaving even a published session directory to a later start.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { servingIn, sessionDirectories, startSessionServe } from "../helpers/sessionServe.js";

const sandbox = makeSandbox();
const serving = servingIn(sandbox);
beforeAll(assertBuilt);
afterAll(() => rmSync(sandbox.root, { recursive: true, force: true }));

it("SIGHUP ends the session like SIGTERM: the published one is removed, the unpublished one kept", async () => {
  const published = await startSessionServe(serving);
  const unpublished = await startSessionServe(serving);
  const draft = path.join(unpublished.notebook(), "draft.md");
  writeFileSync(draft, "not committed\n");
  published.child.kill("SIGHUP");
  unpublished.child.kill("SIGHUP");
  expect(await published.exited).toBe(0);
  expect(await unpublished.exited).toBe(0);
  expect(published.stderr()).toContain("why=SIGHUP");
  expect(published.stderr()).toContain("removed the session directory");
  expect(unpublished.stderr()).toContain("kept the session directory");
  expect(existsSync(draft)).toBe(true);
  expect(sessionDirectories(serving.tmp)).toEqual([
    path.basename(path.dirname(unpublished.notebook())),
  ]);
}, 30_000);
