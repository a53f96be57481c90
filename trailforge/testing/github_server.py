"""A local stand-in for the GitHub search API, for tests of repository discovery.

It serves ``GET /search/repositories`` with GitHub's JSON shape (``total_count``, ``items`` with
``full_name``, ``clone_url``, ``stargazers_count``, ``default_branch``, ``fork``, ``archived``),
honours ``page``/``per_page`` and the ``stars:>=N`` qualifier, matches quoted phrases against
each repository's name, description and topics, and records every request with its
Authorization header. ``clone_url`` can point at local git repositories, so the rest of the
pipeline clones them for real. ``rate_limited`` makes the next N requests fail the way GitHub
does (403 with ``X-RateLimit-Remaining: 0`` and a reset time, or 429 with ``Retry-After``).
"""
from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGitHubServer:
    def __init__(self, repos: list[dict[str, Any]], counts: dict[str, int] | None = None):
        self.repos = repos
        self.counts = counts or {}  # phrase -> total_count to report (to exercise hit-count filtering)
        self.requests: list[dict[str, Any]] = []
        self.rate_limited = 0
        self.rate_limit_style = "reset"
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                parsed = urllib.parse.urlparse(self.path)
                params = dict(urllib.parse.parse_qsl(parsed.query))
                with server._lock:
                    server.requests.append({"path": parsed.path, "params": params,
                                            "authorization": self.headers.get("Authorization")})
                    limited = server.rate_limited > 0
                    if limited:
                        server.rate_limited -= 1
                if limited:
                    if server.rate_limit_style == "retry_after":
                        self._send(429, {"message": "secondary rate limit"}, {"Retry-After": "1"})
                    else:
                        self._send(403, {"message": "API rate limit exceeded"},
                                   {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 1)})
                    return
                if parsed.path != "/search/repositories":
                    self._send(404, {"message": "Not Found"})
                    return
                self._send(200, server.search(params))

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def search(self, params: dict[str, str]) -> dict[str, Any]:
        query = params.get("q", "")
        phrases = [p.lower() for p in re.findall(r'"([^"]+)"', query)]
        stars = re.search(r"stars:>=(\d+)", query)
        minimum = int(stars.group(1)) if stars else 0
        matches = []
        for repo in self.repos:
            text = " ".join([repo["full_name"], repo.get("description", ""), *repo.get("topics", [])]).lower()
            if all(p in text for p in phrases) and repo.get("stargazers_count", 0) >= minimum:
                matches.append(repo)
        matches.sort(key=lambda r: (-r.get("stargazers_count", 0), r["full_name"]))
        total = self.counts.get(phrases[0], len(matches)) if phrases else len(matches)
        per_page, page = int(params.get("per_page", 30)), int(params.get("page", 1))
        return {"total_count": total, "incomplete_results": False,
                "items": matches[(page - 1) * per_page: page * per_page]}

    def __enter__(self) -> "FakeGitHubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
