"""What the loopback test servers (``fake_hub_server``, ``fake_openai_server``) share: an HTTP
server on 127.0.0.1 at a free port, served from a daemon thread inside a ``with`` block, and a
request handler that answers in JSON and logs nothing."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """Serves ``handler`` on 127.0.0.1 at ``port`` while a ``with`` block runs; the handler
    reaches this object as ``self.server.fake``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.fake = self
        self.port = self._httpd.server_port

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler that answers with ``reply_json`` and logs nothing."""

    def reply_json(self, status: int, payload) -> None:
        """``payload`` as a JSON body with ``status``; a client that has already left is no error."""
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up or timed out

    def log_message(self, format, *args):
        pass
