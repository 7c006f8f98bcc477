/** The `-h` texts (printed on stdout, exit 0). */
import type { HelpTopic } from "../config.js";

const storeOptions = `Store (flags override QUIRE_* / AWS_* environment variables, which override defaults):
  --store file:<dir>|memory:|s3://<bucket>[/<prefix>]|minio://<bucket>[/<prefix>]
                             the notebook's object store                  QUIRE_STORE
                             (default: file:$XDG_DATA_HOME/quire/store or ~/.local/share/quire/store)
  --bucket <name>            S3 bucket (same as --store s3://<name>)      QUIRE_BUCKET
  --prefix <prefix>          key prefix inside the bucket                 QUIRE_PREFIX
  --endpoint <url>           S3-compatible endpoint (http or https)       AWS_ENDPOINT_URL_S3
  --region <region>          signing region (default us-east-1)           AWS_REGION
  --path-style               path-style bucket addressing (always on with --endpoint)
  Credentials come from the standard AWS_* environment chain, never from flags.`;

const workspaceOptions = (defaultRoot: string) => `Workspace:
  --workspace-root <dir>     working copies must be at or below it        QUIRE_WORKSPACE_ROOT
                             (default: ${defaultRoot})
  --private-root <dir>       server-owned state, outside the workspace    QUIRE_PRIVATE_ROOT
                             (default: $XDG_CACHE_HOME/quire or ~/.cache/quire)
  --writable <a,b,…>         only these notebook paths may be committed   QUIRE_WRITABLE
  --read-only <a,b,…>        these notebook paths may not be committed    QUIRE_READ_ONLY
                             (repeatable or comma-separated; the longest match decides)`;

const tuningOptions = (extra = "") => `Tuning:
  --commit-retries <n>       compare-and-swap retries, 0..100 (default 8) QUIRE_COMMIT_RETRIES
  --checkpoint-packs <n>     increments between checkpoints (default 1024) QUIRE_CHECKPOINT_PACKS
  --retained-checkpoints <n> older chains kept, 0..64 (default 1)         QUIRE_RETAINED_CHECKPOINTS
  --checkpoint-bytes <n>     tail bytes that also trigger a checkpoint    QUIRE_CHECKPOINT_BYTES
                             (default 67108864, 64 MiB)
  --allow-mass-delete        publish commits deleting all or most files   QUIRE_ALLOW_MASS_DELETE=1
                             (default: refused with MASS_DELETE)
${extra}
Logs go to stderr as key=value lines; LOG_LEVEL sets levels, e.g. LOG_LEVEL=mcp=debug,warn.
Colour only on a terminal, never when NO_COLOR is set.`;

const general = `quire — a shared, durable notebook for AI agents and people

Usage:
  quire serve                    the MCP server on stdio (tools notes_pull, notes_commit)
  quire pull PATH                write the current notebook into PATH, merging local edits
  quire commit PATH -m MESSAGE   publish PATH's edits, merging concurrent changes
  quire log PATH                 the notebook's publications, newest first
  quire status PATH              what PATH holds unpublished; how far the notebook is ahead
  quire diff PATH [FILE...]      the unified diff of PATH's unpublished changes (--stat)
  quire show PATH GEN [FILE...]  one publication: its message, author, time and diff
  quire restore PATH FILE... --from GEN   put files back as they were at GEN
  quire revert PATH GEN          undo publication GEN in PATH (a three-way merge)
  quire mcp install CLIENT       register quire in an MCP client (claude-code, codex,
                                 gemini, cursor, vscode, claude-desktop); also
                                 quire mcp uninstall CLIENT, quire mcp status
  quire version                  print the version (also -v, --version)
  quire <command> -h             help for one command

Numbers (N, GEN, <n>, QUIRE_* counts) are whole decimal numbers as quire prints them:
no sign, no leading zero (007 is a usage error, not 7).
Exit status: 0 success, 1 a reported error, 2 invalid configuration or usage,
74 the output could not be written (what the command did stays done), 70 a bug.
`;

