"""A page visited in headless Chromium for the browser tests (test_browser*.py): every request,
console error and page error recorded, requests that leave the machine refused, and a worker's
kept tab (:class:`Tab`) that gives each visit what a new browser context gives."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import axe_audit

PHONE = {"width": 390, "height": 844}  # every browser test's two screens (test_figures_js, test_table_scroll)
DESKTOP = {"width": 1280, "height": 900}
IGNORED_ERRORS = {
    # sphinx-thebe 0.3.1 declares `const THEBE_JS_URL` in two inline scripts on every page
    # (upstream bug; thebe itself only loads when a reader clicks "Live code").
    "Identifier 'THEBE_JS_URL' has already been declared",
}
# Any request that leaves the local server (matched by Playwright's driver, so the page's own
# requests never wait on this process: a tenth of a second of CPU per page load here).
FOREIGN = re.compile(r"^(?!https?://127\.0\.0\.1[:/]|data:|blob:)")


class Tab:
    """One browser tab a worker keeps for its visits of one kind (a desktop's window or a phone's
    screen), each visit a first visit as a new context gives it: the HTTP cache off (every file
    comes from the server, so the page test still counts a first visit's bytes; Playwright turns it
    off too while a context has routes, and test_page fails on any file the page did not fetch:
    planted, with the cache on and no routes, it named the theme's stylesheets), the window's size
    as the kind has it, and the site's local and session storage empty (the theme's mode). What is
    kept is the browser's renderer process: a new context for each visit started one, and that was
    half of the CPU of a visit here (20 chapter pages on a phone: 50-51 s of CPU with a context each,
    27-31 s in one tab; the 19 pages without figures: 21-22 s, then 6-7 s; the same bytes sent)."""

    BLANK = "/__posviz_blank__"  # an empty page of the site's origin, between visits (:meth:`end`)

    def __init__(self, browser: object, *, phone: bool) -> None:
        self.browser, self.phone = browser, phone
        self.visit: Visit | None = None  # the visit under way, told of the requests it made
        self.origin: str | None = None
        self._open()

    def _open(self) -> None:
        self.context = new_context(self.browser, phone=self.phone)
        self.context.route(FOREIGN, self._refuse)
        self.context.route(
            re.compile(r"^https?://127\.0\.0\.1:\d+" + re.escape(self.BLANK) + "$"),
            lambda route: route.fulfill(status=200, content_type="text/html", body="<!doctype html><title></title>"),
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(120_000)  # a busy 2-core machine
        cdp = self.context.new_cdp_session(self.page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})  # this tab's, from now on

    def _refuse(self, route: object) -> None:
        if self.visit is not None:
            self.visit.foreign.append(route.request.url)
        route.abort()

    def begin(self, visit: Visit, url: str) -> None:
        """Make the tab what a new context would be, for ``visit`` of ``url``."""
        if not self.page.is_closed() and self.page.url != "about:blank" and not self.page.url.endswith(self.BLANK):
            self._leave()  # a visit that was never ended
        if self.page.is_closed():  # a crashed renderer, or a visit that could not leave its page
            self.context.close()
            self._open()
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        self.visit = visit
        self.page.set_viewport_size(PHONE if self.phone else DESKTOP)

    def end(self) -> None:
        """Leave the page for an empty one of the same origin, and empty the site's storage there
        (after the page's own unload handlers, which write to it: the theme's sidebar position)."""
        self.visit = None
        self._leave()

    def _leave(self) -> None:
        from playwright.sync_api import Error  # imported here: the browser tests skip without playwright

        try:
            self.page.goto(f"{self.origin}{self.BLANK}")
            left = self.page.evaluate(
                "() => { localStorage.clear(); sessionStorage.clear();"
                " return localStorage.length + sessionStorage.length; }"
            )
            assert left == 0, f"{left} items left in the site's storage"
        except Error:
            self.page.close()  # begin opens a new tab

    def close(self) -> None:
        self.context.close()


def new_context(browser: object, *, phone: bool) -> object:
    if phone:
        return browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    return browser.new_context(viewport=DESKTOP)


class Visit:
    """A page opened with every request, console error and page error recorded: in a new context,
    or in a worker's kept tab (``tab``, :class:`Tab`), which gives the same first visit."""

    def __init__(
        self,
        browser: object,
        url: str,
        *,
        phone: bool = False,
        dark: bool = False,
        sizes: bool = False,
        tab: Tab | None = None,
    ) -> None:
        self.foreign: list[str] = []
        self._failures: list[tuple[str, str, str]] = []  # (failure, url, referer)
        self._http_errors: list[str] = []
        self.errors: list[str] = []
        self.measure_sizes = sizes  # asked by the page test: another round trip to the browser per response
        self.sizes: dict[str, int] = {}  # every response's body, by URL (a cold cache)
        self.documents: list[int] = []
        self._tab = tab
        if tab is not None:
            assert not dark and phone == tab.phone, "a kept tab is light, and of its own kind"
            tab.begin(self, url)
            self.context, self.page = tab.context, tab.page
        else:
            self.context = new_context(browser, phone=phone)
            if dark:  # as the theme's switch leaves it
                self.context.add_init_script(
                    "localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');"
                )
            self.context.route(FOREIGN, self._refuse)  # matched in Playwright's driver: the page's own requests go on
            self.page = self.context.new_page()
            self.page.set_default_timeout(120_000)  # a busy 2-core machine
        self._listeners = {
            "console": lambda msg: msg.type == "error" and self.errors.append(msg.text),
            "pageerror": lambda err: self.errors.append(str(err)),
            "response": self._response,
            "requestfailed": self._request_failed,
        }
        for event, listener in self._listeners.items():
            self.page.on(event, listener)
        self.page.goto(url, wait_until="load")

    def close(self) -> None:
        """The end of the visit: its context closed, or its kept tab left for the next visit."""
        if self._tab is None:
            self.context.close()
            return
        for event, listener in self._listeners.items():
            self.page.remove_listener(event, listener)
        self._tab.end()

    def _request_failed(self, request: object) -> None:
        # A page that redirects at once (index.html's <meta http-equiv="Refresh">) has its own
        # requests (its favicon) cancelled by the navigation it starts: net::ERR_ABORTED for a
        # request from a document that is not the page's any more. Judged when read, once the
        # page has settled; anything else that fails is a failure.
        self._failures.append((request.failure, request.url, request.headers.get("referer", "")))

    @property
    def failed(self) -> list[str]:
        here = self.page.url
        return self._http_errors + [
            f"{failure} {url}"
            for failure, url, referer in self._failures
            if not (failure == "net::ERR_ABORTED" and referer and referer != here)
        ]

    def _response(self, response: object) -> None:
        if response.status >= 400:
            self._http_errors.append(f"{response.status} {response.url}")
            return
        if not self.measure_sizes:
            return
        # the body's size as the network stack counted it (the local server compresses nothing, so
        # it is the body's length), not the body itself: fetching every body through the browser's
        # debugging protocol cost about 0.3 s of CPU per page load here, for the same totals
        try:
            size = response.request.sizes()["responseBodySize"]
        except Exception:  # a request the page aborted (a navigation away) has no sizes
            size = 0
        self.sizes[response.url] = size
        if response.request.resource_type == "document":
            self.documents.append(size)

    def figures_ready(self, count: int) -> None:
        """Wait until ``count`` figures are drawn and adapted by posviz's page script."""
        if count:
            self.page.wait_for_function(
                "n => document.querySelectorAll('.plotly-graph-div[data-posviz-ready]').length >= n", arg=count
            )

    def axe(self, *, colours_only: bool = False, colours: bool = True) -> list[str]:
        """axe-core's serious and critical violations on the page as it is now (tests/axe_audit.py:
        the colour rules read one element of each kind of text); ``colours_only``: only the rules
        that read colours, for a page already audited whole whose theme then changed (nothing but
        colours changes with it); ``colours=False``: every rule but those, for a Chinese page whose
        English twin's audit read its colours (:data:`COLOURS_READ_ON_THE_TWIN`)."""
        return axe_audit.audit(self.page, colours_only=colours_only, colours=colours)

    def _refuse(self, route: object) -> None:
        """Never let the browser reach out, and fail the test."""
        self.foreign.append(route.request.url)
        route.abort()

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(known in e for known in IGNORED_ERRORS)]


