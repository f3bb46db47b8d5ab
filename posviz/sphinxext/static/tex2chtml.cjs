// posviz.sphinxext._math: the book's equations typeset at build time by MathJax 3 in Node.
//   node tex2chtml.cjs MATHJAX_ES5_DIR IN.json OUT.json
// IN: {"fontURL": "...", "items": [[tex, display], ...]}; OUT: {"html": [...], "css": "...",
// "errors": [index, ...]}. The same components as the pages loaded in the reader's browser (TeX
// with its default packages and autoload, CommonHTML output, the hidden MathML that screen readers
// read), so the markup is what MathJax made there; the stylesheet covers every character used.
"use strict";
const fs = require("fs");
const path = require("path");

const [dir, input, output] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(input, "utf8"));

require(path.resolve(dir, "node-main.js"))
  .init({
    loader: { load: ["adaptors/liteDOM", "input/tex", "output/chtml", "a11y/assistive-mml"] },
    // CJK characters in \text{...} are 1 em wide; MathJax measures them in a browser
    liteAdaptor: { fontSize: 16, cjkCharWidth: 1 },
    chtml: { fontURL: job.fontURL, adaptiveCSS: true },
    startup: { typeset: false },
  })
  .then((MathJax) => {
    const adaptor = MathJax.startup.adaptor;
    const errors = [];
    const html = job.items.map(([tex, display], i) => {
      const node = MathJax.tex2chtml(tex, { display });
      const markup = adaptor.outerHTML(node);
      if (markup.includes("<mjx-merror")) errors.push(i);
      return markup;
    });
    // the output's styles, then the document's own (the hidden MathML's, from a11y/assistive-mml)
    const extra = new MathJax._.util.StyleList.CssStyles();
    for (const styles of MathJax.startup.document.styles) extra.addStyles(styles);
    const css = adaptor.textContent(MathJax.chtmlStylesheet()) + "\n" + extra.getStyleString();
    fs.writeFileSync(output, JSON.stringify({ html, css, errors }));
  })
  .catch((err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  });
