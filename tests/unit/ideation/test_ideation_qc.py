"""Deterministic QC: each one-vote failure on a hand-made trajectory, batch-local linkage, and metrics."""
from __future__ import annotations

import json

import pytest

from trailforge.ideation.leakage import LeakageLock
from trailforge.ideation.qc import (CaseContext, QCReport, check_trajectory, find_citation_ids, looks_like_skeleton,
                                    replay_artifacts)

TITLE = "Language models enable zero-shot prediction of the effects of mutations on protein function"
SEARCH_RESULT = ("[1] paper_id: 2107.03312 | " + TITLE + " | https://example.org/papers/2107.03312\n"
                 "[2] paper_id: smith2022 | Deep mutational scanning at scale | https://example.org/papers/smith2022")
SKELETON = "# Claim audit\n\n## Claims\n- TODO\n\n## Open questions\n- TBD\n"
CLAIMS = ("- Masked-marginal scores track measured fitness for single mutants [2107.03312].\n"
          "- Assays with many double mutants exist (https://example.org/papers/smith2022).\n")


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def assistant(*calls: dict, reasoning: str = "Next step.", content: str = "") -> dict:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(call_id: str, name: str, content: str = "ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def clean_trajectory() -> tuple[list[dict], list[str]]:
    """Search (two parallel calls), read, then build claim_audit.md in four steps. Ids restart per batch."""
    messages = [
        {"role": "system", "content": "You are a research agent. Evidence cutoff: 2022-12-31."},
        {"role": "user", "content": "Study how well unsupervised models predict protein variant effects."},
        assistant(call("call_0", "WebSearch", query="unsupervised variant effect prediction"),
                  call("call_1", "WebSearch", query="deep mutational scanning datasets"),
                  reasoning="Start broad with two searches."),
        tool("call_0", "WebSearch", SEARCH_RESULT),
        tool("call_1", "WebSearch", "[1] paper_id: smith2022 | Deep mutational scanning at scale"),
        assistant(call("call_0", "Scraper", url="https://example.org/papers/2107.03312"),
                  call("call_1", "WebSearch", query=TITLE),  # the title was shown by the first search
                  reasoning="Read the first hit."),
        tool("call_0", "Scraper", "Full text. We score mutations with masked marginals."),
        tool("call_1", "WebSearch", SEARCH_RESULT),
        assistant(call("call_0", "Write", file_path="work/claim_audit.md", content=SKELETON),
                  reasoning="Set up the claim audit."),
        tool("call_0", "Write", "written"),
        assistant(call("call_0", "Edit", file_path="work/claim_audit.md", old_string="- TODO\n", new_string=CLAIMS),
                  reasoning="Record what [2107.03312] shows."),
        tool("call_0", "Edit", "edited"),
        assistant(call("call_0", "Edit", file_path="work/claim_audit.md", old_string="- TBD\n",
                       new_string="- Do double-mutant effects need a pairwise term?\n- Which assays hold enough pairs?\n"),
                  reasoning="Add open questions."),
        tool("call_0", "Edit", "edited"),
        assistant(call("call_0", "Edit", file_path="work/claim_audit.md", old_string="Claims", new_string="Audited claims"),
                  reasoning="Tidy the heading."),
        tool("call_0", "Edit", "edited"),
        assistant(content="The claim audit is in place.", reasoning="Done for now."),
    ]
    stages = ["evidence", "evidence", "claim_audit", "claim_audit", "claim_audit", "claim_audit", "claim_audit"]
    return messages, stages


def case(stages: list[str], **extra) -> CaseContext:
    return CaseContext(turn_stages=stages, known_paper_titles=[TITLE, "Deep mutational scanning at scale"],
                       locks=[LeakageLock(term="attention epistasis", not_before_stage="idea")], **extra)


def codes(report: QCReport) -> list[tuple[str, int]]:
    return [(f.code, f.message_index) for f in report.failures]


def test_clean_trajectory_passes_with_metrics():
    messages, stages = clean_trajectory()
    report = check_trajectory(messages, case(stages))
    assert report.failures == [] and report.problems == [] and report.passed
    metrics = report.metrics
    assert metrics.citations == 2 and metrics.grounded_citations == 2
    assert metrics.grounding_rate == 1.0 and metrics.traceability_gap == 0.0
    assert metrics.leakage_score == 0.0
    history = metrics.artifacts["work/claim_audit.md"]
    assert history.kinds == ["skeleton", "fill", "fill", "finalize"]
    assert history.incremental and metrics.incrementality == 1.0
    assert history.final_text.startswith("# Claim audit\n\n## Audited claims\n- Masked-marginal")
    assert report.rubric is None  # the model-judged rubric fills this later


def test_oracle_leakage_before_its_stage_only():
    messages, stages = clean_trajectory()
    messages[5]["reasoning_content"] = "Maybe attention epistasis explains it."
    messages[8]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        {"file_path": "work/claim_audit.md", "content": SKELETON + "\nIdea: Attention-Epistasis\n"})
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("oracle_leakage", 5), ("oracle_leakage", 8)]
    assert "stage evidence" in report.failures[0].reason and "from stage idea" in report.failures[0].reason
    assert report.failures[1].tool_call_id == "call_0"
    assert [(h.field, h.leak.kind) for h in report.metrics.leaks] == [("reasoning_content", "exact"),
                                                                     ("tool_arguments", "fuzzy")]
    assert report.metrics.leakage_score == 1.5
    # From the idea stage on the term is allowed.
    late = ["idea"] * len(stages)
    assert not [f for f in check_trajectory(messages, case(late)).failures if f.code == "oracle_leakage"]


