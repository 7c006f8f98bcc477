import { defineConfig } from "vitest/config";

const setupFiles = ["test/setup/captureWarnings.ts"];

// Extra unit-suite exclusions, comma-separated globs (vitest's --exclude does not reach a
// project's own list). .ci/run uses it to run the two long single-process checks on the
// machine's Node only.
const extraUnitExclusions = (process.env["QUIRE_UNIT_EXCLUDE"] ?? "")
  .split(",")
  .map((glob) => glob.trim())
  .filter((glob) => glob !== "");

export default defineConfig({
  test: {
    // Console output of passing tests (injected failures log at ERROR on purpose) is
    // captured and dropped; a failing test shows its own.
    silent: "passed-only",
    projects: [
      {
        test: {
          name: "unit",
          setupFiles,
          include: ["test/**/*.test.ts"],
          exclude: [
            "test/s3/**",
            "test/torture/**",
            "test/clients/**",
            "test/races/**",
            "test/fuzz/**",
            "test/sessions/**",
            "test/disk/**",
            ...extraUnitExclusions,
          ],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "torture",
          setupFiles,
          include: ["test/torture/**/*.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "races",
          setupFiles,
          include: ["test/races/**/*.test.ts"],
          testTimeout: 1_200_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // Needs root: it mounts a small tmpfs (npm run test:disk, run by CI).
          name: "disk",
          setupFiles,
          include: ["test/disk/**/*.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "sessions",
          setupFiles,
          include: ["test/sessions/**/*.test.ts"],
          testTimeout: 1_800_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "fuzz",
          setupFiles,
          include: ["test/fuzz/**/*.test.ts"],
          testTimeout: 900_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // Real MCP clients, installed from the npm registry (npm run test:clients).
          name: "clients",
          setupFiles,
          include: ["test/clients/**/*.test.ts"],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          // One file at a time: each installs and runs large clients.
          poolOptions: { forks: { singleFork: true } },
        },
      },
      {
        test: {
          name: "s3",
          setupFiles,
          include: ["test/s3/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
