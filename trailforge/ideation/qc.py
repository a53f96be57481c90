"""Deterministic quality control of an ideation trajectory: one-vote failures and artifact metrics.

The trajectory is a list of messages in OpenAI chat format. ``CaseContext`` carries what the messages
cannot say about themselves: the leakage locks, the stage of every assistant message, the stage from
which each artifact file may be created, and the titles of the papers in the case's corpus.

One-vote failures (any one rejects the trajectory or sends it back for repair):

- ``oracle_leakage``: a locked term in the user task, or in an assistant message's content, reasoning
  or tool arguments before the lock's stage (exact or fuzzy, see ``leakage``);
- ``title_pre_knowledge``: a WebSearch query holding the full title of a corpus paper that no earlier
  observation showed;
- ``fake_url``: a Scraper URL that no earlier observation contained;
- ``premature_artifact``: a Write to an artifact file (``claim_audit.md``, ...) before its stage;
- ``unobserved_citation``: a URL or a bracketed paper id (``[2404.07738]``, ``[smith2021]``) cited in
  assistant text or written into a file that no earlier observation contained.

Target drift and the rubric need a model; they are judged elsewhere, and ``QCReport.rubric`` is where
those scores go.

What counts as observed: the system prompt, the user task, and every tool observation linked to its
call (batch-locally, see ``record.link_observations``) that did not merely echo the agent's own
writing: observations of Write and Edit, and of a View of a file the agent wrote, are left out, so a
made-up source cannot be laundered by writing it down and reading it back. An observation that links
to no call of its batch is a format problem and counts for nothing.

Metrics are computed on the final state of each artifact, replayed from the Write/Edit history:
grounding rate (share of distinct citations per artifact that point at an observed source),
traceability gap (the rest), leakage score (weighted count of leaks) and incrementality (the
operations that built each artifact, classified skeleton / fill / revise / finalize; a single Write of
the whole file is ``one_block``).
"""
from __future__ import annotations

import difflib
import json
import re
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz import fuzz

from trailforge.ideation.leakage import (STAGES, Leak, LeakageLock, Stage, find_leaks, leakage_score,
                                         stage_index)
from trailforge.ideation.record import ToolCallLink, link_observations

SEARCH_TOOL, SCRAPE_TOOL, VIEW_TOOL, WRITE_TOOL, EDIT_TOOL = "WebSearch", "Scraper", "View", "Write", "Edit"
# Observations of these tools echo what the agent itself wrote; they are never evidence.
AUTHORING_TOOLS = frozenset({WRITE_TOOL, EDIT_TOOL})
# Argument names, first present wins.
PATH_KEYS = ("file_path", "path")
QUERY_KEYS = ("query", "q")
URL_KEYS = ("url",)

DEFAULT_ARTIFACT_STAGES: dict[str, str] = {"claim_audit.md": "claim_audit", "synthesis.md": "synthesis",
                                           "idea_candidates.md": "idea", "research_proposal.md": "proposal"}
