"""The seven research tools one ideation trajectory works with, and the session that serves them.

Two tools look at the literature: ``WebSearch`` ranks papers dated on or before the case's cutoff, and
``Scraper`` opens the page behind a URL. Five tools work on files in the trajectory's own artifact
workspace (``claim_audit.md``, ``synthesis.md`` and so on): ``View``, ``Write``, ``Edit``, ``Glob`` and
``Grep``.

A ``ResearchSession`` belongs to one trajectory. It keeps what that trajectory has been shown, because the
quality checks reject a trajectory that opens a URL it never saw or cites a title before it appeared:

- ``seen_urls``: every URL in a search result or in a page the Scraper returned (normalised with
  ``corpus.normalize_url``). Only these URLs can be scraped. URLs in workspace files do not count: the
  trajectory wrote those itself.
- ``seen_titles`` and ``observed_paper_ids``: the papers that appeared in search results or pages.

Every argument comes from a model and is untrusted. ``call`` never raises for a bad call: malformed JSON,
an unknown tool, a missing or mistyped field, a path outside the workspace, all come back as an
observation that starts with ``Error:`` and says what was wrong, so the model can correct itself.

``ArxivAPIBackend`` can stand in for the local index (same ``search``/``get_by_url`` interface) when a
recipe wants live arXiv results; nothing uses it by default.
"""
from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Protocol

from .corpus import Paper, SearchHit, normalize_url

TOOL_NAMES = ("WebSearch", "Scraper", "View", "Write", "Edit", "Glob", "Grep")


def _function(name: str, description: str, properties: dict[str, dict], required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False},
    }}


TOOL_SCHEMAS: list[dict] = [
    _function("WebSearch",
              "Search the scientific literature. Returns ranked papers, each with id, title, url, date and a "
              "short snippet of its abstract.",
              {"query": {"type": "string", "description": "Keywords describing what to look for."},
               "max_results": {"type": "integer", "minimum": 1, "maximum": 20,
                               "description": "How many results to return (default 10)."}},
              ["query"]),
    _function("Scraper",
              "Open the page of a paper: title, id, authors, date, abstract and full text when available. "
              "Only URLs that appeared in earlier search results or pages can be opened.",
              {"url": {"type": "string", "description": "A URL taken from an earlier result or page."}},
              ["url"]),
    _function("View",
              "Show a workspace file with line numbers, or list a workspace folder.",
              {"path": {"type": "string", "description": "Path relative to the workspace; '.' is the workspace."},
               "offset": {"type": "integer", "minimum": 1, "description": "First line to show (default 1)."},
               "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."}},
              ["path"]),
    _function("Write",
              "Create a workspace file, or replace its whole content. Missing folders are created.",
              {"path": {"type": "string", "description": "Path relative to the workspace."},
               "content": {"type": "string", "description": "The complete new content of the file."}},
              ["path", "content"]),
    _function("Edit",
              "Replace one passage of a workspace file. old_string must occur exactly once in the file.",
              {"path": {"type": "string", "description": "Path relative to the workspace."},
               "old_string": {"type": "string", "description": "The exact text to replace; it must be unique."},
               "new_string": {"type": "string", "description": "The text to put in its place."}},
              ["path", "old_string", "new_string"]),
    _function("Glob",
              "List workspace paths that match a glob pattern such as '*.md' or 'notes/**/*.md'.",
              {"pattern": {"type": "string", "description": "Glob pattern relative to the workspace."}},
              ["pattern"]),
    _function("Grep",
              "Search workspace files for a regular expression; prints path:line: text for each match.",
              {"pattern": {"type": "string", "description": "A Python regular expression."},
               "path_glob": {"type": "string",
                             "description": "Only search files matching this glob (default: all files)."}},
              ["pattern"]),
]

_SCHEMA_BY_NAME = {schema["function"]["name"]: schema["function"]["parameters"] for schema in TOOL_SCHEMAS}
_JSON_TYPES = {"string": str, "integer": int}


class SearchBackend(Protocol):
    """What the literature tools need; ``corpus.LiteratureIndex`` and ``ArxivAPIBackend`` both provide it."""

    def search(self, query: str, cutoff: date, k: int = 10) -> list[SearchHit]: ...

    def get_by_url(self, url: str) -> Paper | None: ...


