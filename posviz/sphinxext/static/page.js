/* posviz.sphinxext: small fixes on every page of the book (see _assets.py).
 *
 * Display equations wider than the column scroll sideways (the theme's overflow-x: auto): each
 * one that does so now becomes focusable, so a keyboard reader can scroll it too (axe:
 * scrollable-region-focusable); MathJax's hidden MathML stays its accessible content. Checked
 * once MathJax has typeset the page and again when the window's width changes.
 *
 * A table wider than the column scrolls sideways in the theme's frame
 * (.pst-scrollable-table-container), and on a phone nothing showed that it went on. Each frame
 * whose table overflows now gets a fade at each edge where more of the table is (page.css), gone
 * once the reader reaches that edge, and a hint above it ("Scroll sideways →", in Chinese
 * "左右滑动 →"; aria-hidden: it tells the eye what a screen reader does not need), shown on a
 * phone or a touch screen only (page.css: a desktop's layout does not move). The frame becomes a
 * focusable region named as a table that scrolls, so a keyboard reader can scroll it too. A table
 * that fits gets nothing.
 */
(function () {
  "use strict";

  function markScrollingMath() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.dataset.posvizScroll = "1";
      } else if (!scrolls && el.dataset.posvizScroll) {
        el.removeAttribute("tabindex");
        delete el.dataset.posvizScroll;
      }
    });
  }

  var TABLE_WORDS = {
    en: { hint: "Scroll sideways \u2192", label: "Table, scrolls sideways" },
    zh: { hint: "\u5de6\u53f3\u6ed1\u52a8 \u2192", label: "\u8868\u683c\uff0c\u53ef\u5de6\u53f3\u6ed1\u52a8" }
  };

  function tableWords() {
    return /^zh/i.test(document.documentElement.lang || "") ? TABLE_WORDS.zh : TABLE_WORDS.en;
  }

  /* Which edges of a scrolling frame have more table beyond them (the fades of page.css). */
  function markEdges(box) {
    var left = box.scrollLeft > 1;
    var right = box.scrollLeft + box.clientWidth < box.scrollWidth - 1;
    box.classList.toggle("posviz-more-left", left);
    box.classList.toggle("posviz-more-right", right);
  }

  function markScrollingTables() {
    var words = tableWords();
    document.querySelectorAll(".pst-scrollable-table-container").forEach(function (box) {
      var scrolls = box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
      var before = box.previousElementSibling;
      var hint = before && before.classList.contains("posviz-scroll-hint") ? before : null;
      if (scrolls) {
        if (!hint) {
          hint = document.createElement("div");
          hint.className = "posviz-scroll-hint";
          hint.setAttribute("aria-hidden", "true");
          hint.textContent = words.hint;
          box.parentNode.insertBefore(hint, box);
        }
        box.classList.add("posviz-table-scrolls");
        if (!box.hasAttribute("tabindex")) {
          box.setAttribute("tabindex", "0");
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", words.label);
          box.dataset.posvizScroll = "1";
        }
        if (!box.dataset.posvizEdges) {
          box.addEventListener("scroll", function () { markEdges(box); }, { passive: true });
          box.dataset.posvizEdges = "1";
        }
        markEdges(box);
      } else {
        if (hint) hint.remove();
        box.classList.remove("posviz-table-scrolls", "posviz-more-left", "posviz-more-right");
        if (box.dataset.posvizScroll) {
          ["tabindex", "role", "aria-label"].forEach(function (a) { box.removeAttribute(a); });
          delete box.dataset.posvizScroll;
        }
      }
    });
  }

  function markAll() {
    markScrollingMath();
    markScrollingTables();
  }

  function afterMath() {
    var mj = window.MathJax;
    var ready = mj && mj.startup && mj.startup.promise;
    Promise.resolve(ready).then(markAll, markAll);
  }

  markScrollingTables(); // the page is parsed (a deferred script): before the first paint where it can
  if (document.readyState === "complete") afterMath();
  else window.addEventListener("load", afterMath);
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(markAll, 200);
  });
})();