# A bracketed id with a letter, digit or dot inside it: [2404.07738], [arXiv:2404.07738], [smith2021],
# [P12]. Markdown links ([text](url)) and footnotes ([^1]) are not citations of this kind.
DEFAULT_CITATION_ID_PATTERN = r"(?<![\w\]])\[([A-Za-z0-9][\w.:/-]{1,63})\](?!\()"
# Plain reference numbers ([3], [1-4], [2, 5]) point into a list, not at a source id.
_REFERENCE_NUMBERS = re.compile(r"^[\d\s,–-]+$")
_URL = re.compile(r"https?://[^\s<>\"'`()\[\]{}|，。；：）】]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?*_"
# Titles shorter than this (normalised) are too generic for a query holding them to prove anything.
MIN_TITLE_CHARS = 12
# A query at least this share of a title's length can be the title slightly misspelled ...
TITLE_LENGTH_SHARE = 0.9
# ... when it scores this high. Stricter than the leakage threshold: a topical query shares many words
# with a short title ("deep mutational scanning datasets" scores 91 against "... at scale").
TITLE_MATCH_THRESHOLD = 95
# The last operation on an artifact is a finalize when it changes at most this share of the file.
FINALIZE_MAX_CHANGE = 0.25
# A file is a skeleton when its lines of real text hold at most this share of its characters.
SKELETON_MAX_BODY_SHARE = 0.4
_PLACEHOLDER = re.compile(
    r"^(?:[-*+]|\d+[.)])?\s*(?:\[ \]\s*)?(?:todo|tbd|tba|to ?do|placeholder|\.{3}|…|-|—|待补充|待填写|待定|待完成|"
    r"to be (?:filled|written|added|completed|decided)(?: in)?|<[^>]*>|[(（][^)）]*[)）])?\s*[.:：]?$",
    re.IGNORECASE)
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")

FailureCode = Literal["oracle_leakage", "title_pre_knowledge", "fake_url", "premature_artifact",
                      "unobserved_citation"]
OperationKind = Literal["skeleton", "fill", "revise", "finalize", "one_block", "failed_edit"]


class CaseContext(BaseModel):
    """What QC needs to know about one case beyond its messages."""
    model_config = ConfigDict(extra="forbid")

    locks: list[LeakageLock] = Field(default_factory=list)
    turn_stages: list[Stage]                  # the stage of each assistant message, in order
    artifact_stages: dict[str, Stage] = Field(default_factory=lambda: dict(DEFAULT_ARTIFACT_STAGES))
    known_paper_titles: list[str] = Field(default_factory=list)
    fuzzy_threshold: float = Field(default=90, ge=0, le=100)
    citation_id_pattern: str = DEFAULT_CITATION_ID_PATTERN

    @field_validator("citation_id_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"citation_id_pattern does not compile: {exc}") from None
        if compiled.groups < 1:
            raise ValueError("citation_id_pattern needs one capture group holding the id")
        return value


class QCFailure(BaseModel):
    """One one-vote failure: what, where, and why in words."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: FailureCode
    message_index: int
    reason: str
    tool_call_id: str | None = None


class LeakHit(BaseModel):
    """A leak found in one field of one message."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    message_index: int
    field: Literal["content", "reasoning_content", "tool_arguments"]
    leak: Leak


class ArtifactOperation(BaseModel):
    """One Write or Edit of an artifact, classified."""
    model_config = ConfigDict(extra="forbid")

    message_index: int
    tool: str
    kind: OperationKind
    chars_before: int
    chars_after: int
    chars_changed: int


class ArtifactHistory(BaseModel):
    """How one artifact file came to be: its operations in order and its final text."""
    model_config = ConfigDict(extra="forbid")

    path: str
    operations: list[ArtifactOperation] = Field(default_factory=list)
    incremental: bool = False
    final_text: str = ""

    @property
    def kinds(self) -> list[str]:
        return [op.kind for op in self.operations]


class QCMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid")

    citations: int = 0                        # distinct (artifact, citation) pairs in the final artifacts
    grounded_citations: int = 0
    grounding_rate: float | None = None       # None when the artifacts cite nothing
    traceability_gap: float | None = None
    ungrounded_citations: list[str] = Field(default_factory=list)
    leakage_score: float = 0.0
    leaks: list[LeakHit] = Field(default_factory=list)
    artifacts: dict[str, ArtifactHistory] = Field(default_factory=dict)
    incrementality: float | None = None       # share of artifacts built in more than one step


class QCReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    failures: list[QCFailure] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)   # input faults: linkage, arguments, stage counts
    metrics: QCMetrics = Field(default_factory=QCMetrics)
    # Model-judged trajectory rubric (dimension -> score), filled by the rubric judge; None until judged.
    rubric: dict[str, float] | None = None


# ---------------------------------------------------------------------------------------------- text

def normalize_url(url: str) -> str:
    """A URL as compared here: https, lower-case host, no fragment, no trailing slash.

    The same rule as ``corpus.normalize_url``, kept local so QC does not depend on how the corpus is read.
    """
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    scheme = "https" if parts.scheme.lower() in ("http", "https") else parts.scheme.lower()
    return urlunsplit((scheme, parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def find_urls(text: str) -> list[str]:
    """Every http(s) URL in ``text``, as written, without trailing punctuation."""
    return [match.group(0).rstrip(_URL_TRAILING) for match in _URL.finditer(text or "")]


def find_citation_ids(text: str, pattern: str = DEFAULT_CITATION_ID_PATTERN) -> list[str]:
    """Bracketed source ids in ``text``, in order, without plain reference numbers."""
    ids = []
    for match in re.finditer(pattern, text or ""):
        cited = match.group(1)
        if not _REFERENCE_NUMBERS.match(cited) and any(c.isdigit() for c in cited):
            ids.append(cited)
    return ids


def normalize_title(text: str) -> str:
    """Lower case, punctuation and line breaks as single spaces: how titles and queries are compared."""
    return " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())


def _id_variants(cited: str) -> list[str]:
    # "arXiv:2404.07738" is observed when "2404.07738" was.
    variants = [cited]
    if ":" in cited and cited.rsplit(":", 1)[1]:
        variants.append(cited.rsplit(":", 1)[1])
    return variants


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _first_string(arguments: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return None


def _clean_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


# ---------------------------------------------------------------------------------------------- evidence

class _Evidence:
    """What the agent has observed so far, kept in the forms the checks compare against."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.urls: set[str] = set()
        self.normalized = " "
        self._joined: str | None = None
        self._seen_ids: set[str] = set()

    def add(self, text: str) -> None:
        if not text:
            return
        self.texts.append(text)
        self.urls.update(normalize_url(u) for u in find_urls(text))
        self.normalized += normalize_title(text) + " "
        self._joined = None

    def has_url(self, url: str) -> bool:
        return normalize_url(url) in self.urls

    def has_title(self, normalized_title: str) -> bool:
        return f" {normalized_title} " in self.normalized

    def has_id(self, cited: str) -> bool:
        if cited in self._seen_ids:
            return True
        if self._joined is None:
            self._joined = "\n".join(self.texts)
        for variant in _id_variants(cited):
            pattern = r"(?<![\w.])" + re.escape(variant) + r"(?:v\d+)?(?!\w)"
            if re.search(pattern, self._joined, re.IGNORECASE):
                self._seen_ids.add(cited)
                return True
        return False

    def has_citation(self, cited: str, kind: str) -> bool:
        return self.has_url(cited) if kind == "url" else self.has_id(cited)


def _citations(text: str, pattern: str) -> list[tuple[str, str]]:
    """(kind, citation) pairs in text order, each once."""
    seen: dict[tuple[str, str], None] = {}
    for url in find_urls(text):
        seen.setdefault(("url", url), None)
    for cited in find_citation_ids(text, pattern):
        seen.setdefault(("id", cited), None)
    return list(seen)


# ---------------------------------------------------------------------------------------------- artifacts

def looks_like_skeleton(text: str) -> bool:
    """Headings (and table headers, placeholders) with little text under them, or an empty file."""
    lines = [line.strip() for line in text.splitlines()]
    filled = [i for i, line in enumerate(lines) if line]
    if not filled:
        return True
    structure_chars = body_chars = headings = 0
    for i in filled:
        line = lines[i]
        next_line = lines[i + 1] if i + 1 < len(lines) else ""
        is_heading = line.startswith("#") or bool(re.fullmatch(r"(\*\*|__).+\1[:：]?", line))
        is_table_frame = bool(_TABLE_SEPARATOR.match(line)) or (line.startswith("|")
                                                                and bool(_TABLE_SEPARATOR.match(next_line)))
        headings += is_heading
        if is_heading or is_table_frame or _PLACEHOLDER.match(line):
            structure_chars += len(line)
        else:
            body_chars += len(line)
    return headings >= 1 and body_chars <= SKELETON_MAX_BODY_SHARE * (body_chars + structure_chars)


def _changed_chars(before: str, after: str) -> int:
    """Characters in lines that differ between two versions (line diff, so cost stays near linear)."""
    old, new = before.splitlines(), after.splitlines()
    changed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            changed += max(sum(len(x) + 1 for x in old[i1:i2]), sum(len(x) + 1 for x in new[j1:j2]))
    return changed


def _kept_share(before: str, after: str) -> float:
    """Share of the earlier version's non-empty lines still present in the later one."""
    old = [line.strip() for line in before.splitlines() if line.strip()]
    if not old:
        return 1.0
    new = {line.strip() for line in after.splitlines()}
    return sum(1 for line in old if line in new) / len(old)


class _ArtifactState:
    def __init__(self, path: str):
        self.path = path
        self.text: str | None = None
        self.operations: list[ArtifactOperation] = []

    def write(self, index: int, content: str) -> None:
        before = self.text
        if before is None:
            kind = "skeleton" if looks_like_skeleton(content) else "fill"
            changed = len(content)
        else:
            changed = _changed_chars(before, content)
            grows = len(content) > len(before) and _kept_share(before, content) >= 0.8
            kind = "fill" if grows or (looks_like_skeleton(before) and not looks_like_skeleton(content)) else "revise"
        self.text = content
        self.operations.append(ArtifactOperation(message_index=index, tool=WRITE_TOOL, kind=kind,
                                                 chars_before=len(before or ""), chars_after=len(content),
                                                 chars_changed=changed))

    def edit(self, index: int, old: str, new: str, replace_all: bool) -> None:
        before = self.text
        occurrences = before.count(old) if before is not None and old else 0
        if occurrences == 0 or (occurrences > 1 and not replace_all):
            # Editing a file never written, text that is not there, or text that is not unique (the Edit
            # tool refuses to guess which occurrence is meant) changes nothing.
            self.operations.append(ArtifactOperation(message_index=index, tool=EDIT_TOOL, kind="failed_edit",
                                                     chars_before=len(before or ""), chars_after=len(before or ""),
                                                     chars_changed=0))
            return
        after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
        fills_placeholder = all(_PLACEHOLDER.match(line.strip()) or not line.strip() for line in old.splitlines())
        adds = old in new or len(new) >= 2 * len(old)
        kind = "fill" if fills_placeholder or adds else "revise"
        self.text = after
        self.operations.append(ArtifactOperation(message_index=index, tool=EDIT_TOOL, kind=kind,
                                                 chars_before=len(before), chars_after=len(after),
                                                 chars_changed=max(len(old), len(new))))

    def history(self) -> ArtifactHistory:
        operations = [op.model_copy() for op in self.operations]
        applied = [op for op in operations if op.kind != "failed_edit"]
        final = self.text or ""
        if len(applied) == 1 and applied[0].kind == "fill" and applied[0].chars_before == 0:
            applied[0].kind = "one_block"
        elif len(applied) >= 2:
            last = applied[-1]
            small = last.chars_changed <= FINALIZE_MAX_CHANGE * max(len(final), 1)
            if last.kind in ("fill", "revise") and small:
                last.kind = "finalize"
        incremental = sum(1 for op in applied if op.chars_changed > 0) >= 2
        return ArtifactHistory(path=self.path, operations=operations, incremental=incremental, final_text=final)


def replay_artifacts(messages: list[dict], artifact_names: list[str] | None = None) -> dict[str, ArtifactHistory]:
    """The Write/Edit history of every file the assistant wrote (only ``artifact_names`` when given)."""
    states: dict[str, _ArtifactState] = {}
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            name, arguments, _ = _parse_call(call)
            _apply_authoring(states, index, name, arguments)
    histories = {path: state.history() for path, state in states.items()}
    if artifact_names is None:
        return histories
    return {path: h for path, h in histories.items() if _artifact_name(path, artifact_names)}


def _apply_authoring(states: dict[str, _ArtifactState], index: int, name: str, arguments: dict) -> str | None:
    """Apply one Write or Edit to the replayed files; the path it touched, or None."""
    if name not in AUTHORING_TOOLS:
        return None
    path = _first_string(arguments, PATH_KEYS)
    if not path:
        return None
    path = _clean_path(path)
    state = states.setdefault(path, _ArtifactState(path))
    if name == WRITE_TOOL:
        content = arguments.get("content")
        state.write(index, content if isinstance(content, str) else "")
    else:
        old, new = arguments.get("old_string"), arguments.get("new_string")
        state.edit(index, old if isinstance(old, str) else "", new if isinstance(new, str) else "",
                   arguments.get("replace_all") is True)
    return path


def _same_file(a: str, b: str) -> bool:
    """Two spellings of one workspace path: equal, or one is the other's trailing components."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _artifact_name(path: str, names) -> str | None:
    """The artifact a path refers to: the key equal to the path or to its last components."""
    for name in names:
        clean = _clean_path(name)
        if path == clean or path.endswith("/" + clean):
            return name
    return None


# ---------------------------------------------------------------------------------------------- calls

def _parse_call(call: Any) -> tuple[str, dict, str | None]:
    """(tool name, arguments as a dict, problem or None) for one tool call of any shape."""
    if not isinstance(call, dict):
        return "", {}, "tool call is not an object"
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = function.get("name") if isinstance(function.get("name"), str) else ""
    raw = function.get("arguments")
    if isinstance(raw, dict):
        return name, raw, "arguments are an object, not a JSON string"
    if raw is None or raw == "":
        return name, {}, None
    if not isinstance(raw, str):
        return name, {}, "arguments are neither a JSON string nor an object"
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        return name, {"_raw": raw}, f"arguments are not valid JSON ({exc.msg})"
    if not isinstance(parsed, dict):
        return name, {"_raw": raw}, "arguments do not encode a JSON object"
    return name, parsed, None


def _title_in_query(query: str, title_norm: str) -> bool:
    query_norm = normalize_title(query)
    if not query_norm:
        return False
    if f" {title_norm} " in f" {query_norm} ":
        return True
    if len(query_norm) < TITLE_LENGTH_SHARE * len(title_norm):
        return False  # a fragment of a title is an ordinary topical query
    return fuzz.partial_ratio(title_norm, query_norm) >= TITLE_MATCH_THRESHOLD


# ---------------------------------------------------------------------------------------------- check

def _stages_for_turns(messages: list, case: CaseContext, problems: list[str]) -> dict[int, str]:
    assistant_indexes = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]
    stages = list(case.turn_stages)
    if len(stages) != len(assistant_indexes):
        problems.append(f"turn_stages lists {len(stages)} stages for {len(assistant_indexes)} assistant messages")
    out = {}
    for turn, index in enumerate(assistant_indexes):
        # Past the end of the list the last known stage carries on; with none, the earliest stage.
        out[index] = stages[turn] if turn < len(stages) else (stages[-1] if stages else STAGES[0])
    return out


def _check_leaks(index: int, field: str, text: str, stage: str, case: CaseContext, hits: list[LeakHit],
                 failures: list[QCFailure], call_id: str | None = None) -> None:
    leaks = find_leaks(text, case.locks, stage, fuzzy_threshold=case.fuzzy_threshold)
    for leak in leaks:
        hits.append(LeakHit(message_index=index, field=field, leak=leak))
    for term in dict.fromkeys(leak.term for leak in leaks):
        first = next(leak for leak in leaks if leak.term == term)
        where = "tool arguments" if field == "tool_arguments" else field
        failures.append(QCFailure(
            code="oracle_leakage", message_index=index, tool_call_id=call_id,
            reason=f"locked term {term!r} ({first.kind} match {first.matched_text!r}, score {first.score:.0f}) "
                   f"in {where} at stage {stage}; it may appear from stage {first.not_before_stage} on"))


def _check_citations(index: int, where: str, text: str, evidence: _Evidence, case: CaseContext,
                     unresolved: dict[tuple[str, str], list[tuple[int, str, str | None]]],
                     call_id: str | None = None) -> None:
    for kind, cited in _citations(text, case.citation_id_pattern):
        if not evidence.has_citation(cited, kind):
            unresolved.setdefault((kind, cited), []).append((index, where, call_id))


def check_trajectory(messages: list[dict], case: CaseContext) -> QCReport:
    """Run every deterministic check on one trajectory; input faults become ``problems``, never errors."""
    problems: list[str] = []
    if not isinstance(messages, list):
        return QCReport(passed=False, problems=["messages is not a list"])
    links, link_problems = link_observations(messages)
    problems += link_problems
    link_by_observation: dict[int, ToolCallLink] = {link.observation_index: link for link in links}
    stage_of = _stages_for_turns(messages, case, problems)

    titles = [(t, normalize_title(t)) for t in case.known_paper_titles if len(normalize_title(t)) >= MIN_TITLE_CHARS]
    evidence = _Evidence()
    failures: list[QCFailure] = []
    hits: list[LeakHit] = []
    states: dict[str, _ArtifactState] = {}
    written: set[str] = set()
    view_paths: dict[tuple[int, str], str] = {}  # (assistant index, call id) -> path a View call read
    # Citations not yet observed when cited; resolved into failures at the end, so the reason can say
    # whether the source turned up later or never.
    unresolved: dict[tuple[str, str], list[tuple[int, str, str | None]]] = {}

    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(f"messages[{index}]: not an object")
            continue
        role = message.get("role")
        content = message.get("content") if isinstance(message.get("content"), str) else ""
        if role == "system":
            evidence.add(content)
        elif role == "user":
            _check_leaks(index, "content", content, STAGES[0], case, hits, failures)
            evidence.add(content)
        elif role == "tool":
            link = link_by_observation.get(index)
            if link is None or link.tool_name in AUTHORING_TOOLS:
                continue
            viewed = view_paths.get((link.call_message_index, link.call_id))
            if link.tool_name == VIEW_TOOL and viewed and any(_same_file(viewed, w) for w in written):
                continue  # the agent reading back its own file
            evidence.add(content)
        elif role == "assistant":
            stage = stage_of[index]
            reasoning = message.get("reasoning_content") if isinstance(message.get("reasoning_content"), str) else ""
            for field, text in (("content", content), ("reasoning_content", reasoning)):
                _check_leaks(index, field, text, stage, case, hits, failures)
                _check_citations(index, field, text, evidence, case, unresolved)
            calls = message.get("tool_calls") or []
            for position, call in enumerate(calls if isinstance(calls, list) else []):
                name, arguments, problem = _parse_call(call)
                call_id = call.get("id") if isinstance(call, dict) and isinstance(call.get("id"), str) else None
                if problem:
                    problems.append(f"messages[{index}].tool_calls[{position}]: {problem}")
                _check_leaks(index, "tool_arguments", "\n".join(_strings(arguments)), stage, case, hits, failures,
                             call_id)
                _check_call(index, name, arguments, call_id, stage, case, evidence, titles, failures, unresolved)
                if name == VIEW_TOOL and call_id:
                    path = _first_string(arguments, PATH_KEYS)
                    if path:
                        view_paths[(index, call_id)] = _clean_path(path)
                touched = _apply_authoring(states, index, name, arguments)
                if touched:
                    written.add(touched)
        else:
            problems.append(f"messages[{index}]: role {role!r} is not system, user, assistant or tool")

    failures += _citation_failures(unresolved, evidence)
    failures.sort(key=lambda f: (f.message_index, f.code))
    metrics = _metrics(states, evidence, hits, case)
    return QCReport(passed=not failures and not problems, failures=failures, problems=problems, metrics=metrics)


def _check_call(index: int, name: str, arguments: dict, call_id: str | None, stage: str, case: CaseContext,
                evidence: _Evidence, titles: list[tuple[str, str]], failures: list[QCFailure],
                unresolved: dict) -> None:
    if name == SEARCH_TOOL:
        query = _first_string(arguments, QUERY_KEYS) or ""
        for title, title_norm in titles:
            if _title_in_query(query, title_norm) and not evidence.has_title(title_norm):
                failures.append(QCFailure(
                    code="title_pre_knowledge", message_index=index, tool_call_id=call_id,
                    reason=f"WebSearch query {query!r} holds the full title {title!r}, which no earlier "
                           "observation showed"))
    elif name == SCRAPE_TOOL:
        url = _first_string(arguments, URL_KEYS)
        if url is None:
            return
        if not evidence.has_url(url):
            failures.append(QCFailure(code="fake_url", message_index=index, tool_call_id=call_id,
                                      reason=f"Scraper URL {url!r} does not appear in any earlier observation"))
    elif name in AUTHORING_TOOLS:
        path = _first_string(arguments, PATH_KEYS)
        if name == WRITE_TOOL and path:
            artifact = _artifact_name(_clean_path(path), case.artifact_stages)
            if artifact is not None:
                allowed = case.artifact_stages[artifact]
                if stage_index(stage) < stage_index(allowed):
                    failures.append(QCFailure(
                        code="premature_artifact", message_index=index, tool_call_id=call_id,
                        reason=f"Write to {path!r} at stage {stage}; {artifact} may be created from stage "
                               f"{allowed} on"))
        written_text = "\n".join(s for key in ("content", "new_string") for s in _strings(arguments.get(key)))
        _check_citations(index, f"{name} {path or '?'}", written_text, evidence, case, unresolved, call_id)


def _citation_failures(unresolved: dict[tuple[str, str], list[tuple[int, str, str | None]]],
                       evidence: _Evidence) -> list[QCFailure]:
    failures = []
    for (kind, cited), places in unresolved.items():
        later = evidence.has_citation(cited, kind)
        when = "only in a later observation" if later else "in no observation"
        seen_messages: set[int] = set()
        for index, where, call_id in places:
            if index in seen_messages:
                continue  # one failure per message and citation, however many fields repeat it
            seen_messages.add(index)
            label = "URL" if kind == "url" else "source id"
            failures.append(QCFailure(code="unobserved_citation", message_index=index, tool_call_id=call_id,
                                      reason=f"{label} {cited!r} cited in {where} appears {when}"))
    return failures


def _metrics(states: dict[str, _ArtifactState], evidence: _Evidence, hits: list[LeakHit],
             case: CaseContext) -> QCMetrics:
    artifacts = {path: state.history() for path, state in states.items()
                 if _artifact_name(path, case.artifact_stages) is not None}
    total = grounded = 0
    ungrounded: list[str] = []
    for path, history in artifacts.items():
        for kind, cited in _citations(history.final_text, case.citation_id_pattern):
            total += 1
            if evidence.has_citation(cited, kind):
                grounded += 1
            else:
                ungrounded.append(f"{path}: {cited}")
    rate = grounded / total if total else None
    incremental = [h.incremental for h in artifacts.values()]
    return QCMetrics(citations=total, grounded_citations=grounded, grounding_rate=rate,
                     traceability_gap=None if rate is None else 1 - rate, ungrounded_citations=ungrounded,
                     leakage_score=leakage_score([hit.leak for hit in hits]), leaks=hits, artifacts=artifacts,
                     incrementality=sum(incremental) / len(incremental) if incremental else None)
