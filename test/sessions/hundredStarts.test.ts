/**
 * Leftovers of ended sessions, at scale (`npm run test:sessions`; too slow for
 * `npm test`, whose test/cli/sessionLeftovers.test.ts covers each case once): 100
 * `serve` starts, each doing one kind of work in its session directory and stopped in
 * one of the ways a host stops a server (stdin closed, SIGTERM, SIGINT, stdin closed
 * then SIGTERM, every pipe closed then SIGTERM, SIGKILL), every combination of the two
 * several times. After one more start, the temporary directory holds exactly the session
 * directories with unpublished work, each intact, and the private root nothing of any
 * other session.
 */
import { readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import {
  privateLeftovers,
  type ServeSandbox,
  type SessionServe,
  sessionDirectories,
  servingIn,
  startSessionServe,
  stopStatuses,
  stopWays,
} from "../helpers/sessionServe.js";

const starts = 100;
const sandbox = makeSandbox();
const serving: ServeSandbox = servingIn(sandbox);
beforeAll(assertBuilt);
afterAll(() => rmSync(sandbox.root, { recursive: true, force: true }));

/** What a session does before it is stopped; `true` when that leaves unpublished work. */
const works: ReadonlyArray<
  readonly [string, (server: SessionServe, i: number) => Promise<boolean>]
> = [
  ["nothing", async () => false],
  [
    "a note committed",
    async (server, i) => {
      writeFileSync(path.join(server.notebook(), `s${i}.md`), `session ${i}\n`);
      expect(await server.call("notes_commit", { message: `s${i}` })).toMatchObject({
        code: "OK",
      });
      return false;
    },
  ],
  [
    "a new note not committed",
    async (server, i) => {
      writeFileSync(path.join(server.notebook(), `draft-${i}.md`), `draft ${i}\n`);
      return true;
    },
  ],
  [
    "a pulled note edited",
    async (server, i) => {
      const note = path.join(server.notebook(), "shared.md");
      writeFileSync(note, `${readFileSync(note, "utf8")}edit ${i}\n`);
      return true;
    },
  ],
  [
    "a pulled note deleted",
    async (server) => {
      unlinkSync(path.join(server.notebook(), "shared.md"));
      return true;
    },
  ],
];

it(`${starts} serve starts and stops in every way leave only the sessions with unpublished work`, async () => {
  // A note every session pulls (the edit and delete works need one).
  const seed = await startSessionServe(serving);
  writeFileSync(path.join(seed.notebook(), "shared.md"), "shared\n");
  expect(await seed.call("notes_commit", { message: "shared" })).toMatchObject({ code: "OK" });
  expect(await seed.stop("stdin")).toBe(0);

  /** Session directory → the files it must still hold, for those with unpublished work. */
  const kept = new Map<string, Map<string, string>>();
  for (let i = 0; i < starts; i++) {
    const how = stopWays[i % stopWays.length] ?? "stdin";
    const chosen = works[i % works.length];
    if (chosen === undefined) throw new Error("no work");
    const [what, work] = chosen;
    const server = await startSessionServe(serving);
    const unpublished = await work(server, i);
    const directory = path.dirname(server.notebook());
    if (unpublished) {
      const files = new Map<string, string>();
      for (const name of ["shared.md", `draft-${i}.md`]) {
        try {
          files.set(name, readFileSync(path.join(server.notebook(), name), "utf8"));
        } catch {
          // Not there in this work.
        }
      }
      kept.set(path.basename(directory), files);
    }
    const status = await server.stop(how);
    expect(stopStatuses(how), `start ${i}: ${what}, stopped by ${how}`).toContain(status);
  }

  // A start killed while its reaper was creating a dead session's lock file, before it
  // wrote its name in it, left a file that reads as being written for 5 s (the port's
  // grace): a start within those 5 s leaves that session to the next one.
  await new Promise((resolve) => setTimeout(resolve, 5_500));
  // One more start reaps what the killed ones left; then it ends as a host ends it.
  const last = await startSessionServe(serving, { LOG_LEVEL: "cli=debug,info" });
  await last.waitForStderr('msg="reaped ended sessions"');
  expect(await last.stop("stdin")).toBe(0);

  expect(sessionDirectories(serving.tmp)).toEqual([...kept.keys()].sort());
  for (const [directory, files] of kept) {
    for (const [name, text] of files)
      expect(readFileSync(path.join(serving.tmp, directory, "notebook", name), "utf8")).toBe(text);
  }
  // The private root: each kept session's copy and record, nothing of any other session.
  const leftovers = privateLeftovers(serving.privateRoot);
  expect(leftovers.copies).toHaveLength(kept.size);
  // At most the record of each kept copy's store (a session killed before its first pull
  // has none).
  expect(leftovers.owners.length).toBeLessThanOrEqual(kept.size);
  expect(leftovers.sessions).toEqual(
    [...kept.keys()].map((directory) => `${directory.slice("quire-".length)}.json`).sort(),
  );
}, 1_800_000);
