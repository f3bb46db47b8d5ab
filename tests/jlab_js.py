"""What tests/jlab_chapter.py asks a chapter's explorers in the JupyterLab page (JavaScript run
in the page): their controls' values, every problem a reader would see, and a signature of what the
figure shows."""

from __future__ import annotations

import json

EXPLORER = ".jp-OutputArea-output:has(.widget-vbox .js-plotly-plot)"

# The controls' values as the page shows them (readouts, dropdowns, check boxes).
CONTROLS = r"""(out) => [...out.querySelectorAll('.widget-readout, .widget-dropdown select, .widget-checkbox input')]
  .map(e => e.tagName === 'INPUT' ? String(e.checked) : e.tagName === 'SELECT' ? e.value : e.textContent)"""


# Everything a check needs about one explorer, measured in the page.
MEASURE = r"""(out) => {
  const gd = out.querySelector('.js-plotly-plot');
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const nonEmpty = (t) => t !== null && t !== undefined && String(t).trim() !== '';
  const list = (v) => Array.isArray(v) || ArrayBuffer.isView(v) ? Array.from(v) : (nonEmpty(v) ? [v] : []);
  const r = {width: gd.clientWidth, outWidth: out.clientWidth, drawn: gd._fullLayout ? gd._fullLayout.width : 0,
             traces: gd.data ? gd.data.length : 0, status: '', problems: []};
  const status = out.querySelector('.widget-html-content');
  r.status = status ? status.textContent.trim() : '';
  // text the figure holds: text traces, annotations, axis titles
  let wanted = 0;
  for (const t of gd.data || []) {
    if (t.visible === false || !String(t.mode || '').includes('text')) continue;
    wanted += list(t.text).filter(nonEmpty).length;
  }
  const points = [...gd.querySelectorAll('.textpoint text')].filter(e => nonEmpty(e.textContent));
  if (points.length !== wanted) r.problems.push(`${wanted} text labels in the figure, ${points.length} drawn`);
  const notes = ((gd.layout && gd.layout.annotations) || []).filter(a => nonEmpty(a.text) && a.visible !== false);
  const drawnNotes = [...gd.querySelectorAll('.annotation-text')].filter(e => nonEmpty(e.textContent));
  if (drawnNotes.length < notes.length) r.problems.push(`${notes.length} annotations, ${drawnNotes.length} drawn`);
  for (const [key, axis] of Object.entries(gd.layout || {})) {  // titles the figure sets (not plotly.js defaults)
    const full = (gd._fullLayout || {})[key];
    if (!/^[xy]axis\d*$/.test(key) || !full || !full.visible || !axis.title || !nonEmpty(axis.title.text)) continue;
    const cls = '.g-' + key.replace('axis', '') + 'title';
    const e = gd.querySelector(cls);
    if (!e || !nonEmpty(e.textContent)) r.problems.push(`axis title ${key} not drawn`);
  }
  // overlaps: a colour bar on a label, two text labels on each other
  const area = (a, b) => Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0])) *
                         Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const bars = [...gd.querySelectorAll('g.colorbar')];
  const labels = [...gd.querySelectorAll(
    '.xtick text, .ytick text, .g-xtitle, .g-ytitle, [class^="g-x"][class$="title"], [class^="g-y"][class$="title"],' +
    '.annotation-text, .textpoint text, .legendtext, .gtitle')]
    .filter(e => !e.closest('g.colorbar') && nonEmpty(e.textContent));
  for (const bar of bars) for (const label of labels) {
    if (area(box(bar), box(label)) > 4) r.problems.push(`colour bar over "${label.textContent.slice(0, 30)}"`);
  }
  for (let i = 0; i < points.length; i++) for (let j = i + 1; j < points.length; j++) {
    if (area(box(points[i]), box(points[j])) > 4)
      r.problems.push(`labels overlap: "${points[i].textContent}", "${points[j].textContent}"`);
  }
  // controls: sliders with a track, nothing cut off by the output
  const right = box(out)[2];
  for (const s of out.querySelectorAll('.widget-slider')) {
    const track = s.querySelector('.noUi-target, .slider-container');
    const name = (s.querySelector('.widget-label') || {}).textContent;
    if (!track || track.getBoundingClientRect().width < 100) r.problems.push(`slider "${name}" has no track to drag`);
  }
  for (const c of out.querySelectorAll('.widget-hbox > .widget-inline-hbox, .widget-hbox > .widget-checkbox')) {
    if (box(c)[2] > right + 1) r.problems.push(`control "${c.textContent.trim().slice(0, 30)}" cut off`);
  }
  r.controls = (%CONTROLS%)(out);
  return r;
}""".replace("%CONTROLS%", CONTROLS)

# A cheap fingerprint of what the figure shows: per trace, a hash of each of its data keys, and
# one of the layout's texts (annotations, titles); a JSON string, so that the page compares it
# as a whole and the test can say which part changed.
SIGNATURE = r"""(out) => {
  const gd = out.querySelector('.js-plotly-plot');
  if (!gd || !gd.data) return '';
  const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : v;
  const hash = (s) => {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
    return `${s.length}:${h} ${s.slice(0, 80)}`;  // with a preview, for the test's message
  };
  const parts = {};
  gd.data.forEach((t, i) => {
    for (const k of ['x', 'y', 'z', 'text', 'name', 'value', 'zmin', 'zmax']) {
      if (t[k] === undefined) continue;
      parts[`trace ${i} ${k}`] = hash(JSON.stringify(Array.isArray(t[k]) ? t[k].map(plain) : plain(t[k])));
    }
    const bar = t.colorbar && t.colorbar.title && t.colorbar.title.text;
    const title = t.title && t.title.text;
    if (bar) parts[`trace ${i} colour bar title`] = hash(String(bar));
    if (title) parts[`trace ${i} title`] = hash(String(title));
  });
  parts.annotations = hash(JSON.stringify(((gd.layout || {}).annotations || []).map(a => a.text)));
  // a drawn shape's place (the vision explorer's training-grid outline): a visible change, unlike a title's words
  parts.shapes = hash(JSON.stringify(((gd.layout || {}).shapes || []).map(
    sh => [sh.visible, sh.x0, sh.x1, sh.y0, sh.y1])));
  return JSON.stringify(parts);
}"""


def _shown(signature: str) -> dict[str, str]:
    """What a :data:`SIGNATURE` says the figure shows, titles aside (as Chapter._move_once reads it)."""
    return {k: v for k, v in (json.loads(signature) if signature else {}).items() if not k.endswith("title")}


def _differences(before: str, after: str) -> list[str]:
    """The parts of two signatures that differ."""
    old, new = (json.loads(s) if s else {} for s in (before, after))
    return [f"{k}: {old.get(k)} -> {new.get(k)}" for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]
