/**
 * Vitest setup: Node process warnings raised inside a test worker (the AWS SDK's notice
 * that a later release needs a newer Node, for one) go to the test's captured console
 * instead of straight to the terminal, where a newcomer would read them as failures.
 * With `silent: "passed-only"` they are shown with a failing test, else not at all.
 */
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  console.warn(`process warning: ${warning.name}: ${warning.message}`);
});
