/**
 * How long a stopping `serve` lets calls in flight finish: its own MCP calls and the
 * calls it runs for other serve processes (app/share) alike. Its own module, without the
 * MCP SDK, so the CLI can read it without loading the server.
 */
export const defaultGraceMs = 10_000;
