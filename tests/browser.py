"""Headless Chromium (Debian's /usr/bin/chromium) driven over the Chrome DevTools Protocol, for the UI tests.

The browser listens on loopback only; the test talks to one page over its DevTools websocket. Clicks are real input
events (Input.dispatchMouseEvent at the element's centre), so the page sees what a user's click would produce: the
element must be visible and on top, or the click lands elsewhere and the wait that follows fails.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import websocket
from process_session import stop_session

from sv_shared.data.files import write_bytes_atomic

T = TypeVar("T")

CHROMIUM = Path("/usr/bin/chromium")
WINDOW = (1600, 1400)
SETTLE_MS = 150
"""How long an element must keep still before it counts as shown (layout settles as a page's data arrives)."""

CLICKABLE = "button, a, [role=button], [role=menuitem], [role=option], [role=tab], [role=checkbox], label"
"""What a user clicks by its visible text: buttons and links, menu entries, tabs, options."""

_MATCHES = r"""
(([selector, text, exact, within]) => {
  const root = within ? document.querySelector(within) : document;
  if (!root) return [];
  const norm = (s) => (s || "").replace(/\s+/g, " ").trim();
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && style.visibility !== "hidden" && style.display !== "none";
  };
  // Its distinct lines: a truncating label renders its text twice (once to measure it).
  const label = (el) => [...new Set((el.innerText || el.getAttribute("aria-label") || "").split("\n").map(norm))]
    .filter(Boolean).join(" ");
  // A cheap first pass (layout-free textContent holds at least the visible text) before measuring anything.
  const squeezed = (s) => (s || "").replace(/\s+/g, "").toLowerCase();
  const needle = squeezed(text);
  const matches = [...root.querySelectorAll(selector)].filter((el) => {
    if (!squeezed(el.textContent + (el.getAttribute("aria-label") || "")).includes(needle)) return false;
    const t = label(el);
    return visible(el) && (exact ? t === text : t.includes(text));
  });
  // Innermost matches only: a button inside a matching link is what the user sees and clicks.
  return matches.filter((m) => !matches.some((o) => o !== m && m.contains(o)));
})
"""
"""The visible elements of `selector` (inside `within`) whose text is (or, not exact, contains) `text`."""

_LOCATE = """
(async (el, settle) => {
  if (!el) return null;
  el.scrollIntoView({block: "center", inline: "center"});
  const before = el.getBoundingClientRect();
  await new Promise((done) => setTimeout(done, settle));
  const r = el.getBoundingClientRect();
  // Still moving (a dialog whose content is loading shifts its buttons): not yet where a click would land.
  if (["x", "y", "width", "height"].some((k) => before[k] !== r[k])) return null;
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  // Covered by something else (an overlay, a popover): a click would land on that instead.
  if (!top || !(top === el || el.contains(top))) return null;
  return {x, y, disabled: !!(el.disabled || el.getAttribute("aria-disabled") === "true")};
})
"""
"""An element scrolled into view: its centre in the viewport and whether it is disabled, once it has stopped moving
for `settle` ms and is the topmost element there; null until then."""


class BrowserError(AssertionError):
    """The page did not do what the test waited for; the message names what was missing."""


class Page:
    """One Chromium tab: navigate, evaluate JavaScript, wait for a condition, click by visible text, screenshot."""

    def __init__(self, ws_url: str, artifacts: Path) -> None:
        self._ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self._ids = itertools.count(1)
        self.artifacts = artifacts
        self.call(
            "Emulation.setDeviceMetricsOverride", width=WINDOW[0], height=WINDOW[1], deviceScaleFactor=1, mobile=False
        )

    def close(self) -> None:
        self._ws.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events that arrive meanwhile are dropped)."""
        message_id = next(self._ids)
        self._ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") != message_id:
                continue
            if "error" in message:
                raise BrowserError(f"{method} failed: {message['error']}")
            return message["result"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"JavaScript failed: {result['exceptionDetails'].get('exception', result)}")
        return result["result"].get("value")

    def navigate(self, url: str, timeout_s: float = 30.0) -> None:
        """Open `url` and return once the new document has loaded (not while the old one is still shown)."""
        self.evaluate("window.__previousDocument = true")
        self.call("Page.navigate", url=url)
        self.wait_for("!window.__previousDocument && document.readyState === 'complete'", f"load of {url}", timeout_s)

    def screenshot(self, name: str) -> Path:
        """A PNG of the viewport under the artifacts folder."""
        path = self.artifacts / f"{name}.png"
        data = self.call("Page.captureScreenshot", format="png")["data"]
        write_bytes_atomic(path, base64.b64decode(data))
        return path

    def wait_until(self, probe: Callable[[], T], done: Callable[[T], bool], what: str, timeout_s: float = 30.0) -> T:
        """Call `probe` until `done` accepts its value and return that value; on timeout, save a screenshot and fail
        naming `what` was missing and what was last seen."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = probe()
            if done(value):
                return value
            if time.monotonic() > deadline:
                shot = self.screenshot(f"failed-{_slug(what)}")
                raise BrowserError(
                    f"after {timeout_s:.0f} s the page still shows no {what}; last seen: {str(value)[:500]} "
                    f"(screenshot: {shot})"
                )
            time.sleep(0.25)

    def wait_for(self, expression: str, what: str, timeout_s: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy and return its value (see wait_until)."""
        return self.wait_until(lambda: self.evaluate(expression), bool, what, timeout_s)

    def wait_for_text(
        self,
        text: str,
        *,
        selector: str = "*",
        exact: bool = True,
        within: str = "",
        nth: int = 0,
        enabled: bool = False,
        timeout_s: float = 30.0,
    ) -> dict[str, float]:
        """Wait for the `nth` visible element (of `selector`, inside `within`) whose text is `text`; scrolled into
        view, its centre in the viewport ({"x", "y"})."""
        args = json.dumps([selector, text, exact, within])
        found = f"{_LOCATE}({_MATCHES}({args})[{nth:d}], {SETTLE_MS})"
        refuse_disabled = "true" if enabled else "false"
        condition = (
            f"(async () => {{ const p = await {found}; return p && !({refuse_disabled} && p.disabled) ? p : null; }})()"
        )
        where = f" in {within}" if within else ""
        what = f"{'enabled ' if enabled else ''}'{text}' #{nth} ({selector}{where}) that is visible, still and on top"
        return self.wait_for(condition, what, timeout_s)

    def count_text(self, text: str, *, selector: str = "*", exact: bool = True, within: str = "") -> int:
        """How many visible elements (of `selector`, inside `within`) show `text` now."""
        return self.evaluate(f"{_MATCHES}({json.dumps([selector, text, exact, within])}).length")

    def click_text(
        self,
        text: str,
        *,
        selector: str = CLICKABLE,
        exact: bool = True,
        within: str = "",
        nth: int = 0,
        timeout_s: float = 30.0,
    ) -> None:
        """Click the `nth` visible, enabled element (of `selector`, inside `within`) whose text is `text`."""
        point = self.wait_for_text(
            text, selector=selector, exact=exact, within=within, nth=nth, enabled=True, timeout_s=timeout_s
        )
        self.click_at(point["x"], point["y"])

    def type_text(self, text: str) -> None:
        """Type into the focused element, as a keyboard would commit the text."""
        self.call("Input.insertText", text=text)

    def click_at(self, x: float, y: float) -> None:
        """A left click with the real input pipeline: move, press, release."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", buttons=1, clickCount=1)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:60]