@dataclass(frozen=True)
class ToolLimits:
    """Bounds that keep observations and workspace files a sensible size for a model's context."""

    max_observation_chars: int = 12_000
    snippet_chars: int = 300
    default_results: int = 10
    max_results: int = 20
    view_lines: int = 400
    max_file_chars: int = 200_000
    max_listed_paths: int = 500
    max_grep_matches: int = 200
    grep_line_chars: int = 300


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    text: str


class ToolFailure(Exception):
    """A call the session refuses; the message becomes the observation."""


_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
_WORD = re.compile(r"\w\w+")


def urls_in(text: str) -> list[str]:
    return [match.rstrip(".,;:!?") for match in _URL.findall(text)]


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def snippet(text: str, query: str, limit: int) -> str:
    """About ``limit`` characters of ``text``, starting at the sentence that shares most words with the query."""
    text = " ".join(text.split())  # single spaces, so sentence lengths add up to offsets below
    sentences = re.split(r"(?<=[.!?]) ", text)
    query_words = {w.lower() for w in _WORD.findall(query)}
    overlaps = [len(query_words & {w.lower() for w in _WORD.findall(s)}) for s in sentences]
    best = max(range(len(sentences)), key=lambda i: (overlaps[i], -i)) if sentences else 0
    start = sum(len(s) + 1 for s in sentences[:best])
    piece = text[start:]
    if len(piece) > limit:
        piece = piece[:limit].rsplit(" ", 1)[0] + " ..."
    return ("... " if start else "") + piece


def render_page(paper: Paper) -> str:
    lines = [f"Title: {paper.title}", f"ID: {paper.paper_id}", f"Authors: {', '.join(paper.authors)}",
             f"Date: {paper.date.isoformat()}", f"URL: {paper.url}", "", "Abstract:", paper.abstract]
    if paper.full_text:
        lines += ["", "Full text:", paper.full_text]
    return "\n".join(lines)


