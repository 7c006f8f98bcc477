/**
 * Redaction of diagnostic text (SPEC §2.4), as defence in depth: whatever reaches a
 * result, a log line or stderr passes through {@link redact} so that credentials,
 * object-store keys, private-state paths and internal ids never leave the process.
 */

/** What to scrub besides the built-in patterns. */
export interface RedactOptions {
  /**
   * Private-state paths (the private root, state files) to replace with `<private>`.
   * Entries without a path separator (`/` or `\`) are ignored: they are not paths, and
   * scrubbing a bare word would mangle ordinary text.
   */
  readonly privatePaths?: ReadonlyArray<string>;
  /**
   * Exact secret strings (e.g. the AWS secret access key, a session token) to replace
   * with `<secret>`. Values shorter than {@link minSecretLength} characters are
   * ignored: they are not credentials, and scrubbing them would shred every message.
   */
  readonly secretValues?: ReadonlyArray<string>;
}

/** The shortest secret value {@link redact} scrubs. */
export const minSecretLength = 8;

/** The tokens redaction leaves in place of what it removed. */
export const redactionTokens = {
  secret: "<secret>",
  privatePath: "<private>",
  objectKey: "<object-key>",
  awsAccessKeyId: "<aws-key-id>",
  hex: "<hex>",
  uuid: "<id>",
  userInfo: "***",
} as const;

// A character that may belong to an object key or URL: not white space, quotes,
// brackets or separating punctuation, so the surrounding prose survives.
const keyChar = "[^\\s\"'`()<>\\[\\]{},;]";
const keyEnd = "(?=$|[\\s\"'`()<>\\[\\]{},;.:!?])";

// A match may only start where a run of key characters starts. This matches exactly
// what the bare pattern would (a later start inside the same run could only match a
// suffix of the run's match), but keeps the search linear: without it, every position
// of a long run of key characters rescans the run (a 100,000-character tool name took
// 50 s to redact).
const runStart = `(?<!${keyChar})`;