@contextmanager
def chromium_page(artifacts: Path, *, start_timeout_s: float = 30.0) -> Iterator[Page]:
    """A headless Chromium on loopback with one blank tab; the browser is ended (and its profile removed) after."""
    artifacts.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="secverify-chromium-"))
    log = profile / "chromium.log"
    with log.open("wb") as sink:
        browser = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                # Root cannot use Chromium's user-namespace sandbox; the page is our own loopback UI.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                # Loopback only: any other host name fails to resolve, so the page cannot reach out.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}",
                "about:blank",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    page: Page | None = None
    try:
        port = _devtools_port(browser, profile, log, start_timeout_s)
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        (tab,) = [target for target in targets if target["type"] == "page"]
        page = Page(tab["webSocketDebuggerUrl"], artifacts)
        yield page
    finally:
        if page is not None:
            page.close()
        stop_session(browser, wait_s=10)
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(browser: subprocess.Popen[bytes], profile: Path, log: Path, timeout_s: float) -> int:
    """The port Chromium chose: it writes it to DevToolsActivePort in its profile once it listens."""
    active = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if browser.poll() is not None:
            raise BrowserError(f"chromium exited with {browser.returncode}: {log.read_text(errors='replace')[-2000:]}")
        if active.is_file() and (lines := active.read_text().splitlines()):
            return int(lines[0])
        time.sleep(0.1)
    raise BrowserError(f"chromium did not open its DevTools port within {timeout_s:.0f} s")