class ResearchSession:
    """The tools of one trajectory: literature up to ``cutoff`` through ``index``, files under ``workspace``."""

    def __init__(self, index: SearchBackend, cutoff: date, workspace: Path, limits: ToolLimits | None = None):
        self.index = index
        self.cutoff = cutoff
        workspace = Path(workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        self.workspace = workspace.resolve()
        self.limits = limits or ToolLimits()
        self.seen_urls: set[str] = set()
        self.seen_titles: set[str] = set()
        self.observed_paper_ids: set[str] = set()
        self._handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "WebSearch": self._web_search, "Scraper": self._scraper, "View": self._view, "Write": self._write,
            "Edit": self._edit, "Glob": self._glob, "Grep": self._grep,
        }

    # ----------------------------------------------------------------------------------------- dispatch

    def call(self, name: str, arguments: dict | str) -> str:
        """The observation text for one tool call (an ``Error: ...`` text when the call cannot be served)."""
        return self.run(name, arguments).text

    def run(self, name: str, arguments: dict | str) -> ToolResult:
        """Like ``call``, and also says whether the call succeeded."""
        try:
            handler = self._handlers.get(name)
            if handler is None:
                raise ToolFailure(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")
            text = handler(parse_arguments(name, arguments))
            return ToolResult(True, truncate(text, self.limits.max_observation_chars))
        except ToolFailure as exc:
            return ToolResult(False, f"Error: {exc}")
        except (OSError, ValueError) as exc:
            # The file system said no (a file where a folder should be, an unencodable name, ...). strerror
            # keeps the host's absolute workspace path out of the observation.
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            return ToolResult(False, f"Error: {name} failed: {reason}")

    def note_observed(self, paper: Paper) -> None:
        self.seen_urls.add(normalize_url(paper.url))
        self.seen_titles.add(paper.title)
        self.observed_paper_ids.add(paper.paper_id)

    # ----------------------------------------------------------------------------------------- literature

    def _web_search(self, args: dict[str, Any]) -> str:
        query = args["query"].strip()
        if not query:
            raise ToolFailure("the query is empty")
        k = min(max(args.get("max_results", self.limits.default_results), 1), self.limits.max_results)
        try:
            hits = self.index.search(query, self.cutoff, k)
        except (OSError, ValueError) as exc:  # an online backend can fail; the trajectory sees why
            raise ToolFailure(f"the search could not be run: {exc}") from None
        # Checked again here so that no backend, local or online, can leak a paper from after the cutoff.
        hits = [hit for hit in hits if hit.paper.date <= self.cutoff][:k]
        results = []
        for hit in hits:
            paper = hit.paper
            # The id lets a trajectory cite a source as [id]; QC counts an id as observed once it was shown.
            results.append({"id": paper.paper_id, "title": paper.title, "url": paper.url, "date": paper.date.isoformat(),
                            "snippet": snippet(paper.abstract, query, self.limits.snippet_chars)})
            self.note_observed(paper)
            # The query is not echoed back, so a URL the model typed itself never becomes "seen".
            self.seen_urls.update(normalize_url(u) for u in urls_in(results[-1]["snippet"]))
        if not results:
            return json.dumps({"results": [], "note": "No papers matched this query."})
        return json.dumps({"results": results}, ensure_ascii=False, indent=1)

    def _scraper(self, args: dict[str, Any]) -> str:
        url = args["url"].strip()
        if normalize_url(url) not in self.seen_urls:
            raise ToolFailure(f"the URL {url} has not appeared in any earlier search result or page of this "
                              "session; open only URLs you have seen")
        paper = self.index.get_by_url(url)
        # A paper from after the cutoff gets the same answer as a missing one, so its existence stays hidden.
        if paper is None or paper.date > self.cutoff:
            raise ToolFailure(f"no page is available for {url}")
        page = truncate(render_page(paper), self.limits.max_observation_chars)
        self.note_observed(paper)
        # Only URLs in the text actually returned count as seen; a truncated tail was never shown.
        self.seen_urls.update(normalize_url(u) for u in urls_in(page))
        return page

    # ----------------------------------------------------------------------------------------- workspace

    def _resolve(self, relative: str) -> Path:
        """``relative`` as a path inside the workspace, or a refusal: no absolute paths, no '..', no link out."""
        if not relative.strip():
            raise ToolFailure("the path is empty")
        if "\x00" in relative:
            raise ToolFailure("the path contains a NUL character")
        if (PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).is_absolute()
                or relative.startswith("~")):
            raise ToolFailure(f"{relative!r} is an absolute path; give a path relative to the workspace")
        if ".." in PurePosixPath(relative.replace("\\", "/")).parts:
            raise ToolFailure(f"{relative!r} contains '..'; paths must stay inside the workspace")
        resolved = (self.workspace / relative).resolve()
        if not resolved.is_relative_to(self.workspace):
            raise ToolFailure(f"{relative!r} leads outside the workspace through a symbolic link")
        return resolved

    def _shown(self, path: Path) -> str:
        relative = path.relative_to(self.workspace).as_posix()
        return relative or "."

    def _read_text(self, path: Path, relative: str) -> str:
        if not path.exists():
            raise ToolFailure(f"there is no file {relative!r} in the workspace")
        if path.is_dir():
            raise ToolFailure(f"{relative!r} is a folder, not a file")
        return path.read_text(encoding="utf-8", errors="replace")

    def _view(self, args: dict[str, Any]) -> str:
        path = self._resolve(args["path"])
        if path.is_dir():
            entries = sorted(path.iterdir(), key=lambda p: p.name)
            listed = [p.name + ("/" if p.is_dir() else "") for p in entries[: self.limits.max_listed_paths]]
            more = len(entries) - len(listed)
            header = f"{self._shown(path)}/ ({len(entries)} entries)"
            return "\n".join([header, *listed] + ([f"[... {more} more entries]"] if more > 0 else []))
        lines = self._read_text(path, args["path"]).splitlines()
        offset = max(args.get("offset", 1), 1)
        limit = max(args.get("limit", self.limits.view_lines), 1)
        shown = lines[offset - 1: offset - 1 + limit]
        if not lines:
            return f"{self._shown(path)} is empty."
        if not shown:
            raise ToolFailure(f"{args['path']!r} has {len(lines)} lines; offset {offset} is past the end")
        numbered = [f"{number:6d}\t{line}" for number, line in enumerate(shown, start=offset)]
        last = offset + len(shown) - 1
        footer = [] if last >= len(lines) else [f"[lines {offset}-{last} of {len(lines)}]"]
        return "\n".join(numbered + footer)

    def _write(self, args: dict[str, Any]) -> str:
        path, content = self._resolve(args["path"]), args["content"]
        if len(content) > self.limits.max_file_chars:
            raise ToolFailure(f"the content has {len(content)} characters; the limit is {self.limits.max_file_chars}")
        if path.is_dir():
            raise ToolFailure(f"{args['path']!r} is a folder, not a file")
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        verb = "Replaced" if existed else "Created"
        return f"{verb} {self._shown(path)} ({len(content)} characters, {len(content.splitlines())} lines)."

    def _edit(self, args: dict[str, Any]) -> str:
        path, old, new = self._resolve(args["path"]), args["old_string"], args["new_string"]
        if not old:
            raise ToolFailure("old_string is empty; give the exact text to replace")
        text = self._read_text(path, args["path"])
        count = text.count(old)
        if count == 0:
            raise ToolFailure(f"old_string does not occur in {args['path']!r}")
        if count > 1:
            raise ToolFailure(f"old_string occurs {count} times in {args['path']!r}; "
                              "include more surrounding text so that it is unique")
        updated = text.replace(old, new, 1)
        if len(updated) > self.limits.max_file_chars:
            raise ToolFailure(f"the edited file would have {len(updated)} characters; "
                              f"the limit is {self.limits.max_file_chars}")
        path.write_text(updated, encoding="utf-8")
        return f"Edited {self._shown(path)}: replaced 1 passage ({len(old)} -> {len(new)} characters)."

    def _matching(self, pattern: str) -> list[Path]:
        """Workspace paths matching a glob, sorted; links that point outside the workspace are left out."""
        if not pattern.strip():
            raise ToolFailure("the glob pattern is empty")
        pure = PurePosixPath(pattern)
        if pure.is_absolute() or PureWindowsPath(pattern).is_absolute() or pattern.startswith("~"):
            raise ToolFailure(f"{pattern!r} is an absolute pattern; give one relative to the workspace")
        if ".." in pure.parts:
            raise ToolFailure(f"{pattern!r} contains '..'; patterns must stay inside the workspace")
        try:
            found = list(self.workspace.glob(pattern))
        except (ValueError, NotImplementedError) as exc:
            raise ToolFailure(f"bad glob pattern {pattern!r}: {exc}") from None
        inside = [p for p in found if p.resolve().is_relative_to(self.workspace) and p != self.workspace]
        return sorted(inside, key=lambda p: p.relative_to(self.workspace).as_posix())

    def _glob(self, args: dict[str, Any]) -> str:
        paths = self._matching(args["pattern"])
        if not paths:
            return f"No workspace paths match {args['pattern']!r}."
        listed = [self._shown(p) + ("/" if p.is_dir() else "") for p in paths[: self.limits.max_listed_paths]]
        more = len(paths) - len(listed)
        return "\n".join(listed + ([f"[... {more} more paths]"] if more > 0 else []))

    def _grep(self, args: dict[str, Any]) -> str:
        try:
            regex = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolFailure(f"bad regular expression {args['pattern']!r}: {exc}") from None
        files = [p for p in self._matching(args.get("path_glob", "**/*")) if p.is_file()]
        matches: list[str] = []
        limit = self.limits.max_grep_matches
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            if "\x00" in text[:8192]:
                continue  # a binary file: its "lines" mean nothing to a reader
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    matches.append(f"{self._shown(path)}:{number}: {line[: self.limits.grep_line_chars]}")
                    if len(matches) > limit:
                        break
            if len(matches) > limit:
                break
        if not matches:
            return f"No matches for {args['pattern']!r} in {len(files)} files."
        if len(matches) > limit:
            return "\n".join(matches[:limit] + [f"[stopped after {limit} matches]"])
        return "\n".join(matches)


