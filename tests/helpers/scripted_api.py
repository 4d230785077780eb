"""A scripted OpenAI-compatible HTTP API on 127.0.0.1 for tests: the real ``openai`` client talks to it.

Each request gets the next scripted status (200 = a completion echoing the
prompt and seed), so retry and error paths can be driven without mocking the client.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedAPI:
    """Answers the next scripted status per request (200 = a completion echoing the prompt)."""

    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"path": self.path, **body})
                api.headers.append(dict(self.headers))
                status = api.statuses.pop(0) if api.statuses else 200
                if status == 200:
                    payload = api.answer(self.path, body)
                else:
                    payload = {"error": {"message": f"scripted {status}", "type": "x", "code": status}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @staticmethod
    def answer(path, body):
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        if path.endswith("/chat/completions"):
            text = f"chat:{body['messages'][0]['content']}:seed={body['seed']}"
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [choice], "usage": usage}
        text = f"{body['prompt']}:seed={body['seed']}"
        choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
        return {"id": "c", "object": "text_completion", "created": 0, "model": body["model"],
                "choices": [choice], "usage": usage}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
