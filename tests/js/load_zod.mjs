// Loads the zod module @hey-api/openapi-ts generated (tests/test_openapi_generators.py):
//   node load_zod.mjs <generated client directory> <node_modules with typescript and zod>
// Prints the number of schemas it exports; throws (exit 1) when one cannot be built.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, modules] = process.argv.slice(2);
const ts = createRequire(path.join(modules, "loader.js"))("typescript");
const source = fs.readFileSync(path.join(dir, "zod.gen.ts"), "utf8");
const out = ts.transpileModule(source, {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
fs.writeFileSync(path.join(dir, "zod.gen.mjs"), out.outputText);
const link = path.join(dir, "node_modules");     // where the module's `import "zod"` looks
if (!fs.existsSync(link)) fs.symlinkSync(modules, link, "dir");
const loaded = await import(pathToFileURL(path.join(dir, "zod.gen.mjs")).href);
console.log("schemas", Object.keys(loaded).length);
