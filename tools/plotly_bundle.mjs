// The book's plotly.js: only the trace types its static figures draw, built from npm's plotly.js
// (package.json pins the version plotly.py bundles) by esbuild. `make book` runs it after `npm ci`:
//   node tools/plotly_bundle.mjs OUT.js
// Scatter is part of plotly.js's core; bar and heatmap are registered. The live explorers in
// JupyterLab and Colab use plotly.py's own full bundle, so they may draw any trace type.
// Like plotly.js's own dist bundles, the attributes' descriptions (text for the schema and the
// docs, never drawn) are left out: about 140 kB.
import * as esbuild from "esbuild";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";

export const TRACES = ["bar", "heatmap"];

// The end of the string literal that starts at src[i] (a quote).
function stringEnd(src, i) {
  const quote = src[i];
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === quote) return j + 1;
  }
  throw new Error("unterminated string");
}

// The end of the bracketed run that starts at src[i] ("[" or "("), strings skipped.
function bracketEnd(src, i) {
  let depth = 0;
  for (let j = i; j < src.length; j++) {
    const c = src[j];
    if (c === "'" || c === '"' || c === "`") j = stringEnd(src, j) - 1;
    else if (c === "[" || c === "(") depth++;
    else if ((c === "]" || c === ")") && --depth === 0) return j + 1;
  }
  throw new Error("unbalanced brackets");
}

// `description: '...'` and `description: [...].join(' ')` entries of an object literal, removed;
// a description computed from anything else (a variable, a concatenation) is kept as it is.
export function stripDescriptions(src) {
  const key = /(^|[\s{,])description:\s*/g;
  let out = "";
  let last = 0;
  let m;
  while ((m = key.exec(src))) {
    let j = m.index + m[0].length;
    if (src[j] === "'" || src[j] === '"') j = stringEnd(src, j);
    else if (src[j] === "[") {
      j = bracketEnd(src, j);
      const join = /^\s*\.join\(/.exec(src.slice(j, j + 40));
      if (join) j = bracketEnd(src, j + join[0].length - 1);
    } else continue;
    const after = /^\s*([,}])/.exec(src.slice(j, j + 200));
    if (!after) continue; // part of a longer expression: kept
    if (after[1] === ",") j += after[0].length;
    out += src.slice(last, m.index + m[1].length);
    last = key.lastIndex = j;
  }
  return out + src.slice(last);
}

async function main(outfile) {
  const require = createRequire(import.meta.url);
  const { version } = require("plotly.js/package.json");
  const entry = [
    "var Plotly = require('plotly.js/lib/core');",
    `Plotly.register([${TRACES.map((t) => `require('plotly.js/lib/${t}')`).join(", ")}]);`,
    "module.exports = Plotly;",
  ].join("\n");
  const strip = {
    name: "strip-descriptions",
    setup(build) {
      build.onLoad({ filter: /[\\/]plotly\.js[\\/]src[\\/].*\.js$/ }, async (args) => ({
        contents: stripDescriptions(await readFile(args.path, "utf8")),
        loader: "js",
      }));
    },
  };
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: process.cwd(), sourcefile: "plotly-book-entry.js" },
    bundle: true,
    minify: true,
    format: "iife",
    globalName: "Plotly",
    target: "es2017",
    write: false,
    plugins: [strip],
    loader: { ".css": "empty" }, // maplibre's stylesheet, required only for map traces
    define: { global: "window" }, // as plotly.js's own build: some dependencies expect Node's global
    logLevel: "warning",
    legalComments: "none",
  });
  // the banner _assets.plotly_js_version reads, in the form of plotly.js's own bundles
  const banner = `/**\n* plotly.js (book - minified) v${version}\n* Traces: scatter, ${TRACES.join(", ")}\n` +
    "* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n* Licensed under the MIT license\n*/\n";
  await mkdir(dirname(outfile), { recursive: true });
  await writeFile(outfile, banner + result.outputFiles[0].text);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) {
  await main(process.argv[2] || "node_modules/.posviz/plotly-book.min.js");
}
