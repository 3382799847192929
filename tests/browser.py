"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no driver, no websocket library, no browser download; Debian's ``chromium`` package is enough.

``open_page`` loads a file in a fresh browser (a new user-data dir every time, none of the
browser's background connections) and returns what a reader's browser made of it: each image's
source and natural width once every image has loaded or failed, the page's title, its text and
its HTML.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",  # as root, the sandbox refuses to start
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",  # on a closed network these connections are refused
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)
TIMEOUT = 60.0  # seconds for a page to load and its images to decode

# Resolves once every image has loaded or failed, then describes the page.
PAGE_REPORT = """
Promise.all(Array.from(document.images).map(img => img.complete ? null
    : new Promise(done => { img.onload = img.onerror = done; })))
  .then(() => JSON.stringify({
    title: document.title,
    images: Array.from(document.images).map(img => ({src: img.currentSrc.slice(0, 80), width: img.naturalWidth})),
    text: document.body ? document.body.innerText : "",
    html: document.documentElement.outerHTML,
  }))
"""


def executable() -> str | None:
    """Debian's chromium (or another Chromium on PATH), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


class _Pipe:
    """The DevTools protocol over fds 3 (to the browser) and 4 (from it): JSON messages ending in NUL."""

    def __init__(self, binary: str, profile_dir: Path):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds():  # the browser reads fd 3 and writes fd 4
            read, write = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict:
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._receive())

    def _receive(self) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the browser sent nothing for {TIMEOUT:.0f} s")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe (it exited)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def open_page(path: str | os.PathLike, binary: str | None = None) -> dict:
    """Load ``path`` in a fresh headless browser; its title, images (src, natural width), text and HTML."""
    binary = binary or executable()
    if binary is None:
        raise FileNotFoundError("no chromium on PATH")
    with tempfile.TemporaryDirectory(prefix="paperlib-chromium-") as profile_dir:
        pipe = _Pipe(binary, Path(profile_dir))
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            pipe.send("Page.enable", session=session)
            pipe.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
            pipe.wait_for("Page.loadEventFired", session)
            result = pipe.send(
                "Runtime.evaluate",
                {"expression": PAGE_REPORT, "awaitPromise": True, "returnByValue": True},
                session=session,
            )
        finally:
            pipe.close()
    if "exceptionDetails" in result:
        raise RuntimeError(f"the page report failed: {result['exceptionDetails'].get('text')}")
    return json.loads(result["result"]["value"])