def click_slider_step(page: object, div_id: str, target: int, steps: int) -> None:
    """Click the slider rail of figure ``div_id`` where step ``target`` sits, as a reader would."""
    plot = page.locator(f"#{div_id}")
    plot.scroll_into_view_if_needed()
    rail = plot.locator(".slider-container .slider-rail-rect").first
    ticks = plot.locator(".slider-container .slider-tick-rect")
    assert ticks.count() == steps, f"{div_id}: {ticks.count()} slider ticks for {steps} steps"
    tick, box = ticks.nth(target).bounding_box(), rail.bounding_box()
    page.mouse.click(tick["x"] + tick["width"] / 2, box["y"] + box["height"] / 2)


def bare_page(body: str, head: str = "") -> str:
    """``body`` in a page with only plotly.js (the book's own bundle, built by ``npm ci``; else the
    one the plotly package ships) and posviz's page script, figures.js; ``head`` goes first."""
    from posviz.sphinxext._assets import PLOTLY_JS_DEFAULT, _figures_js

    bundle = Path(__file__).resolve().parents[1] / PLOTLY_JS_DEFAULT
    if bundle.exists():
        plotly_js = bundle.read_text(encoding="utf-8")
    else:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    scripts = f"<script>{plotly_js}</script><script>{_figures_js()}</script>"
    return f"<html><head>{head}{scripts}</head><body>{body}</body></html>"
