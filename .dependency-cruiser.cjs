/** Layer direction of the hexagon (SPEC §1): domain is pure, ports depend only on domain, adapters never on app; and no module imports itself through others. */
module.exports = {
  forbidden: [
    {
      // A cycle makes a module's meaning depend on load order and hides which stage comes
      // first; type-only imports count too (tsPreCompilationDeps), as they couple as much.
      name: "no-circular",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "domain-is-pure",
      severity: "error",
      from: { path: "^src/domain" },
      to: {
        path: "^src/(ports|adapters|app)|^(node:)?(fs|fs/promises|child_process|net|http|https)$|@aws-sdk|minio|memfs",
      },
    },
    {
      name: "ports-depend-on-domain-only",
      severity: "error",
      from: { path: "^src/ports" },
      to: { path: "^src/(adapters|app)" },
    },
    {
      name: "adapters-never-import-app",
      severity: "error",
      from: { path: "^src/adapters" },
      to: { path: "^src/app" },
    },
    {
      name: "vendor-sdks-only-in-adapters",
      severity: "error",
      from: { pathNot: "^src/adapters" },
      to: {
        path: "@aws-sdk/client-s3|node_modules/minio|node_modules/memfs|^(node:)?fs(/promises)?$|^(node:)?net$",
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
  },
};
