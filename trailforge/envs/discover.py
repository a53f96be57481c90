"""Discover repositories named by a source; filter only those a search found.

Every repository is labelled with a discipline from the domain's vocabulary (README words
weighted ``README_WEIGHT``, file names, and the Python text), or ``unknown`` when no word of it occurs. What happens next depends on who
chose the repository:

- listed by the user (``source=local``: folders or git URLs): the label is only a label.
  The repository goes on unless it cannot be mined at all (missing, not clonable, no Python
  file); ``domain.allowed`` and ``domain.filters`` do not apply to it.
- found by search (``source=github``): a candidate must have a discipline, one of
  ``domain.allowed``, and pass ``domain.filters`` (scientific data present, enough Python
  files, optionally a cited paper). The search itself already kept to ``source.min_stars``.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ..config.schema import DomainConfig, RepoEntry
from ..io import RepoRow, StageRecorder
from .files import DATA_SUFFIXES, FILE, TOO_DEEP, UNREADABLE, read_regular, remove_tree, walk_tree

UNKNOWN_DISCIPLINE = "unknown"
_PAPER = re.compile(r"\b(doi:\s*10\.\d{4,9}/\S+|10\.\d{4,9}/[-._;()/:a-z0-9]+|arxiv[:\s]*\d{4}\.\d{4,5}|biorxiv)", re.I)


def repo_id_for(entry: RepoEntry) -> str:
    if entry.name:
        return _slug(entry.name)
    origin = entry.path or entry.url or ""
    tail = origin.rstrip("/").rsplit("/", 1)[-1]
    return _slug(tail.removesuffix(".git"))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "repo"


def folder_entries(folders: list[str], project_root: Path) -> tuple[list[RepoEntry], list[tuple[str, str, str]]]:
    """One entry per subfolder of each folder (``source.folders``: a folder of clones), in name order.

    Hidden subfolders are skipped. Returns the entries and the problems as ``(item_id, reason, message)``: a folder
    that does not exist, or holds no subfolder, is a reject, never a silent empty source. An entry's path keeps the
    folder as written (relative stays relative), so params and rows do not depend on where the project lives.
    """
    entries, problems = [], []
    for folder in folders:
        where = Path(folder) if Path(folder).is_absolute() else project_root / folder
        if not where.is_dir():
            problems.append((folder, "missing_source_path", f"source folder {folder!r} does not exist or is not a folder"))
            continue
        subfolders = sorted(p.name for p in where.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not subfolders:
            problems.append((folder, "empty_source_folder", f"source folder {folder!r} holds no repository folder"))
        entries.extend(RepoEntry(path=f"{folder.rstrip('/')}/{name}") for name in subfolders)
    return entries, problems


def classify(text: str, disciplines: dict[str, list[str]], per_word: int | None = None) -> dict[str, int]:
    """Count vocabulary hits per discipline (whole words, case-insensitive); ``per_word`` caps what one word adds."""
    lowered = text.lower()
    scores = {}
    for name, words in disciplines.items():
        hits = (len(re.findall(rf"(?<![a-z0-9]){re.escape(w.lower())}(?![a-z0-9])", lowered)) for w in words)
        scores[name] = sum(hits if per_word is None else (min(h, per_word) for h in hits))
    return scores


# The README is the authors' own description of the work: its words count this many times a word of the code.
README_WEIGHT = 3
# Python text read for the label: files up to this size, and this much in all (comments, names, strings; a
# research repository's code says what it measures far more often than its README, which is often one line).
CODE_FILE_BYTES = 200_000
CODE_TOTAL_CHARS = 2_000_000
# What one word adds from one source: many different words of a field outvote one word repeated (an SIR model's
# `population`, 86 times, made an epidemiology course "ecology").
WORD_CAP = 10


def discipline_scores(readme: str, names: list[str], code: str, disciplines: dict[str, list[str]]) -> dict[str, int]:
    """Vocabulary hits per discipline: README words (``README_WEIGHT`` each), file names, and the Python text
    with ``snake_case`` split into words (``growth_rate`` is "growth rate"); each word adds at most ``WORD_CAP``
    hits per source."""
    words_of = {"readme": classify(readme, disciplines, WORD_CAP),
                "names": classify("\n".join(names), disciplines, WORD_CAP),
                "code": classify(code.replace("_", " "), disciplines, WORD_CAP)}
    return {name: README_WEIGHT * words_of["readme"][name] + words_of["names"][name] + words_of["code"][name]
            for name in disciplines}


def discover(
    entries: list[RepoEntry], domain: DomainConfig, project_root: Path, max_repos: int, recorder: StageRecorder,
    searched: bool = False,
) -> list[RepoRow]:
    """One row per usable entry. ``searched``: the entries are search candidates, so the domain's filters apply."""
    rows: dict[str, RepoRow] = {}
    for entry in entries:
        repo_id = repo_id_for(entry)
        origin = entry.path or entry.url
        if repo_id in rows:
            recorder.reject(repo_id, "duplicate_repo", f"{origin} has the same id as an earlier entry")
            continue
        if len(rows) >= max_repos:
            recorder.reject(repo_id, "over_budget", f"budget.max_repos={max_repos} reached")
            continue
        if entry.url:
            row = _discover_git(entry, repo_id, domain, recorder, searched)
        else:
            row = _discover_path(entry, repo_id, domain, project_root, recorder, searched)
        if row is not None:
            rows[repo_id] = row
    return sorted(rows.values(), key=lambda r: r.repo_id)