// Replacements in order; each replacement token contains none of its own pattern's
// characters in a matchable arrangement, so applying a rule to its output is a no-op.
// scheme://user:pass@host → scheme://***@host (userinfo has no `/`, `@` or space). The
// scheme is checked behind the match, only where `://` precedes it, for the same reason.
const userInfoRule: readonly [RegExp, string] = [
  /(?<=[a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/giu,
  `${redactionTokens.userInfo}@`,
];
const awsAccessKeyIdRule: readonly [RegExp, string] = [
  /(?:AKIA|ASIA)[A-Z0-9]{16}/gu,
  redactionTokens.awsAccessKeyId,
];

const patterns: ReadonlyArray<readonly [RegExp, string]> = [
  userInfoRule,
  [
    new RegExp(`${runStart}${keyChar}*packs/(?:checkpoints|increments)/${keyChar}+`, "gu"),
    redactionTokens.objectKey,
  ],
  [
    new RegExp(`${runStart}${keyChar}*probe/[0-9a-fA-F-]{36}${keyChar}*`, "gu"),
    redactionTokens.objectKey,
  ],
  [new RegExp(`${runStart}${keyChar}*/current${keyEnd}`, "gu"), redactionTokens.objectKey],
  awsAccessKeyIdRule,
  // 40-hex (SHA-1, git ids), 64-hex (SHA-256) and any longer run of them
  [/[0-9a-fA-F]{40,}/gu, redactionTokens.hex],
  // UUIDs: publication and probe ids are internal object ids too
  [
    /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/gu,
    redactionTokens.uuid,
  ],
];

// Redaction is iterated to a fixed point so that a match formed by an earlier removal
// is scrubbed too; every rule shortens or keeps the text stable on realistic input, and
// the bound keeps adversarial input (a secret spelling a token) from looping.
const maxPasses = 8;

/**
 * Scrubs `text`: exact secret values, private paths, URL user-info, object-store keys
 * (`…packs/checkpoints/…`, `…packs/increments/…`, `…probe/<uuid>`, `…/current`), AWS
 * access key ids (`AKIA`/`ASIA` + 16 `[A-Z0-9]`, even inside a word), hex runs of 40
 * or more characters and UUIDs. Pure and idempotent (`redact(redact(t)) === redact(t)`); secrets
 * never survive, even embedded in other text. Longer secrets and paths are replaced first.
 */
export const redact = (text: string, options: RedactOptions = {}): string => {
  const literals: ReadonlyArray<readonly [string, string]> = [
    ...scrubbedSecrets(options.secretValues ?? []).map(
      (value) => [value, redactionTokens.secret] as const,
    ),
    ...longestFirst((options.privatePaths ?? []).filter(isPathLike)).map(
      (value) => [value, redactionTokens.privatePath] as const,
    ),
  ];
  let current = text;
  for (let pass = 0; pass < maxPasses; pass++) {
    let next = current;
    for (const [literal, token] of literals) next = next.split(literal).join(token);
    for (const [pattern, replacement] of patterns) next = next.replace(pattern, replacement);
    if (next === current) return current;
    current = next;
  }
  return current;
};

// The parts of a setting's, parameter's or option's name that say its value is a
// credential, matched anywhere in the name, in any case and with any separator
// (`GITHUB_TOKEN`, `x-api-key`, `apiKey`, `db.password`, `Authorization`). `key` counts
// only as a part of its own (`OPENAI_KEY`, `--key`), not inside a word (`keyboard`,
// `monkey`); `auth` not in `author` or `authority` (quire's own `--author` is no secret).
const secretNamePart =
  /token|secret|passw(?:or)?d|pwd|api[_.-]?key|access[_.-]?key|private[_.-]?key|(?<![a-z0-9])key(?![a-z0-9])|signature|credential|auth(?!or(?!iz))|bearer|session|cookie/iu;

/**
 * Whether a setting, parameter or option named `name` holds a credential, by its name
 * alone (`GITHUB_TOKEN`, `api_key`, `--password`, `Authorization`, `x-session-id`…): the
 * rule {@link redactCredentials} applies. Pure.
 */
export const isSecretName = (name: string): boolean => secretNamePart.test(name);

// Strings as JSON and TOML quote them: on one line, with JSON's escapes (`\"` stays
// inside) or as TOML literal strings (no escapes); TOML's multi-line strings span lines.
const doubleQuoted = /"(?:[^"\\\n]|\\.)*"/u.source;
const singleQuoted = /'[^'\n]*'/u.source;
const tripleQuoted = /"""[\s\S]*?"""|'''[\s\S]*?'''/u.source;

// A setting with a quoted value: `"NAME": "value"` (JSON, also a whole file on one line),
// `NAME = "value"`, `NAME = 'value'`, `"NAME" = …` (TOML, inline tables too). The key is
// a quoted string or a whole run of name characters. Each match takes its whole value,
// so the scan resumes after it: a value is never read as a key, whatever it holds.
const quotedSetting = new RegExp(
  `(${doubleQuoted}|${singleQuoted}|(?<![\\w.-])[\\w.-]+)(\\s*[:=]\\s*)(${tripleQuoted}|${doubleQuoted}|${singleQuoted})`,
  "gu",
);

// An array element that is an option followed by its value element: `"--token", "value"`
// (JSON or TOML, on one line or over several).
const quotedOptionValue = new RegExp(
  `(["'])(-{1,2}[\\w.-]+)\\1(\\s*,\\s*)(${doubleQuoted}|${singleQuoted})`,
  "gu",
);

// `--name=value` or `name=value` opening a quoted string: the value is the rest of the
// string (a password may hold spaces; escaped quotes stay inside it).
const quotedParameters: ReadonlyArray<RegExp> = [
  /("-{0,2}[\w.-]+=)(?:[^"\\\n]|\\.)+/gu,
  /('-{0,2}[\w.-]+=)[^'\n]+/gu,
];