def test_leak_in_visible_task_is_a_failure():
    messages, stages = clean_trajectory()
    messages[1]["content"] = "Find out whether attention epistasis helps."
    assert codes(check_trajectory(messages, case(stages))) == [("oracle_leakage", 1)]


def test_full_title_searched_before_it_was_observed():
    messages, stages = clean_trajectory()
    messages[2]["tool_calls"][1] = call("call_1", "WebSearch", query=f'"{TITLE.lower()}"')
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("title_pre_knowledge", 2)]
    assert report.failures[0].tool_call_id == "call_1"
    # A near-full title with a typo is still the title; a topical fragment is not.
    messages[2]["tool_calls"][1] = call("call_1", "WebSearch", query=TITLE.replace("mutations", "mutatons"))
    assert codes(check_trajectory(messages, case(stages))) == [("title_pre_knowledge", 2)]
    messages[2]["tool_calls"][1] = call("call_1", "WebSearch", query="zero-shot prediction of the effects of mutations")
    assert check_trajectory(messages, case(stages)).passed


def test_scraper_url_not_from_an_observation():
    messages, stages = clean_trajectory()
    messages[5]["tool_calls"][0] = call("call_0", "Scraper", url="https://example.org/papers/9999.00001")
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("fake_url", 5)]
    # Scheme, host case and a trailing slash do not make a URL new.
    messages[5]["tool_calls"][0] = call("call_0", "Scraper", url="http://EXAMPLE.org/papers/2107.03312/")
    assert check_trajectory(messages, case(stages)).passed


def test_artifact_written_before_its_stage():
    messages, stages = clean_trajectory()
    stages[2] = "evidence"
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("premature_artifact", 8)]
    assert "claim_audit.md may be created from stage claim_audit" in report.failures[0].reason
    # Other files are not artifacts; notes may be written any time.
    messages[8]["tool_calls"][0] = call("call_0", "Write", file_path="work/notes.md", content="notes")
    assert not [f for f in check_trajectory(messages, case(stages)).failures if f.code == "premature_artifact"]


def test_citations_to_sources_never_observed_or_observed_only_later():
    messages, stages = clean_trajectory()
    messages[10]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        {"file_path": "work/claim_audit.md", "old_string": "- TODO\n",
         "new_string": CLAIMS + "- Pairwise terms help [jones2023] (https://example.org/papers/jones2023).\n"})
    messages[2]["reasoning_content"] = "I recall https://example.org/papers/smith2022 exists."
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("unobserved_citation", 2), ("unobserved_citation", 10), ("unobserved_citation", 10)]
    reasons = [f.reason for f in report.failures]
    assert "only in a later observation" in reasons[0]
    assert any("'jones2023'" in r and "in no observation" in r for r in reasons[1:])
    assert report.metrics.citations == 4 and report.metrics.grounded_citations == 2
    assert report.metrics.grounding_rate == 0.5 and report.metrics.traceability_gap == 0.5
    assert sorted(report.metrics.ungrounded_citations) == [
        "work/claim_audit.md: https://example.org/papers/jones2023", "work/claim_audit.md: jones2023"]


def test_reading_back_own_file_does_not_make_a_fabricated_source_observed():
    messages, stages = clean_trajectory()
    fabricated = "https://example.org/papers/made-up"
    messages[8:10] = [
        assistant(call("call_0", "Write", file_path="work/notes.md", content=f"see {fabricated}")),
        tool("call_0", "Write", f"wrote: see {fabricated}"),
        assistant(call("call_0", "View", path="work/notes.md")),
        tool("call_0", "View", f"see {fabricated}"),
        assistant(call("call_0", "Scraper", url=fabricated)),
        tool("call_0", "Scraper", "page"),
    ]
    stages = stages[:3] + ["claim_audit"] * 2 + stages[3:]
    report = check_trajectory(messages, case(stages))
    assert codes(report) == [("unobserved_citation", 8), ("fake_url", 12)]


