/**
 * The ObjectStore contract suite against the real S3 server, through the S3 adapter
 * and the MinIO adapter. Every test gets a fresh random prefix; the concurrency tests
 * use separate clients that alternate between the two adapters, so ETags and
 * conditional writes are checked across an S3 client and a MinIO client.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect";
import * as MinioStore from "../../src/adapters/minioObjectStore.js";
import * as S3Store from "../../src/adapters/s3ObjectStore.js";
import { ObjectStore, type ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { runObjectStoreContract } from "../contract/objectStoreContract.js";
import { freshPrefix, s3TestEnv, storeOptions } from "./env.js";

const env = s3TestEnv();

type StoreLayer = (options: S3Store.S3StoreOptions) => Layer.Layer<ObjectStore>;

/** Builds a client of `layer` under `prefix`, owned by `scope`. */
const open = (
  layer: StoreLayer,
  prefix: string,
  scope: Scope.CloseableScope,
): Promise<ObjectStoreService> =>
  Effect.runPromise(
    Layer.buildWithScope(layer(storeOptions(env, prefix)), scope).pipe(
      Effect.map((context) => Context.get(context, ObjectStore)),
    ),
  );

/** Deletes everything under the store's prefix. */
const empty = (store: ObjectStoreService): Promise<void> =>
  Effect.runPromise(
    Effect.flatMap(store.list(""), (objects) =>
      Effect.forEach(objects, (object) => store.delete(object.key), {
        concurrency: 8,
        discard: true,
      }),
    ),
  );

const contractFor = (name: string, primary: StoreLayer, other: StoreLayer) => {
  // The store the latest makeStore call created: concurrentClients opens more clients on it.
  let latest: { prefix: string; scope: Scope.CloseableScope; opened: number } | undefined;

  runObjectStoreContract(
    `${name} on ${env.endpoint}`,
    async () => {
      const prefix = freshPrefix(name);
      const scope = await Effect.runPromise(Scope.make());
      const store = await open(primary, prefix, scope);
      latest = { prefix, scope, opened: 0 };
      return {
        store,
        cleanup: async () => {
          try {
            await empty(store);
          } finally {
            await Effect.runPromise(Scope.close(scope, Exit.void));
          }
        },
      };
    },
    {
      concurrentClients: async () => {
        if (latest === undefined) throw new Error("concurrentClients called before makeStore");
        latest.opened += 1;
        // Alternate adapters: odd clients are the other adapter, even ones this one.
        return open(latest.opened % 2 === 1 ? other : primary, latest.prefix, latest.scope);
      },
    },
  );
};

contractFor("s3", S3Store.layer, MinioStore.layer);
contractFor("minio", MinioStore.layer, S3Store.layer);