// `name=value` as a query parameter (`?token=…`, `&X-Amz-Signature=…`): the value runs
// to white space, the next parameter, a fragment or the quote that closes the URL.
const queryParameter = /([?&;]-{0,2}[\w.-]+=)[^\s&#"]+/gu;

// `--name=value` or `name=value` in a command line: the value runs to white space or an
// unescaped double quote (the end of a JSON string holding the command line).
const bareParameter = /((?:^|[\s,([{])-{0,2}[\w.-]+=)(?:\\.|[^\s"\\])+/gu;

// `--name value` in a command line (an entry's arguments joined by spaces), the same
// value ending. A value that is itself a long option is none: the option is a switch.
const separateValue = /((?:^|\s)-{1,2}([\w.-]+)[ \t]+)(?!--)(?:\\.|[^\s"\\])+/gu;

/** `"…"`, `'…'`, `"""…"""` or `'''…'''` with the marker for its content. */
const markedString = (quoted: string): string => {
  const quote = /^("""|'''|["'])/u.exec(quoted)?.[1] ?? "";
  return `${quote}${redactionTokens.secret}${quote}`;
};

const credentialRules: ReadonlyArray<(text: string) => string> = [
  (text) =>
    text.replace(quotedSetting, (whole, key: string, separator: string, value: string) =>
      isSecretName(key) ? `${key}${separator}${markedString(value)}` : whole,
    ),
  (text) =>
    text.replace(
      quotedOptionValue,
      (whole, quote: string, option: string, separator: string, value: string) =>
        isSecretName(option) && !value.slice(1).startsWith("--")
          ? `${quote}${option}${quote}${separator}${markedString(value)}`
          : whole,
    ),
  ...[...quotedParameters, queryParameter, bareParameter].map(
    (pattern) => (text: string) =>
      text.replace(pattern, (whole, assignment: string) =>
        isSecretName(assignment) ? `${assignment}${redactionTokens.secret}` : whole,
      ),
  ),
  (text) =>
    text.replace(separateValue, (whole, option: string, name: string) =>
      isSecretName(name) ? `${option}${redactionTokens.secret}` : whole,
    ),
];

// `user:password@` whose password holds a `/` (an AWS secret key written unencoded),
// which {@link userInfoRule} leaves: after the colon anything but white space and `@`
// belongs to the password (at worst a `host:port/path@…` is scrubbed too).
const passwordUserInfoRule: readonly [RegExp, string] = [
  /(?<=[a-z][a-z0-9+.-]*:\/\/)[^\s/?#@:]+:[^\s@]*@/giu,
  `${redactionTokens.userInfo}@`,
];

/**
 * Scrubs only credentials from `text`, for output that must otherwise stay as written (a
 * command line or a client's configuration shown back to its owner): the exact
 * `secretValues` (as {@link redact} does), URL user-info (`scheme://user:pass@host` →
 * `scheme://***@host`), AWS access key ids, and every value whose name says it is a
 * credential ({@link isSecretName}) — as a query parameter or option (`?token=…`,
 * `--api-key=…`, also opening a quoted string), as the argument after an option
 * (`--token value`, the array elements `"--token", "value"`), or as a JSON or TOML
 * setting with a quoted value (`"GITHUB_TOKEN": "…"`, `password = '…'`, in inline tables
 * and multi-line strings too). A value becomes `<secret>`, keeping its quotes, so the
 * setting it belonged to still shows. Only string values are scrubbed, and a value after
 * an option only when it is not itself a long option. Paths, ids and hex runs are left
 * alone, unlike {@link redact}. Pure and idempotent.
 */
export const redactCredentials = (
  text: string,
  secretValues: ReadonlyArray<string> = [],
): string => {
  let current = text;
  for (const value of scrubbedSecrets(secretValues))
    current = current.split(value).join(redactionTokens.secret);
  for (const [pattern, replacement] of [passwordUserInfoRule, userInfoRule, awsAccessKeyIdRule])
    current = current.replace(pattern, replacement);
  // To a fixed point, as in redact: one rule's marker can complete another's match.
  for (let pass = 0; pass < maxPasses; pass++) {
    const next = credentialRules.reduce((result, rule) => rule(result), current);
    if (next === current) break;
    current = next;
  }
  return current;
};

const isPathLike = (value: string): boolean => value.length > 1 && /[/\\]/u.test(value);

/** The secret values long enough to be scrubbed (shorter ones would match anywhere), longest first. */
const scrubbedSecrets = (values: ReadonlyArray<string>): ReadonlyArray<string> =>
  longestFirst(values.filter((value) => value.length >= minSecretLength));

const longestFirst = (values: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(values)].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
