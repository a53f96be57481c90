"""The literature corpus: papers read from files and a lexical index that never looks past a cutoff date.

Two file formats are read:

- **JSONL**, one paper per line: ``id`` (or ``paper_id``), ``title``, ``abstract``, ``authors`` (a list of
  names, or one string of names separated by commas or "and"), ``date`` and ``url``, plus an optional
  ``full_text``. A date is ``YYYY-MM-DD`` or ``YYYY-MM`` (an ISO date-time is cut to its date).
- **The arXiv metadata snapshot** (``arxiv-metadata-oai-snapshot.json`` as distributed on Kaggle): one JSON
  object per line with ``id``, ``title``, ``abstract``, ``authors`` or ``authors_parsed``, ``versions``
  and ``categories``. A paper's date is the creation date of its first version, because that is when the
  work became public; later revisions do not make it newer.

A line that cannot become a paper is a reject ``(where, reason, message)`` with ``where`` = ``file:line``,
so callers can count and report every dropped record; a bad line never stops the read.

Cutoff rule: a paper is visible to a case when its date is **on or before** the case's cutoff date. A
paper dated exactly on the cutoff counts as already published. A month-only date is taken as the month's
last day, so a paper whose day is unknown is hidden until the whole month lies before the cutoff: the
index would rather hide a paper that was in fact available than show one that was not.
"""
from __future__ import annotations

import calendar
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..io.jsonl import json_objects

Reject = tuple[str, str, str]  # (where, reason code, message)

ARXIV_ABS_URL = "https://arxiv.org/abs/{}"


@dataclass
class Paper:
    paper_id: str
    title: str
    abstract: str
    authors: list[str]
    date: date
    url: str
    full_text: str | None = None


@dataclass(frozen=True)
class SearchHit:
    paper: Paper
    score: float
    rank: int  # 1 for the best hit


class CorpusFormatError(ValueError):
    """A record that cannot become a paper; the message says which field and why."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------------------------------------- fields

_DATE = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?(?:[T ].*)?$")


def parse_paper_date(value: Any) -> date:
    """``YYYY-MM-DD`` (or an ISO date-time) as that day; ``YYYY-MM`` as the last day of that month."""
    if isinstance(value, date):
        return value
    match = _DATE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise CorpusFormatError("bad_date", f"date {value!r} is not YYYY-MM-DD or YYYY-MM")
    year, month = int(match.group(1)), int(match.group(2))
    try:
        if match.group(3) is None:
            # Unknown day: the latest possible day keeps the paper hidden from cutoffs inside that month.
            return date(year, month, calendar.monthrange(year, month)[1])
        return date(year, month, int(match.group(3)))
    except ValueError as exc:
        raise CorpusFormatError("bad_date", f"date {value!r}: {exc}") from None


def split_author_string(text: str) -> list[str]:
    """``"A. One, B. Two and C. Three"`` -> three names."""
    parts = re.split(r",|\band\b", " ".join(text.split()))
    return [p.strip() for p in parts if p.strip()]


def normalize_url(url: str) -> str:
    """A URL in the form used for matching: https, lower-case host, no fragment, no trailing slash."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme == "http":
        scheme = "https"  # the same page, whichever scheme a text happened to quote
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, parts.netloc.lower(), path, parts.query, ""))


def normalize_author(name: str) -> str:
    """Case, dots and spacing do not distinguish two spellings of one name."""
    return " ".join(name.replace(".", " ").casefold().split())


def _clean_text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _required_text(record: dict[str, Any], *names: str) -> str:
    for name in names:
        text = _clean_text(record.get(name))
        if text:
            return text
    raise CorpusFormatError("missing_field", f"no non-empty {' or '.join(repr(n) for n in names)}")


# ---------------------------------------------------------------------------------------------- JSONL

def paper_from_jsonl_record(record: dict[str, Any]) -> Paper:
    authors = record.get("authors")
    if isinstance(authors, str):
        authors = split_author_string(authors)
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        raise CorpusFormatError("bad_authors", "'authors' must be a list of names or one string of names")
    if "date" not in record:
        raise CorpusFormatError("missing_field", "no 'date'")
    full_text = record.get("full_text")
    if full_text is not None and not isinstance(full_text, str):
        raise CorpusFormatError("bad_full_text", "'full_text' must be a string when present")
    paper_id = record.get("id", record.get("paper_id"))
    if isinstance(paper_id, int) and not isinstance(paper_id, bool):
        paper_id = str(paper_id)
    if not isinstance(paper_id, str) or not paper_id.strip():
        raise CorpusFormatError("missing_field", "no non-empty 'id' (or 'paper_id')")
    return Paper(
        paper_id=paper_id.strip(),
        title=_required_text(record, "title"),
        abstract=_required_text(record, "abstract"),
        authors=[" ".join(a.split()) for a in authors if a.strip()],
        date=parse_paper_date(record["date"]),
        url=_required_text(record, "url"),
        full_text=full_text or None,
    )


