/* posviz.sphinxext: small fixes on every page of the book (see _assets.py).
 *
 * Display equations wider than the column scroll sideways (the theme's overflow-x: auto): each
 * one that does so now becomes focusable, so a keyboard reader can scroll it too (axe:
 * scrollable-region-focusable); MathJax's hidden MathML stays its accessible content. Checked
 * once MathJax has typeset the page and again when the window's width changes.
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

  function afterMath() {
    var mj = window.MathJax;
    var ready = mj && mj.startup && mj.startup.promise;
    Promise.resolve(ready).then(markScrollingMath, markScrollingMath);
  }

  if (document.readyState === "complete") afterMath();
  else window.addEventListener("load", afterMath);
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(markScrollingMath, 200);
  });
})();