def test_reused_ids_link_batch_locally():
    """Every batch uses the id "call_7". Linked per batch, the search result is evidence for the Scraper URL."""
    url = "https://example.org/papers/2107.03312"
    messages = [
        {"role": "system", "content": "Agent."},
        {"role": "user", "content": "Study variant effects."},
        assistant(call("call_7", "WebSearch", query="variant effects")),
        tool("call_7", "WebSearch", f"hit: {url}"),
        assistant(call("call_7", "Scraper", url=url)),
        tool("call_7", "Scraper", "page"),
        assistant(call("call_7", "Write", file_path="work/notes.md", content="reading list")),
        tool("call_7", "Write", "written"),
    ]
    assert check_trajectory(messages, case(["evidence"] * 3)).passed

    # A trajectory-wide id map ties every observation to the last call with that id, the Write: the search
    # result would then be discarded as an echo of the agent's own writing and the URL would look made up.
    last_tool_by_id = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}
    naive_evidence = [m["content"] for m in messages
                      if m["role"] == "tool" and last_tool_by_id[m["tool_call_id"]] not in ("Write", "Edit")]
    assert last_tool_by_id["call_7"] == "Write" and not any(url in text for text in naive_evidence)


def test_observation_outside_its_batch_is_a_problem_and_not_evidence():
    messages, stages = clean_trajectory()
    # No call of the latest batch has the id call_9, so this observation links to nothing.
    messages.insert(8, tool("call_9", "WebSearch", "stray https://example.org/papers/stray"))
    messages[9]["reasoning_content"] = "Use https://example.org/papers/stray"
    report = check_trajectory(messages, case(stages))
    assert report.problems == ["messages[8]: tool_call_id 'call_9' is not a call of the latest assistant message"]
    assert codes(report) == [("unobserved_citation", 9)]
    assert not report.passed


def test_incrementality_classes():
    one_block = [assistant(call("c", "Write", file_path="synthesis.md", content="# Synthesis\n\n" + "Body text. " * 40))]
    assert replay_artifacts(one_block)["synthesis.md"].kinds == ["one_block"]
    assert not replay_artifacts(one_block)["synthesis.md"].incremental

    rewritten = [
        assistant(call("c", "Write", file_path="idea_candidates.md", content="# Ideas\n\n## Candidates\n- TODO\n")),
        assistant(call("c", "Write", file_path="idea_candidates.md",
                       content="# Ideas\n\n## Candidates\n- Pairwise attention term\n- Potts prior\n")),
        assistant(call("c", "Write", file_path="idea_candidates.md",
                       content="# Ideas\n\n## Candidates\n- Potts prior from sequences alone\n")),
        assistant(call("c", "Edit", file_path="idea_candidates.md", old_string="never there", new_string="x")),
        assistant(call("c", "Edit", file_path="idea_candidates.md", old_string="o", new_string="0")),  # not unique
        assistant(call("c", "Edit", file_path="idea_candidates.md", old_string="alone", new_string="alone (chosen)")),
    ]
    history = replay_artifacts(rewritten)["idea_candidates.md"]
    assert history.kinds == ["skeleton", "fill", "revise", "failed_edit", "failed_edit", "finalize"]
    assert history.incremental
    assert history.final_text.endswith("- Potts prior from sequences alone (chosen)\n")
    assert replay_artifacts(rewritten, ["synthesis.md"]) == {}


def test_skeleton_detection():
    assert looks_like_skeleton("")
    assert looks_like_skeleton("# Claim audit\n\n| Claim | Source | Verdict |\n|---|---|---|\n")
    assert looks_like_skeleton("# 想法候选\n\n## 候选\n- 待补充\n")
    assert not looks_like_skeleton("# Claims\n\nMasked marginals track fitness for single mutants in most assays.\n")


def test_citation_id_forms():
    text = "As [2107.03312] and [arXiv:2404.07738] and [smith2022] show; see [3], [1-4], [x] and [link](https://a.b)."
    assert find_citation_ids(text) == ["2107.03312", "arXiv:2404.07738", "smith2022"]


def test_bad_input_is_a_problem_not_an_error():
    messages, stages = clean_trajectory()
    messages[2]["tool_calls"][0]["function"]["arguments"] = "{broken"
    report = check_trajectory(messages, case(stages[:-2]))
    assert "turn_stages lists 5 stages for 7 assistant messages" in report.problems
    assert any("arguments are not valid JSON" in p for p in report.problems)
    assert not report.passed
    assert check_trajectory("nope", case([])).problems == ["messages is not a list"]  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CaseContext(turn_stages=["evidence"], unknown=1)
    with pytest.raises(ValueError, match="does not compile"):
        CaseContext(turn_stages=[], citation_id_pattern="([")
    with pytest.raises(ValueError):
        CaseContext(turn_stages=["brainstorm"])
