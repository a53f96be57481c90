"""The release record: building, validating, serializing, and the corpus audit reading what we write."""
from __future__ import annotations

import json

import pytest

from trailforge.ideation.record import (RECORD_KEY_ORDER, VALUE_KEY, RecordError, build_record, link_observations,
                                        serialize_record, validate_record)
from trailforge.release.corpus_audit import DEFAULT_TIER_KEY, MISSING, audit_corpus

TOOL_NAMES = ("WebSearch", "Scraper", "View", "Write", "Edit", "Glob", "Grep")
TOOLS = [{"type": "function", "function": {"name": name, "description": f"the {name} tool",
                                           "parameters": {"type": "object", "properties": {}}}}
         for name in TOOL_NAMES]


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def assistant(*calls: dict, reasoning: str = "thinking", content: str = "", tier: str | None = "normal") -> dict:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        message["tool_calls"] = list(calls)
    if tier is not None:
        message[VALUE_KEY] = tier
    return message


def observation(call_id: str, name: str, content: str = "ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def trajectory() -> list[dict]:
    """Two batches that reuse the id "call_0"; the first batch has two parallel calls."""
    return [
        {"role": "system", "content": "You are a research agent. Evidence cutoff: 2024-06-30."},
        {"role": "user", "content": "Look into zero-shot protein fitness prediction."},
        assistant(call("call_0", "WebSearch", query="zero-shot fitness prediction"),
                  call("call_1", "WebSearch", query="deep mutational scanning benchmark"), tier="high"),
        observation("call_0", "WebSearch", "1. Paper A https://example.org/a"),
        observation("call_1", "WebSearch", "1. Paper B https://example.org/b"),
        assistant(call("call_0", "Scraper", url="https://example.org/a"), tier="low"),
        observation("call_0", "Scraper", "full text of paper A"),
        assistant(content="Done.", tier=None),
    ]


def test_built_record_is_valid_and_leaves_absent_metadata_out():
    record = build_record("case-1", trajectory(), TOOLS, src="demo")
    assert validate_record(record) == []
    assert "_grade" not in record and "_proposal_synth" not in record and "_proposal_path" not in record
    assert VALUE_KEY == DEFAULT_TIER_KEY == "_value"


def test_grade_absent_literal_none_and_null_are_three_states():
    absent = json.loads(serialize_record(build_record("a", trajectory(), TOOLS)))
    literal = json.loads(serialize_record(build_record("b", trajectory(), TOOLS, grade="None")))
    assert "_grade" not in absent
    assert literal["_grade"] == "None" and isinstance(literal["_grade"], str)
    null = build_record("c", trajectory(), TOOLS)
    null["_grade"] = None
    assert any('write the string "None"' in p for p in validate_record(null))
    wrong = build_record("d", trajectory(), TOOLS, grade="A")
    wrong["_grade"] = "D"
    assert any("not one of A, B, C, None" in p for p in validate_record(wrong))


def test_proposal_synth_is_true_or_absent_never_false():
    proposal = build_record("p", trajectory(), TOOLS, grade="A", proposal_path="cases/p/research_proposal.md")
    assert proposal["_proposal_synth"] is True and validate_record(proposal) == []
    idea = build_record("i", trajectory(), TOOLS, grade="B")
    assert "_proposal_synth" not in idea and validate_record(idea) == []
    false = dict(idea, _proposal_synth=False, _proposal_path="x.md")
    assert any("true or absent, never false" in p for p in validate_record(false))
    lonely = dict(idea, _proposal_path="x.md")
    assert any("_proposal_path is present without _proposal_synth" in p for p in validate_record(lonely))


def test_serialized_line_keeps_key_order_and_unicode():
    record = build_record("z", trajectory(), TOOLS, src="demo", grade="None", naturalness=0.8,
                          proposal_path="p.md")
    record["_reclaim"] = "kept"
    record["messages"][1]["content"] = "研究 ocean heat uptake"
    line = serialize_record(record)
    assert line.endswith("\n") and line.count("\n") == 1
    parsed = json.loads(line)
    assert list(parsed) == [*RECORD_KEY_ORDER, "_reclaim"]
    assert "研究" in line  # not \u-escaped
    with pytest.raises(RecordError) as error:
        serialize_record({"sample_id": "x"})
    assert "missing required key 'messages'" in error.value.problems


def test_batch_local_linkage_with_reused_ids():
    messages = trajectory()
    links, problems = link_observations(messages)
    assert problems == []
    assert [(l.observation_index, l.call_message_index, l.tool_name) for l in links] == [
        (3, 2, "WebSearch"), (4, 2, "WebSearch"), (6, 5, "Scraper")]
    # A trajectory-wide map (id -> last call using it) would tie the first search result to the Scraper call.
    global_map = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}
    assert global_map["call_0"] == "Scraper" != links[0].tool_name


