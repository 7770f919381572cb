// Expected answers for the navigation accuracy harness on TypeScript/JavaScript, computed by
// the TypeScript language service (the compiler's own go-to-definition and find-references),
// not by grep.
//
// Usage: node ts_oracle.js TYPESCRIPT_MODULE_DIR REPO < sites.json > expected.json
// sites.json: {"defs": [{file, line, col, name}], "uses": [...], "refs": [...], "impls": [...],
// "imports": [file]} (1-based line and column); `use_refs` in the answer are the references at
// each use of `uses` that binds inside REPO. Only answers inside REPO count; aliases and
// re-exports are followed to the declaration, as the language service does. Implementations
// are the classes and interfaces the language service's go-to-implementation gives at a class
// or interface name, the declaration itself left out (it also lists values typed as an
// interface, which are not types); imports are every static import, `export … from` and
// `import x = require()` of a file with the file the compiler resolves its specifier to
// (null when outside REPO or unresolved).
"use strict";
const fs = require("fs");
const path = require("path");
const ts = require(process.argv[2]);
const repo = path.resolve(process.argv[3]);
const sites = JSON.parse(fs.readFileSync(0, "utf8"));

function walk(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== ".git" && e.name !== "node_modules") walk(p, out);
    else if (/\.(ts|tsx|js|mjs|cjs)$/.test(e.name)) out.push(p);
  }
  return out;
}
const files = walk(repo, []);
const options = { target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Node10, allowJs: true, strict: false };
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => "1",
  getScriptSnapshot: (f) => (fs.existsSync(f) ? ts.ScriptSnapshot.fromString(fs.readFileSync(f, "utf8")) : undefined),
  getCurrentDirectory: () => repo,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = service.getProgram();

function rel(f) {
  const r = path.relative(repo, f);
  return r.startsWith("..") || path.isAbsolute(r) ? null : r.split(path.sep).join("/");
}
function locate(site) {
  const abs = path.join(repo, site.file);
  const sf = program.getSourceFile(abs);
  if (!sf) return null;
  return { abs, sf, pos: sf.getPositionOfLineAndCharacter(site.line - 1, site.col - 1) };
}
function lineOf(fileName, start) {
  const sf = program.getSourceFile(fileName);
  return sf ? sf.getLineAndCharacterOfPosition(start).line + 1 : 0;
}
function uniq(pairs) {
  const seen = new Map();
  for (const p of pairs) if (p[0]) seen.set(p.join(":"), p);
  return [...seen.values()].sort();
}

function definitions(list) {
  const out = [];
  for (const s of list) {
    const at = locate(s);
    if (!at) continue;
    const got = service.getDefinitionAtPosition(at.abs, at.pos) || [];
    const exp = uniq(got.filter((d) => d.name === s.name || d.kind !== "alias").map((d) => [rel(d.fileName), lineOf(d.fileName, d.textSpan.start)]));
    if (exp.length) out.push({ ...s, expected: exp });
  }
  return out;
}
const defs = definitions(sites.defs);
// The use-sampled set: uses evenly over each file, method calls included.
const uses = definitions(sites.uses || []);
function references(list) {
  const out = [];
  for (const s of list) {
    const at = locate(s);
    if (!at) continue;
    const got = service.findReferences(at.abs, at.pos) || [];
    const exp = uniq(got.flatMap((g) => g.references).map((r) => [rel(r.fileName), lineOf(r.fileName, r.textSpan.start)]));
    if (exp.length) out.push({ file: s.file, line: s.line, col: s.col, name: s.name, expected: exp });
  }
  return out;
}
const refs = references(sites.refs);
// References asked at the use-sampled set's uses (those bound inside REPO).
const use_refs = references(uses);
// The start of every class and interface declaration's name in a file.
const typeNameCache = new Map();
function typeNames(fileName) {
  if (!typeNameCache.has(fileName)) {
    const starts = new Set();
    const sf = program.getSourceFile(fileName);
    const visit = (node) => {
      if ((ts.isClassLike(node) || ts.isInterfaceDeclaration(node)) && node.name) starts.add(node.name.getStart(sf));
      ts.forEachChild(node, visit);
    };
    if (sf) visit(sf);
    typeNameCache.set(fileName, starts);
  }
  return typeNameCache.get(fileName);
}
const impls = [];
for (const s of sites.impls || []) {
  const at = locate(s);
  if (!at) continue;
  const got = service.getImplementationAtPosition(at.abs, at.pos) || [];
  const types = got.filter((g) => typeNames(g.fileName).has(g.textSpan.start));
  const exp = uniq(types.map((g) => [rel(g.fileName), lineOf(g.fileName, g.textSpan.start)])).filter(
    (p) => !(p[0] === s.file && p[1] === s.line),
  );
  impls.push({ ...s, expected: exp });
}
function specifiers(sf) {
  const out = [];
  for (const st of sf.statements) {
    let spec = null;
    if ((ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier) spec = st.moduleSpecifier;
    else if (ts.isImportEqualsDeclaration(st) && ts.isExternalModuleReference(st.moduleReference)) spec = st.moduleReference.expression;
    if (spec && ts.isStringLiteral(spec)) out.push(spec.text);
  }
  return out;
}
const imports = [];
for (const file of sites.imports || []) {
  const abs = path.join(repo, file);
  const sf = program.getSourceFile(abs);
  if (!sf) continue;
  const exp = uniq(
    specifiers(sf).map((spec) => {
      const r = ts.resolveModuleName(spec, abs, options, ts.sys).resolvedModule;
      const target = r && !r.isExternalLibraryImport ? rel(r.resolvedFileName) : null;
      return [spec, target === null ? "" : target];
    }),
  );
  imports.push({ file, expected: exp });
}
process.stdout.write(JSON.stringify({ defs, uses, use_refs, refs, impls, imports }));
