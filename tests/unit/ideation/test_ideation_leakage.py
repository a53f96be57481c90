"""Leakage locks: stage order, exact matching with and without word boundaries, fuzzy matching."""
from __future__ import annotations

import pytest

from trailforge.ideation.leakage import (STAGES, LeakageLock, find_leaks, leakage_score, stage_index)


def lock(term: str, stage: str = "idea") -> LeakageLock:
    return LeakageLock(term=term, not_before_stage=stage)


def test_stage_order_and_lock_window():
    assert STAGES == ("evidence", "claim_audit", "synthesis", "idea", "proposal")
    assert stage_index("synthesis") == 2
    with pytest.raises(ValueError, match="unknown stage 'drafting'"):
        stage_index("drafting")
    locked = lock("attention epistasis", "idea")
    assert locked.is_locked_at("synthesis") and not locked.is_locked_at("idea")
    assert not locked.is_locked_at("proposal")


def test_exact_match_is_case_insensitive_and_respects_word_boundaries():
    leaks = find_leaks("We could try a gan here. Organ data; GAN-based models.", [lock("GAN")], "evidence")
    assert [(l.matched_text, l.kind, l.score) for l in leaks] == [("gan", "exact", 100.0), ("GAN", "exact", 100.0)]
    assert all(l.matched_text.lower() == "gan" for l in leaks)
    assert find_leaks("an organic organism", [lock("GAN")], "evidence") == []
    # Not reported once the stage is reached.
    assert find_leaks("a GAN", [lock("GAN")], "idea") == []


def test_multiword_terms_match_across_line_breaks():
    leaks = find_leaks("the attention\n  epistasis score", [lock("attention epistasis")], "synthesis")
    assert len(leaks) == 1 and leaks[0].kind == "exact"
    assert leaks[0].matched_text == "attention\n  epistasis"


def test_cjk_terms_match_without_word_boundaries():
    text = "我们采用沿袭感知采样来减少冗余，LATE框架是核心。"
    leaks = find_leaks(text, [lock("沿袭感知采样"), lock("LATE")], "evidence")
    found = {(l.term, l.matched_text) for l in leaks}
    assert found == {("沿袭感知采样", "沿袭感知采样"), ("LATE", "LATE")}
    span = next(l for l in leaks if l.term == "LATE")
    assert text[span.start:span.end] == "LATE"
    # A Latin term glued to Latin letters is still inside a word.
    assert find_leaks("TRANSLATED框架", [lock("LATE")], "evidence") == []


def test_fuzzy_matching_catches_near_spellings():
    leaks = find_leaks("Measured fitnes landscapes vary.", [lock("fitness landscape")], "evidence")
    assert len(leaks) == 1
    leak = leaks[0]
    assert leak.kind == "fuzzy" and leak.score >= 90
    assert leak.matched_text == "fitnes landscapes"
    assert find_leaks("protein-language-model scores", [lock("protein language model")], "evidence")[0].kind == "fuzzy"


def test_fuzzy_matching_ignores_short_terms_and_weak_matches():
    assert find_leaks("a GNN layer", [lock("GAN")], "evidence") == []
    assert find_leaks("landscape ecology of fitness clubs", [lock("fitness landscape")], "evidence") == []
    # A stretch cut from inside a longer word does not count once widened to the whole word.
    assert find_leaks("supercalifragilisticexpialidocious", [lock("fragilistic")], "evidence") == []
    assert find_leaks("Measured fitnes landscapes vary.", [lock("fitness landscape")], "evidence",
                      fuzzy_threshold=99) == []


def test_leakage_score_weights_exact_above_fuzzy():
    leaks = find_leaks("GAN and a fitnes landscape", [lock("GAN"), lock("fitness landscape")], "evidence")
    assert sorted(l.kind for l in leaks) == ["exact", "fuzzy"]
    assert leakage_score(leaks) == 1.5
    assert leakage_score(leaks, {"exact": 2.0, "fuzzy": 1.0}) == 3.0


def test_bad_input():
    with pytest.raises(ValueError):
        LeakageLock(term="   ", not_before_stage="idea")
    with pytest.raises(ValueError):
        LeakageLock(term="x", not_before_stage="later")
    with pytest.raises(ValueError):
        LeakageLock(term="x", not_before_stage="idea", extra=True)
    assert find_leaks("", [lock("GAN")], "evidence") == []
    assert find_leaks(None, [lock("GAN")], "evidence") == []  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown stage"):
        find_leaks("text", [lock("GAN")], "writing")
