"""`hpcbench view C`: the results browser served on this machine (127.0.0.1 by default).

GET /            the page (assets/app.js, app.css)
GET /api/index.json        every submission's row, the leaderboard, provenance
GET /api/sub/<id>.json     one submission's page, read from campaign.h5 when asked for

Read-only: nothing here writes the campaign. The store lock is taken per request, never
held between them, so `collect` and `score` may run beside an open browser.

Every request's Host (and Origin, where a browser sends one) must name this server: a web page
the operator visits can point its own name at 127.0.0.1 (DNS rebinding) and would otherwise read
every source and output through the operator's browser."""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hpcbench.report.browser import asset, shell
from hpcbench.report.browser.payload import build_payload

_SUB = re.compile(r"^/api/sub/(\d+)\.json$")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The Host header values a request to this server may carry (name:port)."""
    names = set(LOOPBACK_NAMES) | set(extra)
    if not is_loopback(host):  # served to the network: its own names as well
        names |= {host, socket.gethostname(), socket.getfqdn()}
    names = {(f"[{n}]" if ":" in n and not n.startswith("[") else n).lower() for n in names}
    return frozenset(f"{n}:{port}" for n in names) | (frozenset(names) if port == 80 else frozenset())


class BrowserServer:
    def __init__(self, h5_path: Path, scoring_id: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 extra_hosts: tuple[str, ...] = ()):
        self.index, self.details = build_payload(Path(h5_path), scoring_id)
        self.index.update(details="server")
        self._index_bytes = json.dumps(self.index, default=str).encode()
        self._lock = threading.Lock()  # h5py is not safe across threads
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.hosts = allowed_hosts(host, self.httpd.server_address[1], extra_hosts)

    def refusal(self, host: str | None, origin: str | None) -> str:
        """Why a request with these headers is not answered ("": it is)."""
        if (host or "").lower() not in self.hosts:
            return f"Host {host!r} is not this server's name (DNS rebinding?); allowed: {', '.join(sorted(self.hosts))}"
        if origin is not None and origin.lower().removeprefix("http://") not in self.hosts:
            return f"Origin {origin!r} is another site's page"
        return ""

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
                why = server.refusal(self.headers.get("Host"), self.headers.get("Origin"))
                try:
                    status, ctype, body = (403, "text/plain", why.encode()) if why else server.answer(self.path)
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
