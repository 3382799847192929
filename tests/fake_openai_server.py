"""A scripted OpenAI-compatible chat-completions server for the backend tests.

It serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) from a thread.
``respond(body)`` chooses each answer as an action, a dict with any of:

- ``content``: the assistant message (default: the last message's content, echoed);
- ``tool_calls``: ``[{"name": ..., "arguments": dict or raw str}]``;
- ``status``: an HTTP error status to answer with instead (the error body quotes the key,
  as real servers do in part, to show that the client never repeats it);
- ``delay``: seconds to wait before answering.

The server records every request body and Authorization header, and the most requests
it held at once.
"""

from __future__ import annotations

import json
import threading
import time

from loopback import JSONHandler, LoopbackServer


class FakeOpenAIServer(LoopbackServer):
    def __init__(self):
        self.requests: list[dict] = []
        self.authorizations: list[str] = []
        self.max_active = 0
        self.respond = lambda body: {}
        self._active = 0
        self._lock = threading.Lock()
        super().__init__(_Handler)
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def script(self, *actions: dict) -> None:
        """Answer requests with these actions in turn, the last one from then on."""
        queue = list(actions)

        def respond(body):
            with self._lock:
                return queue.pop(0) if len(queue) > 1 else queue[0]

        self.respond = respond

    def _answer(self, body: dict, authorization: str) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self._active += 1
            self.max_active = max(self.max_active, self._active)
        action = self.respond(body)
        time.sleep(action.get("delay", 0))
        with self._lock:  # before the answer leaves, so a client's next request never overlaps it
            self._active -= 1
        if "status" in action:
            message = f"scripted error, key provided: {authorization}"
            return action["status"], {"error": {"message": message, "type": "scripted"}}
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": _as_json(call["arguments"])},
            }
            for i, call in enumerate(action.get("tool_calls", []))
        ]
        content = action.get("content", body["messages"][-1]["content"])
        message = {"role": "assistant", "content": content, "tool_calls": calls or None}
        prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
        return 200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage,
        }


def _as_json(arguments: dict | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


class _Handler(JSONHandler):
    def do_POST(self):
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.reply_json(*self.server.fake._answer(body, self.headers.get("Authorization", "")))