def _discover_path(entry, repo_id, domain, project_root, recorder, searched) -> RepoRow | None:
    folder = (project_root / entry.path).resolve() if not Path(entry.path).is_absolute() else Path(entry.path)
    if not folder.is_dir():
        recorder.reject(repo_id, "missing_source_path", f"source path {entry.path!r} does not exist or is not a folder")
        return None
    origin_kind = "git" if (folder / ".git").exists() else "path"
    return _judge(folder, repo_id, entry.path, origin_kind, entry.ref, domain, recorder, searched)


def _discover_git(entry, repo_id, domain, recorder, searched) -> RepoRow | None:
    # A pinned ref may be older than the tip, so only an unpinned clone can be shallow.
    shallow = [] if entry.ref else ["--depth", "1"]
    # Not TemporaryDirectory: its cleanup is a recursive rmtree, which a deeply nested clone breaks.
    tmp = tempfile.mkdtemp(prefix="tf-discover-")
    try:
        try:
            done = subprocess.run(["git", "clone", "--quiet", *shallow, entry.url, tmp], capture_output=True, text=True,
                                  timeout=300)
        except subprocess.TimeoutExpired:
            recorder.reject(repo_id, "clone_failed", f"git clone {entry.url} took longer than 300 s")
            return None
        if done.returncode != 0:
            recorder.reject(repo_id, "clone_failed", f"git clone {entry.url} failed: {done.stderr.strip()[:500]}")
            return None
        return _judge(Path(tmp), repo_id, entry.url, "git", entry.ref, domain, recorder, searched)
    finally:
        remove_tree(Path(tmp), ignore_errors=True)


def _judge(folder: Path, repo_id, origin, origin_kind, ref, domain: DomainConfig, recorder,
           searched: bool) -> RepoRow | None:
    readme_text, names, py_files, data_files = "", [], 0, 0
    code: list[str] = []
    code_chars = 0
    for found in walk_tree(folder):
        # Folders past the depth cap or that cannot be listed are judged without their contents;
        # the snapshot stage names each one in its rejects.
        if found.kind == TOO_DEEP:
            recorder.count("folders_too_deep")
        elif found.kind == UNREADABLE:
            recorder.count("paths_unreadable")
        if found.kind != FILE:
            continue
        rel = found.rel
        names.append(rel)
        suffix = Path(rel).suffix.lower()
        if suffix == ".py":
            py_files += 1
            if found.size < CODE_FILE_BYTES and code_chars < CODE_TOTAL_CHARS:
                data = read_regular(found.path, CODE_FILE_BYTES)[0]
                if data is not None:  # counted only, never shown: hostile text cannot address anyone here
                    code.append(data.decode("utf-8", errors="replace")[:CODE_TOTAL_CHARS - code_chars])
                    code_chars += len(code[-1])
        elif suffix in DATA_SUFFIXES:
            data_files += 1
        if Path(rel).name.lower().startswith("readme") and found.size < 500_000:
            data = read_regular(found.path, 500_000)[0]
            if data is not None:
                readme_text += data.decode("utf-8", errors="replace") + "\n"
    scores = discipline_scores(readme_text, names, "\n".join(code), domain.disciplines)
    best = max(sorted(scores), key=lambda name: scores[name])
    discipline = best if scores[best] > 0 else UNKNOWN_DISCIPLINE
    has_paper = bool(_PAPER.search(readme_text))
    if searched:
        refusal = _search_filter(discipline, py_files, data_files, has_paper, domain)
    else:  # listed by the user: only what makes mining impossible
        refusal = ("no_python", "no Python file in the repository") if py_files == 0 else None
    if refusal is not None:
        recorder.reject(repo_id, *refusal)
        return None
    if discipline == UNKNOWN_DISCIPLINE:
        recorder.count("discipline_unknown")
    return RepoRow(
        repo_id=repo_id,
        origin=origin,
        origin_kind=origin_kind,
        ref=ref,
        discipline=discipline,
        discipline_scores=scores,
        has_paper=has_paper,
    )


def _search_filter(discipline: str, py_files: int, data_files: int, has_paper: bool,
                   domain: DomainConfig) -> tuple[str, str] | None:
    """Why a search candidate does not fit the domain (reason, message), or None when it does."""
    filters = domain.filters
    if discipline == UNKNOWN_DISCIPLINE:
        return "no_discipline", "no discipline vocabulary found in README, file names or Python text"
    if domain.allowed != "all" and discipline not in domain.allowed:
        return "off_domain", f"discipline {discipline!r} is not in domain.allowed {domain.allowed}"
    if py_files < filters.min_python_files:
        return "no_python", f"{py_files} Python files < domain.filters.min_python_files"
    if filters.require_data and data_files == 0:
        return "no_data_files", "no scientific data files (csv, tsv, json, fasta, ...) found"
    if filters.require_paper and not has_paper:
        return "no_paper", "README cites no DOI, arXiv or bioRxiv identifier"
    return None
