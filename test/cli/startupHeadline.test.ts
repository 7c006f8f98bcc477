/**
 * The line of a process that could not start says what the store answered: a store that
 * refused the credentials or whose endpoint is not TLS is not "unavailable" (which reads
 * as "wait and try again"); the code, reason and text after the headline stay the same.
 * Driven against a local HTTP server that refuses every request as S3 does.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type World, assertBuilt, makeWorld, runCli } from "../helpers/cli.js";

let server: Server;
let port: number;
beforeAll(async () => {
  assertBuilt();
  server = createServer((_request, response) => {
    response.writeHead(403, { "content-type": "application/xml" });
    response.end(
      '<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let world: World;
beforeEach(() => {
  world = makeWorld();
});
afterEach(() => world.cleanup());

const pullWith = (endpoint: string) =>
  runCli(world, ["pull", "a", "--store", "s3://bkt", "--endpoint", endpoint], {
    // No debug records: the line is all a failed start prints.
    env: {
      AWS_ACCESS_KEY_ID: "AKIAEXAMPLEEXAMPLE",
      AWS_SECRET_ACCESS_KEY: "secret-of-test",
      LOG_LEVEL: undefined,
    },
  });

describe("the startup line of a store that answered and refused", () => {
  it("says the store refused access", async () => {
    const result = await pullWith(`http://127.0.0.1:${port}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^quire: store refused access: INCOMPATIBLE_STORE · ACCESS_DENIED: [^\n]*\n$/,
    );
  });

  it("says the TLS handshake failed for an https endpoint on a plain-HTTP port", async () => {
    const result = await pullWith(`https://127.0.0.1:${port}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^quire: store TLS handshake failed: STORAGE_FAILURE · TLS_FAILED: [^\n]*\n$/,
    );
  });
});
