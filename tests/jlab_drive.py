"""Every explorer's sliders driven as a reader drives them, for tests/jlab_chapter.py's
:class:`Chapter`: dragged and pressed one way and, where the explorer refuses a value, back and
the other way; each move must change the figure (or show the explorer's message, then clear it)."""

from __future__ import annotations

import time
import warnings

from jlab_js import CONTROLS, SIGNATURE, _shown

STEP_TIMEOUT_MS = 60_000  # anything else: a redraw, a kernel round trip
# A drag's first try (Chapter.move): a drag left unanswered this long is made once more,
# and the second try has STEP_TIMEOUT_MS (an unanswered first try cost a whole minute of a worker
# in a run of `make test` here; it happened in two of eight runs)
FIRST_TRY_MS = 20_000
# A key step (Chapter.move): one step of an integer slider may draw the same picture (T5's bucket
# map of 72 tokens with 52 buckets is the same for max_distance 277 to 280, and changes at 281), so
# the arrow key is pressed again, once the kernel has answered the step before, at most this often
KEY_STEPS = 16
KEY_WAIT_MS = 2_000  # a step's answer comes within this here; a later one is read once the kernel settles


class SliderDriving:
    """The slider moves of a :class:`jlab_chapter.Chapter` (its page, its lab, its name, its
    console errors and its readings of an explorer: ``signature``, ``status``, ``handle``,
    ``position``)."""

    def move(self, out: object, index: int, how: str, direction: int) -> str:
        """Move slider ``index`` of ``out`` one way (``direction`` +1: up) by dragging or by an arrow
        key; return 'changed' (the figure changed), 'refused' (the status shows a message) or, when
        the status showed one before the move, 'recovered' (the message is gone).

        A drag the figure does not answer within :data:`FIRST_TRY_MS` is made once more, one step
        further the same way (back where the slider has no room), with :data:`STEP_TIMEOUT_MS`,
        for a busy machine; an answered retry is reported as a warning in the test summary, so it
        stays visible. A key step is pressed again until the figure changes (:meth:`_key_steps`;
        `make test` here saw alibi's "slope ×" step from -1.5 to -1.3 go unanswered in two of
        eight runs). A slider that does nothing fails either way."""
        if how == "key":
            return self._key_steps(out, index, direction)
        result = self._move_once(out, index, how, direction, FIRST_TRY_MS)
        if not result.startswith("no response"):
            return result
        again = self._way(out, index, direction)
        retry = self._move_once(out, index, how, again)
        if retry.startswith("no response"):
            return f"{result}; a second {how} move: {retry}"
        warnings.warn(f"{self.name}: a {how} move on slider {index} went unanswered ({result}); "
                      f"the next one was answered ({retry})", stacklevel=2)
        return retry

    def _way(self, out: object, index: int, direction: int) -> int:
        """``direction``, or the other way where slider ``index`` has no room left."""
        now, low, high = self.position(self.handle(out, index))
        return direction if (now < high if direction > 0 else now > low) else -direction

    def _key_steps(self, out: object, index: int, direction: int) -> str:
        """Arrow-key steps on slider ``index`` until the figure changes (or the explorer refuses
        the value, or takes its message back), at most :data:`KEY_STEPS`. A step that changed
        nothing in :data:`KEY_WAIT_MS` is read again once the kernel and the figure have settled
        (a slow answer counts), and only then is the next key pressed: one step of an integer
        slider may draw the same picture (see KEY_STEPS), and a slider that does nothing changes
        nothing in all of them."""
        before, start = self.signature(out), self.position(self.handle(out, index))[0]
        refused_before = self.status(out) != ""
        for _ in range(KEY_STEPS):
            result = self._move_once(out, index, "key", self._way(out, index, direction), KEY_WAIT_MS)
            if not result.startswith("no response"):
                return result
            self.settle([out])  # a late answer, as _move_once would have read it
            refused = self.status(out) != ""
            if refused_before:
                if not refused:
                    return "recovered"
            elif refused:
                return "refused"
            elif _shown(self.signature(out)) != _shown(before):
                return "changed"
        now = self.position(self.handle(out, index))[0]
        return f"no response: {KEY_STEPS} key steps, from {start:g} to {now:g}: the figure did not change ({result})"

    def _move_once(self, out: object, index: int, how: str, direction: int, timeout_ms: int = STEP_TIMEOUT_MS) -> str:
        before = self.signature(out)
        refused_before = self.status(out) != ""
        slider = out.query_selector_all(".widget-slider")[index]
        handle = slider.query_selector(".noUi-handle")
        value = handle.get_attribute("aria-valuenow")
        handle.scroll_into_view_if_needed()
        if how == "drag":
            track = slider.query_selector(".noUi-target").bounding_box()
            grip = handle.bounding_box()
            x, y = grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2
            self.page.mouse.move(x, y)
            self.page.mouse.down()
            # 15 % of the track, or a little more than one step where there are few (3 options)
            _, low, high = self.position(handle)
            few = low.is_integer() and high.is_integer() and 0 < high - low <= 8
            fraction = min(0.9, max(0.15, 1.2 / (high - low))) if few else 0.15
            self.page.mouse.move(x + direction * fraction * track["width"], y, steps=5)
            self.page.mouse.up()
        else:
            handle.focus()
            self.page.keyboard.press("ArrowRight" if direction > 0 else "ArrowLeft")
        result = out.evaluate(
            """(out, [before, sig, timeout, refusedBefore]) => new Promise((resolve, reject) => {
              // what the figure shows, titles aside (a title that follows every control would hide
              // a figure whose data did not change)
              const shown = (s) => JSON.stringify(
                Object.entries(JSON.parse(s || '{}')).filter(([k]) => !k.endsWith('title')));
              const signature = eval(sig);
              const t0 = performance.now();
              const message = () => (out.querySelector('.widget-html-content') || {}).textContent || '';
              const check = () => {
                const now = message().trim();
                if (refusedBefore ? !now : shown(signature(out)) !== shown(before))
                  resolve(refusedBefore ? 'recovered' : 'changed');
                else if (!refusedBefore && now) resolve('refused');
                else if (performance.now() - t0 > timeout) resolve('no response: the figure did not change');
                else setTimeout(check, 50);
              };
              check();
            })""",
            [before, SIGNATURE, timeout_ms, refused_before],
        )
        if result not in ("changed", "refused", "recovered"):  # say whether the slider or the figure did not move
            now = handle.get_attribute("aria-valuenow")
            result += f" (the slider went from {value} to {now}; console errors: {self.errors[-3:]})"
        return result

    def settle(self, outs: list[object], quiet: float = 1.0) -> None:
        """Until the kernel has been idle, and every figure and control unchanged, for ``quiet``
        seconds. A drag sends several values, and ipywidgets holds a model's latest value back
        until the kernel has answered the one before: on a busy machine the kernel can still be
        drawing an earlier value when the test reads the figure (CI saw a figure for d = 136
        read before a reload and the kernel's d = 162 after it), and a page reloaded then loses
        the value still held back (a control came back as 210, not 162)."""
        deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
        last, since = None, time.monotonic()
        while True:
            busy = any(
                s["path"].endswith(f"{self.name}.ipynb") and s["kernel"]["execution_state"] != "idle"
                for s in self.lab.api("GET", "sessions")
            )
            now = [(self.signature(out), out.evaluate(CONTROLS)) for out in outs]
            if busy or now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            assert time.monotonic() < deadline, f"{self.name}: the explorers never settled after their sliders moved"
            time.sleep(0.2)

    def room(self, out: object, index: int) -> int:
        """+1 if slider ``index`` has more room above its value than below, else -1."""
        now, low, high = self.position(self.handle(out, index))
        return 1 if high - now > now - low else -1

    def drive(self, out: object, label: str) -> None:
        """Move every enabled slider by dragging and by the keyboard; each move changes the figure,
        or the explorer refuses the value with its message, and then moving back clears the message
        and (where the slider has room) the other way is answered too."""
        count = len(out.query_selector_all(".widget-slider"))
        for i in range(count):
            slider = out.query_selector_all(".widget-slider")[i]
            if slider.query_selector("[disabled]") or "disabled" in (slider.get_attribute("class") or ""):
                continue
            name = slider.query_selector(".widget-label").text_content()
            for how in ("drag", "key"):
                way = self.room(out, i)
                result = self.move(out, i, how, way)
                if result == "refused":  # a value the explorer rejects, with its message
                    back = self.move(out, i, how, -way)
                    assert back == "recovered", f"{label}: {how} back on {name!r} after a refused value: {back}"
                    now, low, high = self.position(self.handle(out, i))
                    result = "changed"  # refusing the only way the slider can go is an answer
                    if (now < high) if -way > 0 else (now > low):  # the other way must be answered too
                        result = self.move(out, i, how, -way)
                        if result == "refused":  # refused both ways (a learned table asked past its rows)
                            back = self.move(out, i, how, way)
                            assert back == "recovered", f"{label}: {how} back on {name!r}: {back}"
                            result = "changed"
                assert result == "changed", f"{label}: {how} on slider {name!r}: {result}"
                status = self.status(out)
                assert status == "", f"{label}: after {how} on {name!r} the explorer reports {status!r}"
