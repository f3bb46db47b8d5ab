/* posviz.sphinxext: every Plotly figure of the page follows the reader's screen and theme.
 *
 * Loaded right after plotly.js, before the figures' inline scripts: it wraps Plotly.newPlot so
 * that each figure, once drawn, is adapted to
 *   - a narrow column (a phone): legends above the plot in rows, thin colour bars beside each
 *     panel, side-by-side panels stacked, a fixed width dropped, smaller fonts and margins;
 *   - the theme's dark mode (<html data-theme="dark">): plotly's "plotly_dark" template, light
 *     text on the slider and dark-friendly colours for what the figure paints black or white.
 * Every change is recorded with the value it replaced, so a figure goes back exactly when the
 * window widens or the reader switches back to light (a figure holds all its slider states, so
 * only its layout and styles are touched, never its data).
 */
(function () {
  "use strict";
  var Plotly = window.Plotly;
  if (!Plotly || Plotly.__posviz) return;
  Plotly.__posviz = true;

  var NARROW = 640; // px of the figure's container below which the phone layout applies
  var PANEL_GAP = 100; // px between stacked panels (room for a panel title)
  var TEMPLATES = window.POSVIZ_TEMPLATES || {};
  var DARK_TEMPLATE = TEMPLATES.plotly_dark || null;
  var BLACKS = { black: 1, "#000": 1, "#000000": 1, "rgb(0,0,0)": 1, "rgb(0, 0, 0)": 1 };
  var WHITES = { white: 1, "#fff": 1, "#ffffff": 1, "rgba(255,255,255,0.8)": 1, "rgba(255, 255, 255, 0.8)": 1 };
  var figures = [];

  function dark() {
    return document.documentElement.dataset.theme === "dark";
  }

  function get(obj, path) {
    var parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    for (var i = 0; i < parts.length; i++) {
      if (obj === undefined || obj === null) return undefined;
      obj = obj[parts[i]];
    }
    return obj;
  }

  /* A deep copy (as JSON would make it, but typed arrays stay typed arrays). */
  function copy(value) {
    if (value === undefined) return null;
    if (value === null || typeof value !== "object") return value;
    if (ArrayBuffer.isView(value)) return value.slice();
    if (Array.isArray(value)) return value.map(copy);
    var out = {};
    Object.keys(value).forEach(function (k) {
      if (value[k] !== undefined && typeof value[k] !== "function") out[k] = copy(value[k]);
    });
    return out;
  }

  /* The page stores figures compactly (posviz.sphinxext._mime): {"posviz_decimals": d, "ints":
   * typed array} holds the numbers ints[i] / 10**d (d one number, or one per value), and
   * {"posviz_same": path} the value stored earlier at path in {data, layout}; plotly's own typed
 * arrays ({"dtype", "bdata", "shape"}) are decoded here too. Expanded here,
   * before plotly.js reads the figure; a division by an exact power of ten gives back the same
   * double as the decimal number. */
  var POWERS = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];
  var TYPED = { i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array, i4: Int32Array,
    u4: Uint32Array, f4: Float32Array, f8: Float64Array };

  function typedArray(spec) {
    var text = atob(spec.bdata);
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return new TYPED[spec.dtype](bytes.buffer);
  }

  function shaped(values, shapeText) {
    var shape = String(shapeText || "").split(",").filter(Boolean).map(Number);
    if (shape.length !== 2) return values;
    var rows = [];
    for (var r = 0; r < shape[0]; r++) rows.push(values.subarray(r * shape[1], (r + 1) * shape[1]));
    return rows;
  }

  function decimalArray(spec) {
    var ints = typedArray(spec.ints);
    var dec = spec.posviz_decimals;
    var out = new Float64Array(ints.length);
    var i;
    if (typeof dec === "number") {
      for (i = 0; i < ints.length; i++) out[i] = ints[i] / POWERS[dec];
    } else {
      var d = typedArray(dec);
      for (i = 0; i < ints.length; i++) out[i] = ints[i] / POWERS[d[i]];
    }
    return shaped(out, spec.ints.shape);
  }

  function expand(value, root) {
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value)) return value;
    if (Array.isArray(value)) {
      for (var i = 0; i < value.length; i++) value[i] = expand(value[i], root);
      return value;
    }
    if ("posviz_decimals" in value && "ints" in value) return decimalArray(value);
    if (typeof value.bdata === "string" && TYPED[value.dtype]) return shaped(typedArray(value), value.shape);
    if (Array.isArray(value.posviz_same)) {
      var target = root;
      value.posviz_same.forEach(function (key) {
        target = target === undefined || target === null ? undefined : target[key];
      });
      return target; // stored earlier, so expanded already
    }
    Object.keys(value).forEach(function (k) {
      value[k] = expand(value[k], root);
    });
    return value;
  }

  /* The figure as it was before any adaptation: current value, unless an adaptation replaced it. */
  function original(gd) {
    var undo = gd.__posviz;
    return {
      layout: function (path) {
        return path in undo.layout ? copy(undo.layout[path]) : copy(get(gd.layout, path));
      },
      trace: function (i, path) {
        var u = undo.traces[i] || {};
        return path in u ? copy(u[path]) : copy(get(gd.data[i], path));
      },
    };
  }

  function axisNames(layout, letter) {
    return Object.keys(layout)
      .filter(function (k) {
        return new RegExp("^" + letter + "axis\\d*$").test(k);
      })
      .sort();
  }

  function traceAxes(trace) {
    return [trace.xaxis || "x", trace.yaxis || "y"];
  }

  function axisKey(ref) {
    return ref.charAt(0) + "axis" + ref.slice(1);
  }

  /* A row of more than two buttons (too wide for a phone). Not a dropdown (Plotly's default type):
     its options fold into one box, so it needs one row, however many options it has. */
  function isButtonRow(m) {
    return m.type === "buttons" && (m.buttons || []).length > 2 && (m.direction || "right") === "right";
  }

  /* The phone layout: {layout: {path: value}, traces: [{path: value}]}, read from the original. */
  function narrowChanges(gd, orig, width) {
    var L = {};
    var T = gd.data.map(function () {
      return {};
    });
    var layout = gd.layout;
    L["width"] = width; // a fixed width would overflow the column
    L["font.size"] = 11;
    L["margin.l"] = 46;
    L["margin.r"] = 8;
    var tm = orig.layout("margin.t");
    if (tm !== null && tm > 60) L["margin.t"] = Math.max(60, Math.round(tm * 0.8));
    if (orig.layout("title.text")) {
      // a title wider than the phone starts at the left edge rather than losing both ends, at the
      // top (under the toolbar's row), not in the middle of a top margin that menus made tall
      L["title.font.size"] = 11;
      L["title.x"] = 0.02;
      L["title.xanchor"] = "left";
      L["title.xref"] = "container";
      L["title.yref"] = "container";
      L["title.y"] = 1;
      L["title.yanchor"] = "top";
      L["title.pad"] = { t: 40, b: 0, l: 0, r: 0 };
    }
    // Rows of more than two buttons become a column above the plot: make room for it.
    var menuRoom = 0;
    (orig.layout("updatemenus") || []).forEach(function (m) {
      // a button is ~34 px tall; 24 px more keep the column clear of a panel title under it
      if (isButtonRow(m)) menuRoom = Math.max(menuRoom, m.buttons.length * 36 + 24);
    });
    // Menus placed right of the plot (x > 1) would take the phone's width: a row above the plot.
    var outside = (orig.layout("updatemenus") || [])
      .map(function (m, i) { return m.x > 1 ? i : -1; })
      .filter(function (i) { return i >= 0; });
    outside.forEach(function (i, k) {
      L["updatemenus[" + i + "].x"] = 0;
      L["updatemenus[" + i + "].xanchor"] = "left";
      L["updatemenus[" + i + "].y"] = 1.01;
      L["updatemenus[" + i + "].yanchor"] = "bottom";
      L["updatemenus[" + i + "].pad"] = { l: 0, r: 0, t: 0, b: 40 * (outside.length - 1 - k) }; // one row each
    });
    var moved = outside.length;
    var column = menuRoom > 0; // a column of buttons above the plot, at its left edge
    menuRoom += 40 * moved;
    if (menuRoom) L["margin.t"] = (L["margin.t"] || tm || 80) + menuRoom;

    // Legends: above the plot, in rows, left-aligned (Plotly wraps a horizontal legend).
    var legendRoom = 0;
    var extraBottom = 0;
    if (orig.layout("showlegend") !== false) {
      // above the plot in rows; beside a column of buttons, one entry per line right of it;
      // below the x axis when menus moved out of the right margin took the room above
      L["legend.orientation"] = column ? "v" : "h";
      L["legend.x"] = column ? 0.45 : 0; // (the column is ~120 px of a phone's ~290 px plot)
      L["legend.xanchor"] = "left";
      L["legend.y"] = moved && !column ? -0.22 : 1.02;
      L["legend.yanchor"] = moved && !column ? "top" : "bottom";
      L["legend.font.size"] = 10;
      if (orig.layout("legend.title.text")) {
        L["legend.title.side"] = "top"; // not beside the entries
        // a titled legend (the lab's methods) lists one entry per line (two side by side can be
        // wider than a phone's plot, whatever the language), at the foot of the figure under the
        // x axis title, in room of its own: above the plot it climbed into the title
        if (!column) {
          L["legend.entrywidthmode"] = "fraction";
          L["legend.entrywidth"] = 0.85;
          var entries = gd.data.filter(function (t) { return t.showlegend !== false && t.name; }).length;
          legendRoom = 30 + 21 * entries; // (a Chinese line is taller)
          L["legend.yref"] = "container";
          L["legend.y"] = 0;
          L["legend.yanchor"] = "bottom";
        }
      }
    }

    // Horizontal bars with long category names: the names go inside the plot, above each bar, and
    // each bar takes the lower part of its row so that its name and its value label stay clear
    gd.data.forEach(function (trace, i) {
      if (trace.type !== "bar" || trace.orientation !== "h") return;
      var yk = axisKey(traceAxes(trace)[1]);
      L[yk + ".ticklabelposition"] = "inside top";
      L[yk + ".tickfont.size"] = 10;
      if (orig.trace(i, "base") !== null || orig.trace(i, "offset") !== null) return;
      var down = orig.layout(yk + ".autorange") === "reversed" ? 1 : -1; // the screen's down, in data
      T[i]["width"] = 0.42;
      T[i]["offset"] = down > 0 ? 0.04 : -0.46;
    });

    // Panels: group the x axes into columns by domain; stack the columns one above the other.
    var xs = axisNames(layout, "x");
    var panels = [];
    xs.forEach(function (xk) {
      var dom = orig.layout(xk + ".domain") || [0, 1];
      var yref = orig.layout(xk + ".anchor");
      var yk = yref && yref !== "free" ? axisKey(yref) : "y" + xk.slice(1);
      if (!(yk in layout)) return;
      if (orig.layout(yk + ".overlaying")) return;
      var ydom = orig.layout(yk + ".domain") || [0, 1];
      panels.push({ x: xk, y: yk, xd: dom, yd: ydom });
    });
    var columns = [];
    panels.forEach(function (p) {
      if (columns.every(function (c) { return Math.abs(c - p.xd[0]) > 0.01; })) columns.push(p.xd[0]);
    });
    var height = orig.layout("height") || 450;
    var stacked = panels.length > 1 && columns.length > 1;
    if (stacked) {
      // reading order: top row first, then left to right
      panels.sort(function (a, b) {
        return b.yd[1] - a.yd[1] || a.xd[0] - b.xd[0];
      });
      var mt = L["margin.t"] || tm || 80; // includes the room for a column of buttons
      var mb = orig.layout("margin.b");
      mb = mb === null ? 80 : mb;
      var plotW = width - 48 - 12;
      var panelH = Math.max(200, Math.min(plotW, 360));
      var sliderRoom = (orig.layout("sliders") || []).length ? 90 : 0;
      var plotH = panels.length * panelH + (panels.length - 1) * PANEL_GAP;
      height = Math.round(plotH + mt + mb + sliderRoom);
      L["height"] = height;
      var frac = function (px) {
        return px / plotH;
      };
      panels.forEach(function (p, k) {
        var top = 1 - frac(k * (panelH + PANEL_GAP));
        var bottom = top - frac(panelH);
        p.new = [Math.max(0, bottom), Math.min(1, top)];
        L[p.x + ".domain"] = [0, 1];
        L[p.x + ".anchor"] = p.y.replace("axis", ""); // under its own panel, not the first one
        L[p.y + ".domain"] = p.new;
      });
      // Subplot titles and other paper-placed annotations follow their panel.
      (orig.layout("annotations") || []).forEach(function (a, i) {
        if ((a.xref || "paper") !== "paper" || (a.yref || "paper") !== "paper") return;
        var best = null;
        panels.forEach(function (p) {
          if (a.x < p.xd[0] - 0.02 || a.x > p.xd[1] + 0.02) return;
          // the panel under it (square panels sit well below their titles on a wide page)
          var d = Math.abs(a.y - p.yd[1]);
          if (d < 0.5 && (!best || d < best.d)) best = { p: p, d: d };
        });
        if (!best) return;
        var p = best.p;
        L["annotations[" + i + "].x"] = p.xd[1] > p.xd[0] ? (a.x - p.xd[0]) / (p.xd[1] - p.xd[0]) : 0.5;
        L["annotations[" + i + "].y"] = p.new[1] + Math.min(a.y - p.yd[1], frac(8));
        L["annotations[" + i + "].font.size"] = 11;
      });
    }

    if (!stacked && menuRoom) L["height"] = height + menuRoom;

    // Colour bars: thin, beside the panel they belong to, titles beside them.
    var seen = {};
    gd.data.forEach(function (trace, i) {
      var cbPath = null;
      if (trace.colorbar !== undefined || /heatmap|contour|histogram2d/.test(trace.type || "")) cbPath = "colorbar";
      else if (trace.marker && trace.marker.colorbar) cbPath = "marker.colorbar";
      if (!cbPath || trace.showscale === false) return;
      var axes = traceAxes(trace);
      var yk = axisKey(axes[1]);
      var panel = null;
      panels.forEach(function (p) {
        if (p.y === yk) panel = p;
      });
      var yd = panel ? panel.new || panel.yd : [0, 1];
      T[i][cbPath + ".x"] = 1.02;
      T[i][cbPath + ".xanchor"] = "left";
      T[i][cbPath + ".y"] = (yd[0] + yd[1]) / 2;
      T[i][cbPath + ".yanchor"] = "middle";
      T[i][cbPath + ".len"] = Math.max(0.1, (yd[1] - yd[0]) * 0.95);
      T[i][cbPath + ".lenmode"] = "fraction";
      T[i][cbPath + ".thickness"] = 8;
      T[i][cbPath + ".title.side"] = "right";
      var cbTitle = orig.trace(i, cbPath + ".title.text");
      if (typeof cbTitle === "string" && /<br/i.test(cbTitle)) {
        T[i][cbPath + ".title.text"] = cbTitle.replace(/<br\s*\/?>/gi, " "); // one line, turned
      }
      T[i][cbPath + ".title.font.size"] = 10;
      T[i][cbPath + ".tickfont.size"] = 9;
      seen[yk] = true;
    });

    // Shared colour axes: the same, beside the first panel that uses them.
    Object.keys(layout).forEach(function (ca) {
      if (!/^coloraxis\d*$/.test(ca)) return;
      var panel = null;
      gd.data.forEach(function (trace) {
        if ((trace.coloraxis === ca || (trace.marker && trace.marker.coloraxis === ca)) && !panel) {
          var yk = axisKey(traceAxes(trace)[1]);
          panels.forEach(function (p) {
            if (p.y === yk) panel = p;
          });
        }
      });
      var yd = panel ? panel.new || panel.yd : [0, 1];
      var cb = ca + ".colorbar.";
      L[cb + "x"] = 1.02;
      L[cb + "xanchor"] = "left";
      L[cb + "y"] = (yd[0] + yd[1]) / 2;
      L[cb + "yanchor"] = "middle";
      L[cb + "len"] = Math.max(0.1, (yd[1] - yd[0]) * 0.95);
      L[cb + "lenmode"] = "fraction";
      L[cb + "thickness"] = 8;
      L[cb + "title.side"] = "right";
      var caTitle = orig.layout(cb + "title.text");
      if (typeof caTitle === "string" && /<br/i.test(caTitle)) L[cb + "title.text"] = caTitle.replace(/<br\s*\/?>/gi, " ");
      L[cb + "title.font.size"] = 10;
      L[cb + "tickfont.size"] = 9;
    });

    // Sliders and buttons: smaller labels that fit the width.
    (orig.layout("sliders") || []).forEach(function (s, i) {
      L["sliders[" + i + "].font.size"] = 9;
      L["sliders[" + i + "].currentvalue.font.size"] = 12;
      L["sliders[" + i + "].pad.t"] = 30;
      // the last step's label is centred on the slider's end: leave it room to the right
      var last = (s.steps || []).length ? String(s.steps[s.steps.length - 1].label || "") : "";
      if (last) L["sliders[" + i + "].len"] = (s.len || 1) * (1 - Math.min(0.12, 0.02 + last.length * 0.012));
    });
    (orig.layout("updatemenus") || []).forEach(function (m, i) {
      L["updatemenus[" + i + "].font.size"] = 11;
      if (!(("updatemenus[" + i + "].pad") in L)) L["updatemenus[" + i + "].pad"] = { l: 0, r: 0, t: 0, b: 0 };
      if (isButtonRow(m)) {
        // a row of buttons wider than a phone: a column, at the left edge, above any panel title
        L["updatemenus[" + i + "].direction"] = "down";
        L["updatemenus[" + i + "].pad"] = { l: 0, r: 0, t: 0, b: 24 };
        L["updatemenus[" + i + "].x"] = 0;
        L["updatemenus[" + i + "].xanchor"] = "left";
        L["updatemenus[" + i + "].y"] = 1;
        L["updatemenus[" + i + "].yanchor"] = "bottom";
      }
    });
    // Titles wider than the phone wrap (wrapTitles, after every update: a slider step may set a
    // new title); the margins make room for the extra lines of the first state's titles.
    var extraTop = 0;
    wrappedTitles(gd, width).forEach(function (w) {
      var extra = lineCount(w.wrapped) - lineCount(w.text);
      if (w.path === "title.text") extraTop = 14 * extra;
      else extraBottom = Math.max(extraBottom, 16 * extra);
    });
    if (extraTop) {
      L["margin.t"] = (L["margin.t"] || tm || 80) + extraTop;
      L["height"] = (L["height"] || height) + extraTop;
    }
    if (legendRoom || extraBottom) {
      var mb0 = L["margin.b"] !== undefined ? L["margin.b"] : orig.layout("margin.b");
      L["margin.b"] = (mb0 === null ? 80 : mb0) + legendRoom + extraBottom;
      L["height"] = (L["height"] || height) + legendRoom + extraBottom;
    }
    return { layout: L, traces: T };
  }

  /* The titles (figure and x axes) that do not fit a ``width`` px phone: [{path, text, wrapped}],
     ``text`` being the title as the figure has it now, without the breaks wrapTitles added. */
  function wrappedTitles(gd, width) {
    var family = get(gd.layout, "font.family") || '"Open Sans", verdana, arial, sans-serif';
    var made = (gd.__posviz && gd.__posviz.wrapped) || {};
    var axisFont = Math.round(11 * 1.2); // Plotly's default axis title size for an 11 px font
    var wanted = [["title.text", (width - 24) * 0.92, 11]]; // (0.92: a margin for the font Plotly picks)
    axisNames(gd.layout, "x").forEach(function (xk) {
      wanted.push([xk + ".title.text", (width - 60) * 0.92, get(gd.layout, xk + ".title.font.size") || axisFont]);
    });
    var out = [];
    wanted.forEach(function (w) {
      var now = get(gd.layout, w[0]);
      var text = made[w[0]] && made[w[0]][0] === now ? made[w[0]][1] : now; // ours, or a new title
      var wrapped = wrapText(text, w[1], w[2], family);
      if (typeof text === "string" && wrapped !== text) out.push({ path: w[0], text: text, wrapped: wrapped });
    });
    return out;
  }

  /* Puts the wrapped titles in on a phone and the figure's own titles back on a wide screen; a
     title a slider step replaced is wrapped afresh. Records {path: [wrapped, original]}. */
  function wrapTitles(gd) {
    if (!gd.__posviz || !gd.layout) return null;
    var update = titleChanges(gd, containerWidth(gd));
    return Object.keys(update).length ? Plotly.relayout(gd, update) : null;
  }

  /* The title changes wrapTitles makes ({path: text}), recorded in the figure's state as made. */
  function titleChanges(gd, width) {
    var state = gd.__posviz;
    var made = state.wrapped || {};
    var update = {};
    var keep = {};
    if (width > 0 && width < NARROW) {
      wrappedTitles(gd, width).forEach(function (w) {
        keep[w.path] = [w.wrapped, w.text];
        if (get(gd.layout, w.path) !== w.wrapped) update[w.path] = w.wrapped;
      });
    }
    Object.keys(made).forEach(function (path) { // no longer wanted: the original back, if still ours
      if (!(path in keep) && get(gd.layout, path) === made[path][0]) update[path] = made[path][1];
    });
    state.wrapped = keep;
    return update;
  }

  function lineCount(text) {
    return typeof text === "string" ? text.split(/<br\s*\/?>/i).length : 0;
  }

  /* ``text`` broken with <br> into lines at most ``maxPx`` wide (unchanged if every line fits). A
     line wrapped whole in <sup>, <sub> or <span style> keeps that tag on each of its pieces; breaks
     fall after a space or a Chinese punctuation mark, else between two Chinese characters, never
     inside a tag or an inline element. */
  var measureCtx = null;
  function wrapText(text, maxPx, fontPx, family) {
    if (typeof text !== "string" || !text) return text;
    if (!measureCtx) measureCtx = document.createElement("canvas").getContext("2d");
    var lines = text.split(/<br\s*\/?>/i);
    var out = lines.map(function (line) {
      var m = /^<(sup|sub|span)([^>]*)>(.*)<\/\1>$/i.exec(line);
      if (!m) return breakLine(line, maxPx, fontPx, family).join("<br>");
      var size = /font-size:\s*(\d+(?:\.\d+)?)px/i.exec(m[2]);
      var px = size ? +size[1] : m[1].toLowerCase() === "span" ? fontPx : fontPx * 0.7;
      return breakLine(m[3], maxPx, px, family)
        .map(function (piece) { return "<" + m[1] + m[2] + ">" + piece + "</" + m[1] + ">"; })
        .join("<br>");
    });
    var joined = out.join("<br>");
    return lineCount(joined) === lines.length ? text : joined;
  }

  function breakLine(line, maxPx, px, family) {
    measureCtx.font = px + "px " + family;
    var width = function (s) { return measureCtx.measureText(s.replace(/<[^>]+>/g, "")).width; };
    var pieces = [];
    var rest = line;
    while (width(rest) > maxPx && pieces.length < 4) {
      // where a break may fall: outside tags and inline elements (depth 0)
      var soft = [], hard = [], depth = 0, inTag = false;
      for (var i = 1; i < rest.length; i++) {
        var c = rest.charAt(i - 1);
        if (c === "<") { inTag = true; depth += rest.charAt(i) === "/" ? -1 : 1; }
        if (c === ">") { inTag = false; continue; }
        if (inTag || depth > 0 || rest.charAt(i) === "<" && rest.charAt(i + 1) === "/") continue;
        if (/\s/.test(rest.charAt(i)) || /[，；：、。）,;:)]/.test(c) || /[（(]/.test(rest.charAt(i))) soft.push(i);
        else if (/[\u3400-\u9fff]/.test(c) || /[\u3400-\u9fff]/.test(rest.charAt(i))) hard.push(i);
      }
      var fit = function (cuts) {
        var best = -1;
        cuts.forEach(function (k) { if (width(rest.slice(0, k)) <= maxPx) best = Math.max(best, k); });
        return best;
      };
      var cut = fit(soft);
      if (cut < rest.length / 4) cut = Math.max(cut, fit(hard));
      if (cut <= 0) break; // nowhere to break: leave it to Plotly
      pieces.push(rest.slice(0, cut).replace(/\s+$/, ""));
      rest = rest.slice(cut).replace(/^\s+/, "");
    }
    pieces.push(rest);
    return pieces;
  }

  /* Black or a dark grey (relative luminance < 0.12): unreadable on the dark background. */
  function isBlack(c) {
    if (typeof c !== "string") return false;
    var t = c.replace(/\s+/g, "").toLowerCase();
    if (BLACKS[t] === 1 || t === "dimgray" || t === "dimgrey") return true;
    var rgb = null;
    var m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/.exec(t);
    if (m) {
      var h = m[1].length === 3 ? m[1].replace(/(.)/g, "$1$1") : m[1];
      rgb = [0, 2, 4].map(function (i) { return parseInt(h.substr(i, 2), 16); });
    } else if ((m = /^rgba?\((\d+),(\d+),(\d+)/.exec(t))) {
      rgb = [+m[1], +m[2], +m[3]];
    }
    if (!rgb) return false;
    var lin = rgb.map(function (v) {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    var spread = Math.max.apply(null, rgb) - Math.min.apply(null, rgb);
    return spread < 40 && 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] < 0.12; // greys only
  }

  function isWhite(c) {
    return typeof c === "string" && WHITES[c.replace(/\s+/g, "").toLowerCase()] === 1;
  }

  /* Dark mode: the dark template and dark-friendly colours for what the figure paints itself. */
  function darkChanges(gd, orig) {
    var L = {};
    var T = gd.data.map(function () {
      return {};
    });
    if (DARK_TEMPLATE) L["template"] = DARK_TEMPLATE;
    L["paper_bgcolor"] = "#14181e";
    L["plot_bgcolor"] = "#1e242c";
    L["font.color"] = "#e6e9ee";
    L["modebar.bgcolor"] = "rgba(20,24,30,0.6)";
    L["modebar.color"] = "#aab3bf";
    L["modebar.activecolor"] = "#e6e9ee";
    if (isWhite(orig.layout("legend.bgcolor"))) L["legend.bgcolor"] = "rgba(20,24,30,0.8)";
    (orig.layout("sliders") || []).forEach(function (s, i) {
      L["sliders[" + i + "].font.color"] = "#e6e9ee";
      L["sliders[" + i + "].currentvalue.font.color"] = "#e6e9ee";
      L["sliders[" + i + "].bgcolor"] = "#8a94a3";
      L["sliders[" + i + "].activebgcolor"] = "#e6e9ee";
      L["sliders[" + i + "].bordercolor"] = "#14181e";
      L["sliders[" + i + "].tickcolor"] = "#aab3bf";
    });
    (orig.layout("updatemenus") || []).forEach(function (m, i) {
      // Plotly paints the active button a fixed light colour: keep dark text on light buttons.
      L["updatemenus[" + i + "].bgcolor"] = "#c8d0da";
      L["updatemenus[" + i + "].font.color"] = "#14181e";
      L["updatemenus[" + i + "].bordercolor"] = "#8a94a3";
    });
    (orig.layout("annotations") || []).forEach(function (a, i) {
      if (a.font && isBlack(a.font.color)) L["annotations[" + i + "].font.color"] = "#e6e9ee";
      if (isWhite(a.bgcolor)) L["annotations[" + i + "].bgcolor"] = "rgba(20,24,30,0.8)";
    });
    (orig.layout("shapes") || []).forEach(function (s, i) {
      if (s.line && isBlack(s.line.color)) L["shapes[" + i + "].line.color"] = "#c8d0da";
    });
    ["xaxis", "yaxis"].forEach(function (letter) {
      axisNames(gd.layout, letter.charAt(0)).forEach(function (ax) {
        ["linecolor", "gridcolor", "zerolinecolor", "tickcolor"].forEach(function (k) {
          var c = orig.layout(ax + "." + k);
          if (isBlack(c)) L[ax + "." + k] = "#c8d0da";
          else if (isWhite(c)) L[ax + "." + k] = "#3a424d";
        });
      });
    });
    gd.data.forEach(function (trace, i) {
      ["line.color", "marker.color", "marker.line.color"].forEach(function (path) {
        var c = orig.trace(i, path);
        if (isBlack(c)) T[i][path] = "#c8d0da";
        else if (Array.isArray(c) && c.some(isBlack)) {
          T[i][path] = c.map(function (x) {
            return isBlack(x) ? "#c8d0da" : x;
          });
        }
      });
      if (isWhite(orig.trace(i, "hoverlabel.bgcolor"))) T[i]["hoverlabel.bgcolor"] = "#14181e";
    });
    return { layout: L, traces: T };
  }

  function merge(a, b) {
    Object.keys(b.layout).forEach(function (k) {
      a.layout[k] = b.layout[k];
    });
    b.traces.forEach(function (t, i) {
      Object.keys(t).forEach(function (k) {
        a.traces[i][k] = t[k];
      });
    });
    return a;
  }

  /* The width the plot may take: its figure's content box (without the figure's padding and
     border: on a phone the theme pads a figure by 8 px a side, and a plot as wide as the whole
     figure lost its last x tick to the figure's overflow: hidden). */
  function containerWidth(gd) {
    var el = (gd.closest && gd.closest(".posviz-figure")) || gd.parentElement || gd;
    var width = el.getBoundingClientRect().width || el.clientWidth || 0;
    var style = window.getComputedStyle ? window.getComputedStyle(el) : null;
    if (style) {
      ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth"].forEach(function (k) {
        width -= parseFloat(style[k]) || 0;
      });
    }
    return Math.max(0, Math.floor(width));
  }

  /* What one figure needs now, from its current state (nothing drawn, nothing changed): null when
     it has it already, else {narrow, key, L (layout paths), traceUpdate (per trace), want, and
     the undo record to keep}. ``gd`` is a drawn figure, or {data, layout, __posviz} before its
     first draw, with its container's ``width``. */
  function plan(gd, width) {
    var undo = gd.__posviz;
    var narrow = width > 0 && width < NARROW;
    var isDark = dark();
    var key = (narrow ? "n" + width : "w") + (isDark ? "d" : "l");
    if (key === undo.key) return null;
    var orig = original(gd);
    var want = { layout: {}, traces: gd.data.map(function () { return {}; }) };
    if (narrow) merge(want, narrowChanges(gd, orig, width));
    if (isDark) merge(want, darkChanges(gd, orig));

    // One update: what is wanted now, and the original back wherever it is no longer wanted.
    var L = {};
    Object.keys(undo.layout).forEach(function (k) {
      if (!(k in want.layout)) L[k] = undo.layout[k] === undefined ? null : undo.layout[k];
    });
    Object.keys(want.layout).forEach(function (k) {
      L[k] = want.layout[k];
    });
    var newUndo = {};
    Object.keys(want.layout).forEach(function (k) {
      newUndo[k] = k in undo.layout ? undo.layout[k] : copy(get(gd.layout, k));
    });
    var traceKeys = {};
    var newTraceUndo = gd.data.map(function () { return {}; });
    gd.data.forEach(function (trace, i) {
      var u = undo.traces[i] || {};
      Object.keys(u).forEach(function (k) {
        if (!(k in want.traces[i])) traceKeys[k] = true;
      });
      Object.keys(want.traces[i]).forEach(function (k) {
        traceKeys[k] = true;
        newTraceUndo[i][k] = k in u ? u[k] : copy(get(trace, k));
      });
    });
    var traceUpdate = {};
    Object.keys(traceKeys).forEach(function (k) {
      traceUpdate[k] = gd.data.map(function (trace, i) {
        if (k in want.traces[i]) return want.traces[i][k];
        var u = undo.traces[i] || {};
        if (k in u) return u[k] === null ? null : u[k];
        return copy(get(trace, k)); // untouched: set to what it is
      });
    });
    return { narrow: narrow, key: key, L: L, traceUpdate: traceUpdate, layoutUndo: newUndo, traceUndo: newTraceUndo };
  }

  /* ``value`` at ``path`` ("a.b", "a[0].b") of a figure's spec, as Plotly.update would set it there
     (null: the attribute left to plotly.js's default). */
  function put(obj, path, value) {
    var parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    for (var i = 0; i < parts.length - 1; i++) {
      if (obj[parts[i]] === undefined || obj[parts[i]] === null || typeof obj[parts[i]] !== "object") {
        obj[parts[i]] = /^\d+$/.test(parts[i + 1]) ? [] : {};
      }
      obj = obj[parts[i]];
    }
    var last = parts[parts.length - 1];
    if (value === null || value === undefined) delete obj[last];
    else obj[last] = copy(value);
  }

  /* A figure's spec made what the page needs before plotly.js first draws it (a phone's column, the
     dark theme): one draw instead of a draw and a redraw of every figure. Returns the figure's
     record (``__posviz``) and the plan applied, or null for a figure drawn as it comes (a wide
     column in light). */
  function adaptSpec(el, data, layout) {
    var state = { layout: {}, traces: [], key: "wl" };
    var spec = { data: data, layout: layout, __posviz: state };
    var width = containerWidth(el);
    var p = plan(spec, width);
    if (!p) return { state: state, plan: null };
    Object.keys(p.L).forEach(function (k) {
      // plotly.js sizes a figure that has no width to its element, the column's width here, and
      // only a figure it sized so can be sized again (a fixed first width breaks a later autosize)
      if (k === "width") delete layout.width;
      else put(layout, k, p.L[k]);
    });
    Object.keys(p.traceUpdate).forEach(function (k) {
      p.traceUpdate[k].forEach(function (v, i) { put(data[i], k, v); });
    });
    state.layout = p.layoutUndo;
    state.traces = p.traceUndo;
    state.key = p.key;
    var titles = titleChanges(spec, width); // a phone's wrapped titles too
    Object.keys(titles).forEach(function (k) { put(layout, k, titles[k]); });
    el.classList.toggle("posviz-narrow", p.narrow);
    return { state: state, plan: p };
  }

  /* Bring one figure to what the page needs now; returns Plotly's promise (or null). */
  function adapt(gd) {
    if (!gd.__posviz || !gd.layout) return null;
    var p = plan(gd, containerWidth(gd));
    if (!p) return null;
    var undo = gd.__posviz;
    undo.layout = p.layoutUndo;
    undo.traces = p.traceUndo;
    undo.key = p.key;
    var indices = gd.data.map(function (_, i) { return i; });
    gd.classList.toggle("posviz-narrow", p.narrow);
    // A width given back to plotly.js (null) is the width plotly.js sized the figure to when it first
    // drew it: a phone's, for a figure first drawn on a phone. Its element's width now, instead.
    if ("width" in p.L && p.L.width === null && gd._initialAutoSize) gd._initialAutoSize.width = containerWidth(gd);
    return Promise.resolve(Plotly.update(gd, p.traceUpdate, p.L, indices)).then(function () {
      return drawn(gd, p.narrow);
    });
  }

  /* What follows an adaptation once the figure is drawn: square panels' height, titles wrapped,
     a phone's settling, the wrapper's height. */
  function drawn(gd, narrow) {
    var undo = gd.__posviz;
    return Promise.resolve().then(function () {
      // Square panels (scaleanchor) shrink their width to their height: give them the height.
      var fl = gd._fullLayout;
      if (!narrow || !fl) return;
      var short = 0;
      axisNames(fl, "x").forEach(function (xk) {
        var xa = fl[xk];
        if (!xa || !xa._length || !xa.domain) return;
        var room = fl._size.w * (xa.domain[1] - xa.domain[0]);
        short = Math.max(short, room - xa._length);
      });
      if (short < 12) return;
      if (!("height" in undo.layout)) undo.layout.height = copy(get(gd.layout, "height"));
      var panels = Math.max(1, Math.round(1 / Math.max(0.05, (fl.yaxis && fl.yaxis.domain ? fl.yaxis.domain[1] - fl.yaxis.domain[0] : 1))));
      return Plotly.relayout(gd, { height: Math.round(fl.height + short * Math.min(panels, 4)) });
    }).then(function () {
      return wrapTitles(gd);
    }).then(function () {
      return narrow && settle(gd, undo);
    }).catch(function (err) {
      console.error("posviz figures.js:", err);
    }).then(function () {
      // plotly.py's wrapper div has the original height: let it follow the figure's
      var outer = gd.parentElement;
      if (outer && outer.style && /px$/.test(outer.style.height || "") && gd._fullLayout) {
        outer.style.height = gd._fullLayout.height + "px";
      }
    });
  }

  /* What only the drawn figure shows, on a phone: a row of buttons wider than the phone becomes a
     column; a legend on top of the buttons goes to the foot of the figure; a legend above the plot
     grows upwards as it wraps and Plotly makes room for it but not for a title pinned to the top
     (the plot moves down by the overlap); a slider's label on top of the x axis title moves down.
     One relayout each, where needed. */
  function settle(gd, undo) {
    var box = function (el) { return el ? el.getBoundingClientRect() : null; };
    var meets = function (a, b, gap) {
      return a && b && a.width && b.width && a.left < b.right && b.left < a.right &&
        a.top < b.bottom + gap && b.top < a.bottom + gap;
    };
    var keep = function (keys) {
      keys.forEach(function (k) {
        if (!(k in undo.layout)) undo.layout[k] = copy(get(gd.layout, k));
      });
    };
    var step = function () {
      var fl = gd._fullLayout;
      if (!fl) return null;
      var right = gd.getBoundingClientRect().right;
      var rows = [].slice.call(gd.querySelectorAll(".updatemenu-container > g"));
      for (var r = 0; r < rows.length && fl.updatemenus; r++) {
        var m = fl.updatemenus[r];
        var row = box(rows[r]);
        if (!m || m.type !== "buttons" || m.direction !== "right" || !row || row.right <= right + 1) continue;
        // a row of buttons wider than the phone (long labels): a column at the left edge
        var column = (m.buttons || []).length * 36;
        var menu = "updatemenus[" + r + "].";
        keep([menu + "direction", menu + "x", menu + "xanchor", "margin.t", "height"]);
        var toColumn = { "margin.t": Math.max(fl.margin.t, fl._size.t) + column, height: fl.height + column };
        toColumn[menu + "direction"] = "down";
        toColumn[menu + "x"] = 0;
        toColumn[menu + "xanchor"] = "left";
        return Plotly.relayout(gd, toColumn);
      }
      var legend = box(gd.querySelector(".legend"));
      var menus = [].slice.call(gd.querySelectorAll(".updatemenu-container > g")).map(box);
      if (legend && fl.legend && fl.legend.yref !== "container" && menus.some(function (m) { return meets(legend, m, 0); })) {
        var room = Math.ceil(legend.height) + 12;
        keep(["legend.xref", "legend.x", "legend.yref", "legend.y", "legend.yanchor", "margin.b", "height"]);
        return Plotly.relayout(gd, {
          "legend.xref": "container", "legend.x": 0, // the figure's whole width, not the plot's
          "legend.yref": "container", "legend.y": 0, "legend.yanchor": "bottom",
          "margin.b": Math.max(fl.margin.b, fl._size.b) + room, height: fl.height + room,
        });
      }
      var title = box(gd.querySelector(".gtitle"));
      if (meets(legend, title, 6) && title.bottom + 6 > legend.top) {
        var overlap = Math.ceil(title.bottom + 6 - legend.top);
        keep(["margin.t", "height"]);
        return Plotly.relayout(gd, { "margin.t": Math.max(fl.margin.t, fl._size.t) + overlap, height: fl.height + overlap });
      }
      var sliders = [].slice.call(gd.querySelectorAll(".slider-container"));
      var below = [].slice.call(gd.querySelectorAll('[class^="g-x"][class$="title"] text')).map(box);
      for (var i = 0; i < sliders.length; i++) {
        var sb = box(sliders[i]);
        var shift = 0;
        below.forEach(function (b) {
          if (meets(b, sb, 0) && b.top < sb.top + 8) shift = Math.max(shift, Math.ceil(b.bottom + 6 - sb.top));
        });
        if (shift > 0 && fl.sliders && fl.sliders[i]) {
          var k = "sliders[" + i + "].pad.t";
          keep([k, "margin.b", "height"]);
          var upd = { "margin.b": Math.max(fl.margin.b, fl._size.b) + shift, height: fl.height + shift };
          upd[k] = (fl.sliders[i].pad.t || 0) + shift;
          return Plotly.relayout(gd, upd);
        }
      }
      return null;
    };
    var rounds = 0;
    var loop = function () {
      var done = rounds++ < 4 ? step() : null;
      return done ? Promise.resolve(done).then(loop) : null;
    };
    return loop();
  }

  function adaptAll() {
    figures.forEach(function (gd) {
      if (document.body.contains(gd)) adapt(gd);
    });
  }

  var newPlot = Plotly.newPlot;
  Plotly.newPlot = function (gd, data, layout) {
    var el = typeof gd === "string" ? document.getElementById(gd) : gd;
    var args = Array.prototype.slice.call(arguments);
    if (Array.isArray(data)) {
      var root = { data: data, layout: layout || {} };
      expand(root, root);
      args[1] = data = root.data;
      args[2] = layout = root.layout;
    }
    // A figure that names a shared template (data-posviz-template) does not carry it.
    var name = el && el.dataset ? el.dataset.posvizTemplate : null;
    if (name && TEMPLATES[name] && layout && !layout.template) layout.template = TEMPLATES[name];
    // a phone's layout and the dark theme go into the spec: plotly.js draws the figure once
    var first = el && !el.__posviz && Array.isArray(data) && layout ? adaptSpec(el, data, layout) : null;
    var result = newPlot.apply(this, args);
    if (!el) return result;
    return Promise.resolve(result).then(function (shown) {
      if (!el.__posviz) {
        el.__posviz = first ? first.state : { layout: {}, traces: [], key: "wl" };
        figures.push(el);
      }
      if (el.on && !el.__posvizWraps) {
        el.__posvizWraps = true;
        // a slider step or a button sets a new title: wrapped again on a phone (Plotly.update
        // fires plotly_update, the relayout that wraps fires plotly_relayout: no loop)
        el.on("plotly_update", function () { wrapTitles(el); });
      }
      var adapted = first && first.plan ? drawn(el, first.plan.narrow) : adapt(el);
      return Promise.resolve(adapted).then(function () {
        el.dataset.posvizReady = "1";
        return shown;
      });
    });
  };

  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(adaptAll, 150);
  });
  new MutationObserver(adaptAll).observe(document.documentElement, {
    attributes: true,
    attributeFilter: ["data-theme"],
  });
  window.posvizAdaptFigures = adaptAll;
})();