def test_linkage_faults_are_reported():
    messages = trajectory()
    # call_1 belonged to the first batch only: after the second batch it no longer links.
    messages.insert(7, observation("call_1", "WebSearch"))
    problems = validate_record(build_record("x", messages, TOOLS))
    assert problems == ["messages[7]: tool_call_id 'call_1' is not a call of the latest assistant message"]

    unanswered = trajectory()[:4]
    assert validate_record(build_record("y", unanswered, TOOLS)) == [
        "messages[2]: tool call 'call_1' has no observation"]

    twice = trajectory()
    twice.insert(5, observation("call_1", "WebSearch"))
    assert any("answered more than once" in p for p in validate_record(build_record("w", twice, TOOLS)))

    misnamed = trajectory()
    misnamed[6]["name"] = "View"
    assert any("differs from the call it answers" in p for p in validate_record(build_record("v", misnamed, TOOLS)))


def test_message_and_tool_format_problems():
    messages = trajectory()
    messages[2]["tool_calls"][0]["function"]["arguments"] = "{not json"
    messages[2]["tool_calls"][1]["function"]["name"] = "Browse"
    messages[5][VALUE_KEY] = "medium"
    messages[1][VALUE_KEY] = "high"
    messages.append({"role": "critic", "content": "?"})
    tools = [*TOOLS[:-1], {"type": "function", "function": {"name": "Grep", "parameters": {"type": "array"}}}]
    record = build_record("m", messages, tools)
    record["extra"] = 1
    problems = validate_record(record)
    expected = ["unknown key 'extra'",
                "parameters of 'Grep' must be a JSON schema",
                "messages[2].tool_calls[0]: arguments are not valid JSON",
                "messages[2].tool_calls[1]: tool call names 'Browse'",
                "messages[5]: _value is 'medium'",
                "messages[1]: value tier on a user message",
                "messages[8]: role 'critic'"]
    for fragment in expected:
        assert any(fragment in p for p in problems), fragment
    assert validate_record("not a record") == ["record is str, not an object"]
    assert "the first message must be the system prompt" in validate_record(
        build_record("s", trajectory()[1:], TOOLS))


def test_audit_reads_serialized_records_without_format_problems(tmp_path):
    records = [build_record("r1", trajectory(), TOOLS, src="demo", grade="A", proposal_path="cases/r1/p.md"),
               build_record("r2", trajectory(), TOOLS, src="demo", grade="None"),
               build_record("r3", trajectory(), TOOLS, src="demo")]
    path = tmp_path / "ideation.jsonl"
    path.write_text("".join(serialize_record(r) for r in records), encoding="utf-8")
    report = audit_corpus(path, threads=1)
    assert report["rejects"]["total"] == 0
    assert report["scale"]["trajectories"] == 3 and report["scale"]["tool_calls"] == 9
    tiers = {k: v["count"] for k, v in report["metadata"]["value_tiers"].items()}
    assert tiers == {"high": 3, "low": 3, MISSING: 3}
    grades = {k: v["count"] for k, v in report["metadata"]["grades"].items()}
    assert grades == {"A": 1, "None": 1, MISSING: 1}
    assert report["metadata"]["record_keys"]["_proposal_synth"] == {"present": 1, "true": 1}
    fmt = report["format"]
    for key in ("unmatched_tool_observations", "calls_without_observation", "calls_without_id",
                "calls_with_empty_function_name", "calls_without_function_name", "arguments_not_a_string",
                "ids_repeated_within_one_message", "repeated_observations_for_one_call", "tool_calls_not_a_list"):
        assert fmt[key] == 0, key
    # The reused id is counted, and the audit sees what a global map would get wrong.
    assert report["tools"]["id_reuse"]["trajectories_reusing_ids"] == 3
    assert fmt["observations_a_global_id_map_misattributes"] == 3
    assert report["structure"]["starts_with_system"] == 3 and report["metadata"]["distinct_tool_sets"] == 1
