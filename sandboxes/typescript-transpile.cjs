// Transpiles one TypeScript file to CommonJS with Debian's TypeScript (node-typescript), without a
// type check: `node -e <this file> main.ts main.js`. Syntax errors go to stderr as `file(line,col):
// error TSnnnn: text` and exit with 1; then no output file is written.
const fs = require('node:fs')
const ts = require('/usr/share/nodejs/typescript')
const [input, output] = process.argv.slice(1)
const out = ts.transpileModule(fs.readFileSync(input, 'utf8'), {
  fileName: input,
  reportDiagnostics: true,
  compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, esModuleInterop: true },
})
const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error)
if (errors.length > 0) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => '.', getNewLine: () => '\n' }
  process.stderr.write(ts.formatDiagnostics(errors, host))
  process.exit(1)
}
fs.writeFileSync(output, out.outputText)
