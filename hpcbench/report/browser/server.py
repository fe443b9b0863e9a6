"""`hpcbench view C`: the results browser served on this machine (127.0.0.1 by default).

GET /            the page (assets/app.js, app.css)
GET /api/index.json        every submission's row, the leaderboard, provenance
GET /api/sub/<id>.json     one submission's page, read from campaign.h5 when asked for

Read-only: nothing here writes the campaign. The store lock is taken per request, never
held between them, so `collect` and `score` may run beside an open browser."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hpcbench.report.browser import asset, shell
from hpcbench.report.browser.payload import build_payload

_SUB = re.compile(r"^/api/sub/(\d+)\.json$")


class BrowserServer:
    def __init__(self, h5_path: Path, scoring_id: str | None = None, host: str = "127.0.0.1", port: int = 0):
        self.index, self.details = build_payload(Path(h5_path), scoring_id)
        self.index.update(details="server")
        self._index_bytes = json.dumps(self.index, default=str).encode()
        self._lock = threading.Lock()  # h5py is not safe across threads
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    def answer(self, path: str) -> tuple[int, str, bytes]:
        path = path.split("?")[0]
        if path in ("/", "/index.html"):
            return 200, "text/html; charset=utf-8", shell("server").encode()
        if path in ("/app.js", "/app.css"):
            return 200, "text/javascript" if path.endswith(".js") else "text/css", asset(path[1:])
        if path == "/api/index.json":
            return 200, "application/json", self._index_bytes
        m = _SUB.match(path)
        if m and int(m.group(1)) < len(self.details.paths):
            with self._lock:
                body = self.details.get(int(m.group(1)))
            return 200, "application/json", json.dumps(body, default=str).encode()
        return 404, "text/plain", b"not found"

    def _handler(self) -> Callable[..., Any]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                try:
                    status, ctype, body = server.answer(self.path)
                except Exception as e:  # a damaged store row: say so on the page, keep serving
                    status, ctype, body = 500, "text/plain", f"{type(e).__name__}: {e}".encode()
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.send_header("cache-control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> BrowserServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="hpcbench-view").start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
