/**
 * `quire-mcp/testing`: adapters for tests of code that uses quire. The memfs-backed
 * FileSystem lives here rather than in the main entry, so that a project importing
 * `quire-mcp` needs no memfs types; the in-memory object store is in both.
 */
export * as memFileSystem from "./adapters/memFileSystem.js";
export * as memoryObjectStore from "./adapters/memoryObjectStore.js";