def parse_arguments(name: str, arguments: dict | str) -> dict[str, Any]:
    """The arguments of a call to tool ``name`` as a dict checked against its schema, or a ToolFailure."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolFailure(f"the arguments of {name} are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ToolFailure(f"the arguments of {name} must be a JSON object, not {type(arguments).__name__}")
    schema = _SCHEMA_BY_NAME[name]
    missing = [field for field in schema["required"] if field not in arguments]
    if missing:
        raise ToolFailure(f"{name} needs the field(s) {', '.join(missing)}")
    unknown = sorted(set(arguments) - set(schema["properties"]))
    if unknown:
        raise ToolFailure(f"{name} has no field(s) {', '.join(unknown)}; "
                          f"its fields are {', '.join(schema['properties'])}")
    for field, value in arguments.items():
        expected = schema["properties"][field]["type"]
        # bool is a subclass of int in Python, but true is not a number of results.
        if not isinstance(value, _JSON_TYPES[expected]) or isinstance(value, bool):
            raise ToolFailure(f"{name}.{field} must be a JSON {expected}, not {type(value).__name__}")
    return arguments


# ------------------------------------------------------------------------------------------------ arXiv

ARXIV_API_URL = "https://export.arxiv.org/api/query"
_ATOM = {"atom": "http://www.w3.org/2005/Atom"}


class ArxivAPIError(ValueError):
    """The arXiv API answered with an error entry instead of results."""


def _arxiv_id_from_entry_id(entry_id: str) -> str:
    """``http://arxiv.org/abs/2101.01234v2`` -> ``2101.01234`` (old ids such as ``hep-th/9901001`` too)."""
    tail = entry_id.split("/abs/", 1)[-1]
    return re.sub(r"v\d+$", "", tail)