# ---------------------------------------------------------------------------------------------- arXiv

def _arxiv_authors(record: dict[str, Any]) -> list[str]:
    parsed = record.get("authors_parsed")
    if isinstance(parsed, list) and parsed:
        names = []
        for entry in parsed:
            if isinstance(entry, list):
                # The snapshot stores [last, first, suffix]; people read "first last suffix".
                last, first, suffix = (list(entry) + ["", "", ""])[:3]
                names.append(" ".join(part for part in (first, last, suffix) if isinstance(part, str) and part))
        names = [n for n in names if n]
        if names:
            return names
    if isinstance(record.get("authors"), str):
        return split_author_string(record["authors"])
    raise CorpusFormatError("bad_authors", "neither 'authors_parsed' nor an 'authors' string")


def _arxiv_first_version_date(record: dict[str, Any]) -> date:
    versions = record.get("versions")
    if not isinstance(versions, list) or not versions or not isinstance(versions[0], dict):
        raise CorpusFormatError("bad_date", "no 'versions' list to date the paper by")
    created = versions[0].get("created")
    try:
        return parsedate_to_datetime(created).date()
    except (TypeError, ValueError, IndexError):
        raise CorpusFormatError("bad_date", f"first version's 'created' {created!r} is not an RFC 2822 date") from None


def paper_from_arxiv_record(record: dict[str, Any]) -> Paper:
    arxiv_id = _required_text(record, "id")
    return Paper(
        paper_id=arxiv_id,
        title=_required_text(record, "title"),
        abstract=_required_text(record, "abstract"),
        authors=_arxiv_authors(record),
        date=_arxiv_first_version_date(record),
        url=ARXIV_ABS_URL.format(arxiv_id),
    )


def _in_categories(record: dict[str, Any], prefixes: tuple[str, ...]) -> bool:
    categories = record.get("categories")
    if not isinstance(categories, str):
        return False
    return any(cat.startswith(prefixes) for cat in categories.split())


# ---------------------------------------------------------------------------------------------- readers

def _read(path: Path, build, keep=lambda record: True) -> tuple[list[Paper], list[Reject]]:
    papers: list[Paper] = []
    rejects: list[Reject] = []
    seen_ids: set[str] = set()
    for where, record, reject in json_objects(path):
        if reject:
            rejects.append(reject)
            continue
        if not keep(record):
            continue
        try:
            paper = build(record)
        except CorpusFormatError as exc:
            rejects.append((where, exc.reason, str(exc)))
            continue
        if paper.paper_id in seen_ids:
            rejects.append((where, "duplicate_id", f"paper id {paper.paper_id!r} already read from an earlier line"))
            continue
        seen_ids.add(paper.paper_id)
        papers.append(paper)
    return papers, rejects


def read_jsonl_corpus(path: str | Path) -> tuple[list[Paper], list[Reject]]:
    """Papers from a JSONL file of the fields listed in the module docstring, and the rejected lines."""
    return _read(Path(path), paper_from_jsonl_record)


def read_arxiv_snapshot(path: str | Path, categories: Iterable[str] | None = None) -> tuple[list[Paper], list[Reject]]:
    """Papers from the arXiv metadata snapshot, and the rejected lines.

    ``categories`` (for example ``["q-bio", "physics.ao-ph"]``) keeps only papers with a category that starts
    with one of them. Papers left out this way are a selection the caller asked for, not rejects.
    """
    if categories is None:
        return _read(Path(path), paper_from_arxiv_record)
    prefixes = tuple(categories)
    return _read(Path(path), paper_from_arxiv_record, keep=lambda record: _in_categories(record, prefixes))


CORPUS_FORMATS = ("auto", "jsonl", "arxiv")


def detect_corpus_format(path: str | Path) -> str:
    """``arxiv`` when the first readable record carries arXiv's ``versions`` or ``authors_parsed``."""
    for _, record, _ in json_objects(Path(path)):
        if record is not None:
            return "arxiv" if ("versions" in record or "authors_parsed" in record) else "jsonl"
    return "jsonl"


