"""Repository discovery at scale through the GitHub search API.

1. A keyword pool per discipline: the domain's vocabulary, optionally expanded by a model with
   software, file formats, databases/datasets and pipelines of the field.
2. Hit-count filtering: each keyword's repository count decides whether it is kept. A term
   that is too rare finds nothing worth the queries; one that is too generic finds everything.
3. Search per kept keyword (Python, at least ``min_stars``), paged, deduplicated, up to the budget.
4. The candidates go on as git URLs to the ordinary ``discover`` filters (scientific data present,
   paper backing, discipline by vocabulary), which look at the cloned tree itself.

The client sends the token from ``source.token_env`` (never from config), follows pagination,
waits out rate limits (``Retry-After``, or ``X-RateLimit-Reset`` when ``X-RateLimit-Remaining``
is 0), and caches every response by URL, so a re-run sends no request.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pydantic import BaseModel, Field

from ..cache import ContentCache
from ..config.schema import RepoEntry
from ..io import StageRecorder

GITHUB_OP = "github.get"
GITHUB_VERSION = 1


class GitHubError(RuntimeError):
    pass


class GitHubClient:
    def __init__(self, api_url: str, cache: ContentCache, token_env: str | None = "GITHUB_TOKEN",
                 max_wait_s: float = 60.0, max_retries: int = 5, timeout_s: float = 30.0):
        self.api_url = api_url.rstrip("/")
        self.cache = cache
        self.token_env = token_env
        self.max_wait_s = max_wait_s
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.requests_sent = 0
        self.rate_limit_waits = 0

    def get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        """GET a JSON resource (cached by URL; the token is not part of the key)."""
        url = f"{self.api_url}{path}?{urllib.parse.urlencode(sorted(params.items()))}"
        value, _ = self.cache.get_or_compute(GITHUB_OP, GITHUB_VERSION, {"url": url}, lambda: self._fetch(url))
        return value

    def _fetch(self, url: str) -> dict[str, Any]:
        headers = {"Accept": "application/vnd.github+json", "User-Agent": "trailforge"}
        token = os.environ.get(self.token_env) if self.token_env else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        for attempt in range(self.max_retries + 1):
            self.requests_sent += 1
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                            timeout=self.timeout_s) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                wait = self._rate_limit_wait(exc)
                if wait is None or attempt == self.max_retries:
                    raise GitHubError(f"GitHub answered {exc.code} for {url}") from None
                self.rate_limit_waits += 1
                time.sleep(wait)
        raise GitHubError(f"gave up on {url}")

    def _rate_limit_wait(self, exc: urllib.error.HTTPError) -> float | None:
        if exc.code not in (403, 429):
            return None
        retry_after = exc.headers.get("Retry-After")
        if retry_after:
            return min(float(retry_after), self.max_wait_s)
        if exc.headers.get("X-RateLimit-Remaining") == "0":
            reset = float(exc.headers.get("X-RateLimit-Reset", time.time() + 1))
            return min(max(reset - time.time(), 0.0) + 0.1, self.max_wait_s)
        return None if exc.code == 403 else 1.0

    def count(self, query: str) -> int:
        return int(self.get("/search/repositories", {"q": query, "per_page": 1, "page": 1})["total_count"])

    def search(self, query: str, limit: int, per_page: int = 100) -> list[dict[str, Any]]:
        items, page = [], 1
        while len(items) < limit:
            data = self.get("/search/repositories", {"q": query, "per_page": per_page, "page": page,
                                                     "sort": "stars", "order": "desc"})
            batch = data.get("items", [])
            items += batch
            if len(batch) < per_page or page * per_page >= min(int(data.get("total_count", 0)), 1000):
                break  # GitHub serves at most 1000 results per query
            page += 1
        return items[:limit]


class KeywordPool(BaseModel):
    software: list[str] = Field(default_factory=list)
    file_formats: list[str] = Field(default_factory=list)
    databases: list[str] = Field(default_factory=list)
    pipelines: list[str] = Field(default_factory=list)

    def terms(self) -> list[str]:
        return [*self.software, *self.file_formats, *self.databases, *self.pipelines]


def expand_keywords(discipline: str, seeds: list[str], llm) -> list[str]:
    messages = [
        {"role": "system", "content": (
            "You help find public scientific code repositories. For the discipline named, list specific search "
            "terms in four groups: software and libraries its researchers use, data file formats, databases or "
            "datasets, and analysis pipelines. Prefer precise names over broad words; no generic discipline "
            "names. Reply with a JSON object with the keys software, file_formats, databases, pipelines (lists "
            "of short strings).")},
        {"role": "user", "content": json.dumps({"discipline": discipline, "known_terms": seeds})},
    ]
    return llm.structured(messages, KeywordPool, role="generator").terms()


def search_candidates(source, domain, client: GitHubClient, llm, max_repos: int,
                      recorder: StageRecorder) -> list[RepoEntry]:
    """Git URLs of candidate repositories for the domain, best-starred first, deduplicated."""
    disciplines = domain.disciplines if domain.allowed == "all" else {
        k: v for k, v in domain.disciplines.items() if k in domain.allowed}
    found: dict[str, RepoEntry] = {}
    seen: set[str] = set()
    for discipline, vocabulary in sorted(disciplines.items()):
        terms = list(dict.fromkeys(vocabulary))
        if source.expand_keywords and llm is not None:
            terms = list(dict.fromkeys(terms + [t.strip() for t in expand_keywords(discipline, terms, llm)
                                                if t.strip()]))
        terms = terms[:source.keywords_per_discipline]
        recorder.count("keywords_considered", len(terms))
        for term in terms:
            hits = client.count(f'"{term}" language:python')
            if hits < source.min_keyword_hits:
                recorder.reject(f"keyword:{discipline}:{term}", "keyword_too_rare",
                                f"{hits} repositories (< source.min_keyword_hits={source.min_keyword_hits})")
                continue
            if hits > source.max_keyword_hits:
                recorder.reject(f"keyword:{discipline}:{term}", "keyword_too_generic",
                                f"{hits} repositories (> source.max_keyword_hits={source.max_keyword_hits})")
                continue
            recorder.count("keywords_kept")
            query = f'"{term}" language:python stars:>={source.min_stars}'
            for item in client.search(query, source.repos_per_keyword):
                name = item["full_name"]
                if name in seen:
                    continue
                seen.add(name)
                if item.get("fork") or item.get("archived"):
                    recorder.reject(name, "fork_or_archived", "forks and archived repositories are skipped")
                    continue
                if int(item.get("stargazers_count", 0)) < source.min_stars:
                    recorder.reject(name, "below_min_stars", f"{item.get('stargazers_count')} stars "
                                    f"(< source.min_stars={source.min_stars})")
                    continue
                found[name] = RepoEntry(url=item["clone_url"], name=name.replace("/", "-"),
                                        ref=item.get("default_branch"))
    recorder.figures["github"] = {"requests": client.requests_sent, "rate_limit_waits": client.rate_limit_waits}
    entries = list(found.values())
    if len(entries) > max_repos:
        recorder.count("candidates_over_budget", len(entries) - max_repos)
    return entries[:max_repos]
