/** The hint a CLI run adds below a PATH_OUTSIDE_ROOT error (run.ts, history.ts). */
import type { DomainError } from "../../domain/errors.js";
import type { WorkspaceConfig } from "../config.js";

/**
 * For a PATH outside the workspace root, one more line naming the root and how to change
 * it: a person running `quire pull ../notes` has usually never set a workspace root and
 * needs to learn that it defaults to the current directory. Empty for other errors.
 */
export const workspaceHint = (error: DomainError, workspace: WorkspaceConfig): string => {
  if (error.reason !== "PATH_OUTSIDE_ROOT" || workspace.kind !== "root") return "";
  if (!error.message.includes("workspace root")) return "";
  const origin = workspace.explicit ? "" : " (the current directory, by default)";
  return (
    `hint: the workspace root is ${workspace.root}${origin}; PATH must be at or below it. ` +
    "Run quire from a directory that holds PATH, or name one with --workspace-root DIR " +
    "(or QUIRE_WORKSPACE_ROOT).\n"
  );
};
