/**
 * Local stand-ins for broken stores: s3rver (a fake S3 that ignores conditional
 * headers), a closed loopback port, and a port that accepts connections but never
 * answers. Each is a scoped Effect resource.
 */
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect } from "effect";
import S3rver from "s3rver";

/** s3rver's built-in credentials. */
export const s3rverCredentials = {
  AWS_ACCESS_KEY_ID: "S3RVER",
  AWS_SECRET_ACCESS_KEY: "S3RVER",
} as const;

/** Starts s3rver on a free loopback port with `bucket`; yields its endpoint. */
export const s3rver = (bucket: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const directory = mkdtempSync(join(tmpdir(), "quire-s3rver-"));
      const server = new S3rver({
        address: "127.0.0.1",
        port: 0,
        silent: true,
        directory,
        vhostBuckets: false,
        configureBuckets: [{ name: bucket }],
      });
      const address = await server.run();
      return { server, directory, endpoint: `http://127.0.0.1:${address.port}` };
    }),
    ({ server, directory }) =>
      Effect.promise(async () => {
        await server.close();
        rmSync(directory, { recursive: true, force: true });
      }),
  ).pipe(Effect.map(({ endpoint }) => endpoint));

/** A loopback endpoint with nothing listening (a port that was free a moment ago). */
export const closedPort = Effect.promise(
  () =>
    new Promise<string>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        const port = typeof address === "object" && address !== null ? address.port : 0;
        server.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    }),
);

/** A loopback endpoint that accepts connections and reads requests but never answers. */
export const silentServer = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ server: net.Server; sockets: Set<net.Socket>; endpoint: string }>(
        (resolve, reject) => {
          const sockets = new Set<net.Socket>();
          const server = net.createServer((socket) => {
            sockets.add(socket);
            socket.on("data", () => undefined);
            socket.on("error", () => undefined);
            socket.on("close", () => sockets.delete(socket));
          });
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => {
            const address = server.address();
            const port = typeof address === "object" && address !== null ? address.port : 0;
            resolve({ server, sockets, endpoint: `http://127.0.0.1:${port}` });
          });
        },
      ),
  ),
  ({ server, sockets }) =>
    Effect.promise(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => resolve());
        }),
    ),
).pipe(Effect.map(({ endpoint }) => endpoint));