def parse_arxiv_atom(xml_text: str) -> list[Paper]:
    """Papers from an arXiv API Atom feed; the date is ``published``, the first version's date."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ArxivAPIError(f"the answer is not an Atom feed: {exc}") from None
    papers = []
    for entry in root.findall("atom:entry", _ATOM):
        entry_id = (entry.findtext("atom:id", "", _ATOM) or "").strip()
        title = " ".join((entry.findtext("atom:title", "", _ATOM) or "").split())
        summary = " ".join((entry.findtext("atom:summary", "", _ATOM) or "").split())
        if "/api/errors" in entry_id:
            raise ArxivAPIError(summary or title or "the arXiv API reported an error")
        published = (entry.findtext("atom:published", "", _ATOM) or "").strip()
        if not entry_id or not title or not published:
            continue
        arxiv_id = _arxiv_id_from_entry_id(entry_id)
        papers.append(Paper(
            paper_id=arxiv_id,
            title=title,
            abstract=summary,
            authors=[" ".join((a.findtext("atom:name", "", _ATOM) or "").split())
                     for a in entry.findall("atom:author", _ATOM)],
            date=datetime.fromisoformat(published.replace("Z", "+00:00")).date(),
            url=f"https://arxiv.org/abs/{arxiv_id}",
        ))
    return papers


def _urllib_fetch(url: str, timeout_s: float) -> str:
    request = urllib.request.Request(url, headers={"User-Agent": "trailforge-ideation/1 (research corpus builder)"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return response.read().decode("utf-8", errors="replace")


class ArxivAPIBackend:
    """Live arXiv search behind the ``SearchBackend`` interface, at most one request per ``min_interval_s``.

    The query's words are all required (``all:`` terms joined by AND), the API is asked only for papers
    submitted up to the cutoff day, and the results are filtered by date again on arrival. Pages are
    served from the papers earlier searches returned, so scraping costs no request. Not used by default.
    """

    def __init__(self, *, min_interval_s: float = 3.0, timeout_s: float = 30.0, api_url: str = ARXIV_API_URL,
                 fetch: Callable[[str, float], str] = _urllib_fetch):
        self.min_interval_s = min_interval_s
        self.timeout_s = timeout_s
        self.api_url = api_url
        self._fetch = fetch
        self._last_request: float | None = None
        self._papers_by_url: dict[str, Paper] = {}
        self._turn = threading.Lock()  # cases run on executor threads share one request rate

    # A Ray worker gets its own copy, and so its own request rate (see conf/tools/research.yaml).
    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_turn"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._turn = threading.Lock()

    def _wait_for_turn(self) -> None:
        with self._turn:
            if self._last_request is not None:
                remaining = self.min_interval_s - (time.monotonic() - self._last_request)
                if remaining > 0:
                    time.sleep(remaining)
            self._last_request = time.monotonic()

    def search(self, query: str, cutoff: date, k: int = 10) -> list[SearchHit]:
        words = _WORD.findall(query)
        if not words or k < 1:
            return []
        terms = " AND ".join(f"all:{word}" for word in words)
        search_query = f"({terms}) AND submittedDate:[190001010000 TO {cutoff:%Y%m%d}2359]"
        url = self.api_url + "?" + urllib.parse.urlencode(
            {"search_query": search_query, "start": 0, "max_results": k, "sortBy": "relevance"})
        self._wait_for_turn()
        papers = [p for p in parse_arxiv_atom(self._fetch(url, self.timeout_s)) if p.date <= cutoff][:k]
        for paper in papers:
            self._papers_by_url[normalize_url(paper.url)] = paper
        # The API gives an order but no scores; the score is the reciprocal rank.
        return [SearchHit(paper, 1.0 / rank, rank) for rank, paper in enumerate(papers, start=1)]

    def get_by_url(self, url: str) -> Paper | None:
        return self._papers_by_url.get(normalize_url(url))