const texts: { readonly [T in HelpTopic]: string } = {
  quire: general,
  serve: `Usage: quire serve [options]

Serves the notebook to one MCP host over stdio. Without --workspace-root it creates a
session directory ($TMPDIR/quire-<random>/notebook) and that is the notebook directory;
with it, the workspace root is the notebook directory and tool calls may name another
working copy below it. SIGINT/SIGTERM/SIGHUP stop taking calls and let calls in flight
finish.

The serve processes of one store, this user and this host (with the same credentials)
share one of them: the first one runs the others' calls too, so their commits publish
together.

${storeOptions}

${workspaceOptions("a fresh session directory")}

  --author <name>            record publications under this name, beside  QUIRE_AUTHOR
                             the client's (default: the MCP client's name)
  --history-tool             also serve notes_log, the read-only history (docs/history.md)

${tuningOptions("  --no-share                 run every call in this process               QUIRE_NO_SHARE=1\n")}
`,
  pull: `Usage: quire pull PATH [options]

Writes the current notebook into the working copy PATH (relative to the current
directory), merging its unpublished edits; conflicts are left as marker blocks.

${storeOptions}

${workspaceOptions("the current directory")}

${tuningOptions()}
`,
  commit: `Usage: quire commit PATH -m MESSAGE [options]

Publishes the edits in the working copy PATH (which must have been pulled), merging
whatever others published meanwhile.

  -m, --message <text>       non-blank, at most 16,384 bytes (required)
  --author <name>            record the publication under this name       QUIRE_AUTHOR
                             (default: cli and the OS user)

${storeOptions}

${workspaceOptions("the current directory")}

${tuningOptions()}
`,
  log: `Usage: quire log PATH [-n N] [--file F] [--full] [--json] [options]

Lists the notebook's publications, newest first: generation, time, author, message
and the files each changed (A added, M modified, D deleted) with their line counts.
PATH is a working copy that was pulled; its cache serves the packs it already has.

  -n, --max-count <n>        at most n publications (default 50)
  --file <path>              only publications that changed this notebook path
                             (relative to the copy's top; a directory: files below it)
  --full                     whole messages, not only their first lines
  --json                     one JSON object on stdout, an error's too (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  diff: `Usage: quire diff PATH [FILE...] [--stat] [--json] [options]

Prints the unified diff of the unpublished changes in the working copy PATH, against
what its next commit merges against, in the form git diff prints (three lines of
context). FILE names a notebook path (relative to the copy's top) or a directory of
them: only those. Publishes nothing and writes no note.

  --stat                     the diffstat instead: path | count +++--- per file
  --json                     one JSON object on stdout, an error's too (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  show: `Usage: quire show PATH GEN [FILE...] [--json] [options]

Shows the publication at generation GEN (as quire log lists them): its time, author,
whole message, and the unified diff of each file it changed against the notebook just
before it. FILE names a notebook path (or a directory of them): only those. The content
of a generation is kept while its chain is retained (--retained-checkpoints); an older
one is GENERATION_PRUNED, though quire log still lists its record.

  --json                     one JSON object on stdout, an error's too (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  restore: `Usage: quire restore PATH FILE... --from GEN [--force] [options]

Writes the files FILE (notebook paths relative to the copy's top, or directories of
them) into the working copy PATH as they were at generation GEN: recreated if deleted
since, removed if they did not exist then. Nothing is published: the next quire commit
publishes them. Refuses (UNPUBLISHED_CHANGES, nothing written) when one of them has
unpublished changes, unless --force.

  --from <gen>               the generation to take them from (required)
  --force                    replace unpublished changes too
  --json                     what was written, or the error, as one JSON object on
                             stdout (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  revert: `Usage: quire revert PATH GEN [options]

Undoes publication GEN in the working copy PATH: the inverse of its changes, merged
three-way with everything since (later edits to the same lines are kept). Conflicts
are written as marker blocks, as a pull writes them (exit 1, CONTENT_CONFLICT).
Nothing is published: the next quire commit publishes the result.

  --json                     what was written, or the error, as one JSON object on
                             stdout (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  status: `Usage: quire status PATH [--json] [options]

Shows what the working copy PATH holds that is not published: files added (A),
modified (M) and deleted (D) since it was last pulled or committed, files with
unresolved conflict marker blocks, files a commit would refuse as they are (symlinks,
binary files, …), and how many publications the notebook has that PATH has not pulled
(one read of the store). Publishes nothing and writes no note.

  --json                     one JSON object on stdout, an error's too (docs/history.md)

${storeOptions}

${workspaceOptions("the current directory")}
`,
  version: `Usage: quire version

Prints "quire <version>" and reads no configuration.
`,
};

/** The help text for `topic`, ending with a newline. */
export const helpText = (topic: HelpTopic): string => texts[topic];
