/**
 * quire's library API (SPEC §10): the Effect services and layers, the ports and
 * adapters to build them from, and a Promise facade (`openNotebook`). The in-memory
 * file system for tests (memfs) is in the `quire-mcp/testing` entry, so this one's
 * declarations need no test-only types; the S3 and MinIO adapters load on demand.
 */
export {
  Notebook,
  type NotebookService,
  type SyncReport,
  type Author,
  type PullRequest,
  type CommitRequest,
} from "./app/Notebook.js";
export { notebookLayer, makeNotebook } from "./app/usecases/notebookLayer.js";
export type { NotebookOptions } from "./app/usecases/shared/notebookOptions.js";
export { probeStore } from "./app/usecases/commit/probe.js";
export {
  openNotebook,
  type OpenNotebookOptions,
  type QuireNotebook,
  type CallResult,
  type LogResult,
  type RemoteOptions,
} from "./app/library.js";
export type { FileRecord, HistoryLog, LogRequest, PublicationRecord } from "./domain/history.js";
export type { LogJson } from "./domain/logReport.js";
export {
  ObjectStore,
  StoreError,
  type ObjectStoreService,
  type PutCondition,
} from "./ports/ObjectStore.js";
export { FileSystem, FsError, type FileSystemService } from "./ports/FileSystem.js";
export { IdGenerator, type IdGeneratorService } from "./ports/IdGenerator.js";
export * as fileObjectStore from "./adapters/fileObjectStore.js";
export * as memoryObjectStore from "./adapters/memoryObjectStore.js";
export * as nodeFileSystem from "./adapters/nodeFileSystem.js";
export type { RemoteStoreOptions } from "./adapters/remoteStoreSupport.js";
/**
 * The S3 adapter (`layer(options)` over @aws-sdk/client-s3), loaded on first use:
 * importing this package loads neither the AWS SDK nor minio.
 */
export const loadS3ObjectStore = () => import("./adapters/s3ObjectStore.js");
/** The MinIO adapter (`layer(options)` over the minio client), loaded on first use. */
export const loadMinioObjectStore = () => import("./adapters/minioObjectStore.js");
export * as idGenerator from "./adapters/idGenerator.js";
export { DomainError, domainError, type ErrorCode } from "./domain/errors.js";
export {
  errorEnvelope,
  successEnvelope,
  type ErrorStructured,
  type SuccessStructured,
} from "./domain/envelope.js";
