/**
 * quire's library API (SPEC §10): the Effect services and layers, the ports and
 * adapters to build them from, and a Promise facade (`openNotebook`).
 */
export {
  Notebook,
  type NotebookService,
  type SyncReport,
  type Author,
  type PullRequest,
  type CommitRequest,
} from "./app/Notebook.js";
export { notebookLayer, makeNotebook, type NotebookOptions } from "./app/usecases/notebookLayer.js";
export { probeStore } from "./app/usecases/probe.js";
export {
  openNotebook,
  type OpenNotebookOptions,
  type QuireNotebook,
  type CallResult,
} from "./app/library.js";
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
export * as s3ObjectStore from "./adapters/s3ObjectStore.js";
export * as minioObjectStore from "./adapters/minioObjectStore.js";
export * as nodeFileSystem from "./adapters/nodeFileSystem.js";
export * as memFileSystem from "./adapters/memFileSystem.js";
export * as idGenerator from "./adapters/idGenerator.js";
export { DomainError, domainError, type ErrorCode } from "./domain/errors.js";
export {
  errorEnvelope,
  successEnvelope,
  type ErrorStructured,
  type SuccessStructured,
} from "./domain/envelope.js";
