"""A loopback stand-in for the Hugging Face Hub, enough for ``create_repo`` and ``upload_folder``.

It serves, on 127.0.0.1 (a free port) from a thread, the endpoints huggingface_hub 2.4
calls for those two on its plain commit path (``HF_HUB_DISABLE_XET=1``):

- ``POST /api/repos/create``: creates a repo, 409 when it exists (``exist_ok`` accepts that);
- ``GET /api/{type}s/{owner}/{name}[/revision/{rev}]``: repo info, 404 when unknown
  (the client asks after a 401/403 from create, to see whether the repo exists anyway);
- ``POST /api/validate-yaml``: the README's metadata check, answered "no errors";
- ``POST /api/{type}s/{owner}/{name}/preupload/{rev}``: every file "regular" (inline, not LFS);
- ``POST /api/{type}s/{owner}/{name}/commit/{rev}``: ndjson lines whose ``file`` entries carry
  base64 contents; the decoded bytes are kept per repo and path.

Every request is recorded (method, path, headers with lower-case names, body); a path
it does not know is answered 404 and listed in ``unknown``. ``fail(how, on=...)`` makes
requests fail from then on: ``how`` is an HTTP status (its JSON error quotes the
Authorization header, as a careless server might, to show the client never repeats it) or
``"drop"`` (the connection closes with no answer); ``on`` limits it to one endpoint
(``create``, ``info``, ``validate``, ``preupload``, ``commit``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass

from loopback import JSONHandler, LoopbackServer

_REPO = r"/api/(?P<type>[a-z]+)s/(?P<repo>[^/]+/[^/]+)"
_ROUTES = (
    ("POST", "create", re.compile(r"/api/repos/create")),
    ("POST", "validate", re.compile(r"/api/validate-yaml")),
    ("POST", "preupload", re.compile(_REPO + r"/preupload/(?P<rev>[^/]+)")),
    ("POST", "commit", re.compile(_REPO + r"/commit/(?P<rev>[^/]+)")),
    ("GET", "info", re.compile(_REPO + r"(?:/revision/(?P<rev>[^/]+))?")),
)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FakeHubServer(LoopbackServer):
    def __init__(self):
        self.requests: list[Request] = []
        self.unknown: list[str] = []
        self.repos: dict[str, dict] = {}  # "owner/name" -> {"type", "private", "files": {path: bytes}}
        self.failure: tuple[int | str, str | None] | None = None
        self._lock = threading.Lock()
        super().__init__(_Handler)
        self.url = f"http://127.0.0.1:{self.port}"

    def fail(self, how: int | str, on: str | None = None) -> None:
        self.failure = (how, on)

    def files(self, repo_id: str) -> dict[str, bytes]:
        return self.repos[repo_id]["files"]

    def _route(self, method: str, path: str) -> tuple[str | None, dict]:
        for verb, name, pattern in _ROUTES:
            match = pattern.fullmatch(path)
            if verb == method and match:
                return name, match.groupdict()
        return None, {}

    def _answer(self, request: Request) -> tuple[int, dict] | None:
        """(status, JSON payload) for a request, or None to drop the connection."""
        name, parts = self._route(request.method, request.path.split("?")[0])
        with self._lock:
            self.requests.append(request)
            if name is None:
                self.unknown.append(f"{request.method} {request.path}")
                return 404, {"error": "not found"}
            if self.failure and self.failure[1] in (None, name):
                how = self.failure[0]
                if how == "drop":
                    return None
                return how, {"error": f"scripted failure, credentials seen: {request.headers.get('authorization')}"}
            return getattr(self, f"_{name}")(request, **parts)

    def _create(self, request: Request) -> tuple[int, dict]:
        body = json.loads(request.body)
        repo_id = f"{body['organization']}/{body['name']}"
        url = f"{self.url}/{body.get('type', 'model')}s/{repo_id}"
        if repo_id in self.repos:
            return 409, {"error": "You already created this repo", "url": url}
        self.repos[repo_id] = {"type": body.get("type"), "private": body.get("visibility") == "private", "files": {}}
        return 200, {"url": url, "name": repo_id}

    def _info(self, request: Request, type: str, repo: str, rev: str | None = None) -> tuple[int, dict]:
        if repo not in self.repos:
            return 404, {"error": "Repository not found"}
        return 200, {"id": repo, "private": self.repos[repo]["private"], "sha": _sha(self.repos[repo]["files"])}

    def _validate(self, request: Request) -> tuple[int, dict]:
        return 200, {"errors": [], "warnings": []}

    def _preupload(self, request: Request, type: str, repo: str, rev: str) -> tuple[int, dict]:
        if repo not in self.repos:
            return 404, {"error": "Repository not found"}
        files = json.loads(request.body)["files"]
        return 200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}

    def _commit(self, request: Request, type: str, repo: str, rev: str) -> tuple[int, dict]:
        if repo not in self.repos:
            return 404, {"error": "Repository not found"}
        files = self.repos[repo]["files"]
        for line in request.body.splitlines():
            entry = json.loads(line)
            if entry["key"] == "file":
                files[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
            elif entry["key"] == "deletedFile":
                files.pop(entry["value"]["path"], None)
            elif entry["key"] != "header":
                return 400, {"error": f"unsupported commit entry {entry['key']}"}
        oid = _sha(files)
        return 200, {"commitUrl": f"{self.url}/{type}s/{repo}/commit/{oid}", "commitOid": oid, "pullRequestUrl": None}


def _sha(files: dict[str, bytes]) -> str:
    digest = hashlib.sha1()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path])
    return digest.hexdigest()


class _Handler(JSONHandler):
    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Request(self.command, self.path, headers, self.rfile.read(length))
        answer = self.server.fake._answer(request)
        if answer is None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.reply_json(*answer)

    do_GET = do_POST = _serve
