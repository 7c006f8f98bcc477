import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/s3/**", "test/torture/**", "test/sessions/**"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "torture",
          include: ["test/torture/**/*.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "sessions",
          include: ["test/sessions/**/*.test.ts"],
          testTimeout: 1_800_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "s3",
          include: ["test/s3/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
