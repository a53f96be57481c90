"""Leakage locks: terms from the hidden target that the visible trajectory may not use before a given stage.

An ideation trajectory moves through five stages in a fixed order (``STAGES``): gathering evidence,
auditing claims, synthesising across papers, choosing an idea, writing the proposal. The Advisor knows
the target proposal; the Generator must not. A ``LeakageLock`` names one term taken from the target (a
method name, a benchmark, a final title) and the first stage at which it may appear. Text written at an
earlier stage that contains the term is a leak.

``find_leaks`` reports two kinds of hit:

- **exact**: the term itself, ignoring case. For a term that begins or ends with a letter or digit of
  an alphabetic script, the neighbouring character in the text must not be one too, so the lock "GAN"
  does not fire inside "organ". Chinese, Japanese and Korean characters carry no word boundaries, so a
  term's CJK edge matches wherever it appears, and a CJK neighbour never blocks a Latin edge.
- **fuzzy**: the best-aligned stretch of the text scored against the term with rapidfuzz's
  ``partial_ratio``, then widened to whole words and rescored with ``ratio`` so that a stretch cut out of
  a longer word does not count as a hit. This catches near-spellings ("fitness landscapes",
  "protein-language-model"). It runs only when the term has no exact hit and is long enough for an edit
  distance to mean anything (``fuzzy_min_chars``); one fuzzy hit, the best, is reported per lock.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz import fuzz

STAGES: tuple[str, ...] = ("evidence", "claim_audit", "synthesis", "idea", "proposal")
Stage = Literal["evidence", "claim_audit", "synthesis", "idea", "proposal"]
MatchKind = Literal["exact", "fuzzy"]

# How much one leak adds to a trajectory's leakage score: an exact hit is certain, a fuzzy one may be
# a coincidence of spelling.
LEAK_WEIGHTS: dict[str, float] = {"exact": 1.0, "fuzzy": 0.5}
# Below this many characters an edit or two turns one word into another ("GAN" / "GNN"), so short
# terms are only matched exactly.
DEFAULT_FUZZY_MIN_CHARS = 6


def stage_index(stage: str) -> int:
    """Position of a stage in ``STAGES``; a clear error for a name that is not a stage."""
    try:
        return STAGES.index(stage)
    except ValueError:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}") from None


class LeakageLock(BaseModel):
    """A term from the hidden target that may appear only from ``not_before_stage`` on."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    term: str = Field(min_length=1)
    not_before_stage: Stage

    @field_validator("term")
    @classmethod
    def _term_has_text(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("a locked term needs at least one non-space character")
        return value

    def is_locked_at(self, stage: str) -> bool:
        """True while the term may not yet appear, i.e. at every stage before ``not_before_stage``."""
        return stage_index(stage) < stage_index(self.not_before_stage)


class Leak(BaseModel):
    """One place where a locked term appears too early."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    term: str
    not_before_stage: Stage
    stage: Stage
    start: int                      # character offsets into the text that was checked
    end: int
    matched_text: str
    score: float                    # 100 for an exact hit, the rapidfuzz score for a fuzzy one
    kind: MatchKind


def is_cjk(char: str) -> bool:
    """Han, kana, hangul and CJK punctuation/compatibility blocks: scripts written without spaces."""
    code = ord(char)
    return (0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF
            or 0xFF00 <= code <= 0xFFEF or 0x20000 <= code <= 0x2FA1F)


def _is_word_char(char: str) -> bool:
    """A letter or digit of a script that separates words, i.e. one a word boundary can fall next to."""
    return (char.isalnum() or char == "_") and not is_cjk(char)


def _term_pattern(term: str) -> re.Pattern:
    # Any run of spaces in the term matches any run of whitespace in the text (line breaks included).
    return re.compile(r"\s+".join(re.escape(part) for part in term.split()), re.IGNORECASE)


def _at_boundaries(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is not the inside of a longer word at either edge."""
    left_ok = not (_is_word_char(text[start]) and start > 0 and _is_word_char(text[start - 1]))
    right_ok = not (_is_word_char(text[end - 1]) and end < len(text) and _is_word_char(text[end]))
    return left_ok and right_ok


def exact_matches(text: str, term: str) -> list[tuple[int, int]]:
    """Spans of every case-insensitive, boundary-respecting occurrence of ``term`` in ``text``."""
    spans = []
    for match in _term_pattern(term).finditer(text):
        if match.end() > match.start() and _at_boundaries(text, match.start(), match.end()):
            spans.append((match.start(), match.end()))
    return spans


def _lowered_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased plus, for each lowered character, the index of the original character.

    A few characters lower-case to two ("İ"), so offsets into the lowered text are mapped back rather
    than reused.
    """
    pieces, offsets = [], []
    for index, char in enumerate(text):
        lowered = char.lower()
        pieces.append(lowered)
        offsets.extend([index] * len(lowered))
    return "".join(pieces), offsets


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and _is_word_char(text[start]) and _is_word_char(text[start - 1]):
        start -= 1
    while end < len(text) and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
        end += 1
    return start, end


def best_fuzzy_match(text: str, term: str) -> tuple[int, int, float] | None:
    """The best word-aligned stretch of ``text`` resembling ``term`` as (start, end, score 0-100)."""
    lowered, offsets = _lowered_with_offsets(text)
    needle = " ".join(term.lower().split())
    if not lowered.strip() or not needle:
        return None
    alignment = fuzz.partial_ratio_alignment(needle, lowered)
    if alignment is None or alignment.dest_end <= alignment.dest_start:
        return None
    start, end = offsets[alignment.dest_start], offsets[alignment.dest_end - 1] + 1
    # Trim surrounding spaces that the alignment may have taken in, then grow to whole words.
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start >= end:
        return None
    start, end = _widen_to_words(text, start, end)
    candidate = " ".join(text[start:end].lower().split())
    return start, end, float(fuzz.ratio(needle, candidate))


def find_leaks(text: str, locks: list[LeakageLock], stage: str, fuzzy_threshold: float = 90,
               fuzzy_min_chars: int = DEFAULT_FUZZY_MIN_CHARS) -> list[Leak]:
    """Every lock still closed at ``stage`` whose term appears in ``text``, exactly or nearly.

    Exact hits are all reported; a lock without one is tried fuzzily and reported once at its best
    alignment when that scores at least ``fuzzy_threshold``. Leaks come back in text order.
    """
    stage_index(stage)  # an unknown stage is a caller error; say so before doing anything
    if not isinstance(text, str) or not text:
        return []
    leaks: list[Leak] = []
    for lock in locks:
        if not lock.is_locked_at(stage):
            continue
        spans = exact_matches(text, lock.term)
        for start, end in spans:
            leaks.append(Leak(term=lock.term, not_before_stage=lock.not_before_stage, stage=stage, start=start,
                              end=end, matched_text=text[start:end], score=100.0, kind="exact"))
        if spans or len(lock.term) < fuzzy_min_chars:
            continue
        best = best_fuzzy_match(text, lock.term)
        if best is not None and best[2] >= fuzzy_threshold:
            start, end, score = best
            leaks.append(Leak(term=lock.term, not_before_stage=lock.not_before_stage, stage=stage, start=start,
                              end=end, matched_text=text[start:end], score=score, kind="fuzzy"))
    return sorted(leaks, key=lambda leak: (leak.start, leak.end, leak.term))


def leakage_score(leaks: list[Leak], weights: dict[str, float] | None = None) -> float:
    """Weighted count of leaks: ``LEAK_WEIGHTS`` unless other weights per kind are given."""
    weights = LEAK_WEIGHTS if weights is None else weights
    return float(sum(weights.get(leak.kind, 0.0) for leak in leaks))