def read_corpus(path: str | Path, fmt: str = "auto") -> tuple[list[Paper], list[Reject]]:
    """Read ``path`` in the named format (one of ``CORPUS_FORMATS``; ``auto`` looks at the first record)."""
    if fmt not in CORPUS_FORMATS:
        raise ValueError(f"corpus format {fmt!r} is not one of {', '.join(CORPUS_FORMATS)}")
    if fmt == "auto":
        fmt = detect_corpus_format(path)
    return read_arxiv_snapshot(path) if fmt == "arxiv" else read_jsonl_corpus(path)


# ---------------------------------------------------------------------------------------------- index

def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased word tokens without English stop words; the same for documents and queries."""
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def searchable_text(paper: Paper) -> str:
    return " ".join(part for part in (paper.title, paper.abstract, paper.full_text) if part)


class LiteratureIndex:
    """BM25 over title, abstract and full text, searched only among papers dated on or before a cutoff.

    Papers are kept in paper-id order, and ties in score go to the smaller paper id, so the same query
    on the same corpus always ranks the same way. Only papers that share at least one word with the
    query are returned: a zero BM25 score means no evidence of relevance.
    """

    def __init__(self, papers: Iterable[Paper], *, k1: float = 1.5, b: float = 0.75):
        ordered = sorted(papers, key=lambda p: p.paper_id)
        duplicates = sorted(i for i, n in Counter(p.paper_id for p in ordered).items() if n > 1)
        if duplicates:
            raise ValueError(f"the corpus has duplicate paper ids: {', '.join(duplicates[:5])}")
        self.papers: list[Paper] = ordered
        self._by_id = {p.paper_id: p for p in ordered}
        self._by_url = {normalize_url(p.url): p for p in ordered}
        self._ordinals = np.array([p.date.toordinal() for p in ordered], dtype=np.int64)
        self._by_author: dict[str, list[Paper]] = {}
        for paper in ordered:
            for name in paper.authors:
                self._by_author.setdefault(normalize_author(name), []).append(paper)
        self._bm25 = None
        documents = tokenize([searchable_text(p) for p in ordered]) if ordered else []
        if any(documents):  # bm25s cannot index a corpus without a single word; nothing would match anyway
            import bm25s

            self._bm25 = bm25s.BM25(k1=k1, b=b)
            self._bm25.index(documents, show_progress=False)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path], fmt: str = "auto") -> tuple["LiteratureIndex", list[Reject]]:
        """One index over several corpus files; a paper id seen in an earlier file makes a ``duplicate_id`` reject."""
        papers: dict[str, Paper] = {}
        rejects: list[Reject] = []
        for path in paths:
            read, bad = read_corpus(path, fmt)
            rejects.extend(bad)
            for paper in read:
                if paper.paper_id in papers:
                    rejects.append((Path(path).name, "duplicate_id", f"paper id {paper.paper_id!r} already read"))
                else:
                    papers[paper.paper_id] = paper
        return cls(papers.values()), rejects

    def __len__(self) -> int:
        return len(self.papers)

    def get(self, paper_id: str) -> Paper | None:
        return self._by_id.get(paper_id)

    def get_by_url(self, url: str) -> Paper | None:
        """The paper whose URL matches after normalisation (scheme, host case, trailing slash); no cutoff check."""
        return self._by_url.get(normalize_url(url))

    def search(self, query: str, cutoff: date, k: int = 10) -> list[SearchHit]:
        """The ``k`` best papers for ``query`` among those dated on or before ``cutoff``.

        Later papers are removed before ranking, so they cannot take places in the top ``k``.
        """
        if self._bm25 is None or k < 1:
            return []
        query_tokens = tokenize([query])[0]
        if not query_tokens:
            return []
        scores = np.asarray(self._bm25.get_scores(query_tokens), dtype=np.float64)
        allowed = (self._ordinals <= cutoff.toordinal()) & (scores > 0)
        candidates = np.flatnonzero(allowed)
        # lexsort sorts by the last key first: score descending, then position (= paper-id order).
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        return [SearchHit(self.papers[i], float(scores[i]), rank) for rank, i in enumerate(order, start=1)]

    def papers_by_author(self, name: str, cutoff: date) -> list[Paper]:
        """Papers that list ``name`` as an author, dated on or before ``cutoff``, oldest first."""
        papers = self._by_author.get(normalize_author(name), [])
        return sorted((p for p in papers if p.date <= cutoff), key=lambda p: (p.date, p.paper_id))
