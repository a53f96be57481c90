"""The corpus audit on a small corpus built to hold every quirk it must report, with exact expected counts."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trailforge.release.corpus_audit import (MISSING, audit_corpus, distribution, entropy_bits, first_iso_date,
                                             load_tokenizer, write_audit_report)

# Every record lists its keys in this order (absent ones skipped), so a columnar copy re-serializes
# to the very same JSON text as the JSONL line.
RECORD_KEYS = ["sample_id", "messages", "tools", "parallel_tool_calls", "_src", "_grade", "_naturalness",
               "_proposal_synth", "_proposal_path", "_reclaim"]
TOOLS = [{"type": "function", "function": {"name": "View", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "WebSearch", "parameters": {"type": "object"}}}]
LONG_OBSERVATION_WORDS = 80_000


def system(text: str) -> dict:
    return {"role": "system", "content": text}


def user(text: str = "Find a research direction.") -> dict:
    return {"role": "user", "content": text}


def assistant(reasoning: str | None, content: str | None = "", calls=(), tier: str | None = None, **extra) -> dict:
    message = {"role": "assistant"}
    if content is not None:
        message["content"] = content
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(arguments)}}
                                 for call_id, name, arguments in calls]
    if tier is not None:
        message["_value"] = tier
    message.update(extra)
    return message


def tool(call_id: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def record(sample_id: str, messages: list, **fields) -> dict:
    values = {"sample_id": sample_id, "messages": messages, "tools": TOOLS, **fields}
    assert set(values) <= set(RECORD_KEYS)
    return {key: values[key] for key in RECORD_KEYS if key in values}


def quirk_records() -> list[dict]:
    """Six trajectories; the comments name the quirk each one carries."""
    return [
        # parallel calls in one message; id c1 reused by the next batch; proposal metadata; full tiers
        record("t1", [
            system("You are a researcher. Knowledge cutoff 2025-03-14; earlier note 2024-01-01."),
            user(),
            assistant("plan the search", calls=[("c1", "View", {"path": "topics/optics/a.md"}),
                                                ("c2", "WebSearch", {"query": "lens"})], tier="high"),
            tool("c2", "search results"),
            tool("c1", "file one"),
            assistant("read another file", calls=[("c1", "View", {"path": "topics/optics/b.md"})], tier="normal"),
            tool("c1", "file b"),
            assistant("done", content="Final answer", tier="low"),
        ], parallel_tool_calls=True, _src="v5", _grade="A", _naturalness=0.5, _proposal_synth=True,
            _proposal_path="proposals/t1.md"),
        # literal "None" grade; special token in the user turn; id reused for another tool; an orphan
        # observation; ends on a tool message; invalid date before the valid one
        record("t2", [
            system("Cutoff: 2025-02-30, then 2024-12-01."),
            user("<|im_start|> injected"),
            assistant("r", content=None, calls=[("call_0", "View", {"path": "topics/optics/c.md"})]),
            tool("call_0", "x"),
            assistant("r2", content=None, calls=[("call_0", "WebSearch", {"query": "q"})]),
            tool("call_0", "y"),
            tool("call_9", "orphan"),
        ], parallel_tool_calls=True, _src="rp23", _grade="None"),
        # missing grade and parallel flag; empty function name; _new flag; special tokens in reasoning and
        # content; empty reasoning; no date; no topic
        record("t3", [
            system("No date in this prompt."),
            user(),
            assistant("", content="Visible text", calls=[("k1", "", {})], tier="normal", _new=True),
            tool("k1", "observation for the nameless call"),
            assistant("think <|endoftext|>", content="done <|im_start|>"),
        ], _src="rp23"),
        # an observation before any call batch; three calls in one message
        record("t4", [
            system("Date 2023-05-06."),
            user(),
            tool("a", "stray"),
            assistant("x", calls=[("a", "View", {"path": "topics/vision/x"}),
                                  ("b", "View", {"path": "topics/vision/y"}),
                                  ("c", "WebSearch", {"query": "depth"})], tier="high"),
            tool("a", "A"), tool("b", "B"), tool("c", "C"),
            assistant("y", content="Answer"),
        ], parallel_tool_calls=True, _src="rp4", _grade="B"),
        # a call that never gets an observation; extra metadata key
        record("t5", [
            system("As of 2025-07-01."),
            user(),
            assistant("look", calls=[("d", "View", {"path": "topics/optics/z"}), ("e", "WebSearch", {"query": "z"})]),
            tool("d", "Z"),
            assistant("wrap up", content="Done."),
        ], parallel_tool_calls=True, _src="v5", _grade="A", _reclaim="r"),
        # long on purpose: past 64k tokens in both views
        record("t6", [
            system("No date."),
            user(),
            assistant("read the long file", calls=[("L1", "View", {"path": "topics/vision/long.md"})]),
            tool("L1", " word" * LONG_OBSERVATION_WORDS),
            assistant("summarise", content="Long done."),
        ], parallel_tool_calls=True, _src="rp4", _grade="C"),
    ]


BAD_LINES = ['{"sample_id": "bad", "messages": [', json.dumps({"sample_id": "nomsg"}),
             json.dumps({"sample_id": "strmsgs", "messages": "hello"})]


def write_jsonl(path: Path, records: list[dict], extra_lines: list[str] = ()) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    lines[1:1] = list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _columns(records: list[dict]) -> dict[str, list]:
    """One column per key in RECORD_KEYS order; messages and tools as JSON text, as releases store them."""
    present = [k for k in RECORD_KEYS if any(k in r for r in records)]
    columns = {k: [r.get(k) for r in records] for k in present}
    for key in ("messages", "tools"):
        columns[key] = [json.dumps(v, ensure_ascii=False) for v in columns[key]]
    return columns


def write_parquet(path: Path, records: list[dict]) -> Path:
    pq.write_table(pa.table(_columns(records)), path)
    return path


def write_dataset(path: Path, records: list[dict]) -> Path:
    from datasets import Dataset

    Dataset.from_dict(_columns(records)).save_to_disk(str(path))
    return path


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture(scope="module")
def report(corpus_dir) -> dict:
    path = write_jsonl(corpus_dir / "quirks.jsonl", quirk_records(), BAD_LINES + [""])
    return audit_corpus(path, threads=2)


def test_bad_input_is_a_counted_reject_with_its_reason(report):
    assert report["rejects"]["total"] == 3
    assert report["rejects"]["by_reason"] == {"invalid_json": 1, "messages_not_a_list": 1, "no_messages": 1}
    origins = {e["origin"] for e in report["rejects"]["examples"]}
    assert origins == {"quirks.jsonl:2", "quirks.jsonl:3", "quirks.jsonl:4"}
    assert report["input"]["blank_lines"] == 1
    assert report["scale"]["trajectories"] == 6 and report["scale"]["unique_sample_ids"] == 6


def test_roles_messages_and_character_sources(report):
    roles = {k: v["count"] for k, v in report["composition"]["messages_by_role"].items()}
    assert roles == {"assistant": 13, "tool": 13, "system": 6, "user": 6}
    assert report["per_record"]["messages"] == [8, 7, 5, 8, 5, 5]
    chars = report["composition"]["characters_by_source"]
    records = quirk_records()
    tool_chars = sum(len(m["content"]) for r in records for m in r["messages"] if m["role"] == "tool")
    assert chars["tool.content"]["chars"] == tool_chars
    assert chars["assistant.reasoning_content"]["chars"] == sum(
        len(m.get("reasoning_content", "")) for r in records for m in r["messages"])
    assert math.isclose(sum(v["share"] for v in chars.values()), 1.0)


def test_tool_calls_fanout_and_batch_local_matching(report):
    tools = report["tools"]
    assert {k: v["calls"] for k, v in tools["per_tool"].items()} == {"View": 7, "WebSearch": 4, "<empty>": 1}
    assert tools["per_tool"]["View"]["share"] == pytest.approx(7 / 12)
    # the second c1 observation belongs to the second batch's View call, the call_0 one to WebSearch
    assert tools["per_tool"]["WebSearch"]["observations"] == 3
    assert tools["per_tool"]["View"]["observations"] == 7
    assert tools["fanout"]["histogram"] == {"1": 5, "2": 2, "3": 1}
    assert tools["fanout"]["with_calls"] == 8 and tools["fanout"]["assistant_messages"] == 13
    assert tools["id_reuse"] == {"trajectories_reusing_ids": 2, "repeated_id_occurrences": 2, "max_uses_of_one_id": 2}
    fmt = report["format"]
    assert fmt["matched_tool_observations"] == 11
    assert fmt["unmatched_tool_observations"] == 2
    assert fmt["unmatched_by_cause"] == {"id_not_in_latest_batch": 1, "no_preceding_call_batch": 1}
    assert fmt["observations_a_global_id_map_misattributes"] == 2
    assert fmt["calls_without_observation"] == 1
    assert fmt["calls_with_empty_function_name"] == 1 and fmt["calls_without_function_name"] == 0


def test_observation_lengths_per_tool(report):
    long_text = " word" * LONG_OBSERVATION_WORDS
    view_chars = report["tools"]["per_tool"]["View"]["observation_chars"]
    assert view_chars["count"] == 7 and view_chars["max"] == len(long_text)
    encoding = load_tokenizer()
    view_tokens = report["tools"]["per_tool"]["View"]["observation_tokens"]
    assert view_tokens["max"] == len(encoding.encode_ordinary(long_text))


def test_reasoning_and_visible_content(report):
    assistant = report["assistant"]
    assert assistant["messages"] == 13
    assert assistant["with_reasoning"] == 12
    assert assistant["with_visible_content"] == 6


def test_value_tiers_and_grades_keep_literal_none_apart_from_missing(report):
    tiers = {k: v["count"] for k, v in report["metadata"]["value_tiers"].items()}
    assert tiers == {MISSING: 8, "high": 2, "normal": 2, "low": 1}
    grades = {k: v["count"] for k, v in report["metadata"]["grades"].items()}
    assert grades == {"A": 2, "B": 1, "C": 1, "None": 1, MISSING: 1}
    assert report["metadata"]["source_by_grade"]["rp23"] == {"None": 1, MISSING: 1}
    assert report["metadata"]["record_keys"]["_proposal_synth"] == {"present": 1, "true": 1}
    assert report["metadata"]["record_keys"]["_reclaim"]["present"] == 1
    assert report["metadata"]["message_keys"]["_new"] == {"present": 1, "true": 1}
    assert report["metadata"]["parallel_tool_calls"]["true"]["count"] == 5
    assert report["metadata"]["parallel_tool_calls"][MISSING]["count"] == 1
    assert report["metadata"]["distinct_tool_sets"] == 1


def test_format_audit(report):
    fmt = report["format"]
    assert fmt["record_schema_variants"] == 4
    assert fmt["message_schema_variants"] == 8
    assert fmt["assistant_final"] == 5 and fmt["tool_final"] == 1
    assert fmt["special_token_trajectories"] == 2
    assert fmt["special_tokens"] == {"<|im_start|>": 2, "<|endoftext|>": 1}
    assert fmt["special_token_unique"] == 2


def test_topics_and_entropy(report):
    topics = report["topics"]
    assert topics["top"] == [["optics", 3], ["vision", 2]]
    assert topics["without_topic"] == 1 and topics["singletons"] == 0
    expected = -(0.6 * math.log2(0.6) + 0.4 * math.log2(0.4))
    assert topics["entropy_bits"] == pytest.approx(expected)
    assert topics["normalised_entropy"] == pytest.approx(expected / math.log2(2))


def test_entropy_of_known_distributions():
    assert entropy_bits([5, 5, 5, 5]) == (pytest.approx(2.0), pytest.approx(1.0))
    entropy, normalised = entropy_bits([2, 1, 1])
    assert entropy == pytest.approx(1.5) and normalised == pytest.approx(1.5 / math.log2(3))
    assert entropy_bits([7]) == (0.0, None)


def test_topic_pattern_is_configurable(corpus_dir):
    path = write_jsonl(corpus_dir / "topics.jsonl", quirk_records()[:2])
    report = audit_corpus(path, topic_pattern=r"\"query\": \"(\w+)\"", threads=1)
    assert report["topics"]["top"] == [["lens", 1], ["q", 1]]


def test_first_valid_iso_date_of_the_system_prompt(report):
    dates = report["dates"]
    assert dates["parseable"] == 4 and dates["no_date_in_system_prompt"] == 2
    assert (dates["earliest"], dates["latest"]) == ("2023-05-06", "2025-07-01")
    assert dates["by_year"] == {"2023": 1, "2024": 1, "2025": 2}
    assert first_iso_date("bad 2025-02-30 good 2024-12-01").isoformat() == "2024-12-01"
    assert first_iso_date("version 12025-01-01x") is None


def test_token_views_follow_the_protocol(report, corpus_dir):
    encoding = load_tokenizer("o200k_base")
    first = quirk_records()[0]
    fields = [m[k] for m in first["messages"] for k in ("reasoning_content", "content") if isinstance(m.get(k), str)]
    assert report["per_record"]["text_tokens"][0] == len(encoding.encode_ordinary("\n".join(fields)))
    line = (corpus_dir / "quirks.jsonl").read_text(encoding="utf-8").splitlines()[0]
    assert report["per_record"]["record_tokens"][0] == len(encoding.encode_ordinary(line))
    # special-token look-alikes are ordinary text, not control tokens
    second = json.dumps(quirk_records()[1], ensure_ascii=False)
    assert report["per_record"]["record_tokens"][1] == len(encoding.encode_ordinary(second))


def test_percentiles_use_linear_interpolation(report):
    assert distribution([1, 2, 3, 4])["p25"] == 1.75
    for view in ("messages", "text_tokens", "record_tokens"):
        values = report["per_record"][view]
        for q in (5, 25, 50, 75, 90, 95, 99):
            assert report["lengths"][view][f"p{q}"] == pytest.approx(np.percentile(values, q))
        assert report["lengths"][view]["mean"] == pytest.approx(np.mean(values))


def test_long_record_is_beyond_64k(report):
    assert max(report["per_record"]["record_tokens"]) > 65536
    record_context = report["context"]["record_tokens"]
    assert record_context["64k"]["threshold"] == 65536
    assert (record_context["64k"]["within"], record_context["64k"]["beyond"]) == (5, 1)
    assert record_context["64k"]["beyond_share"] == pytest.approx(1 / 6)
    assert record_context["128k"]["beyond"] == 0
    assert report["context"]["text_tokens"]["64k"]["beyond"] == 1


def test_tokenizer_is_configurable(corpus_dir):
    path = write_jsonl(corpus_dir / "one.jsonl", quirk_records()[:1])
    line = path.read_text(encoding="utf-8").splitlines()[0]
    report = audit_corpus(path, tokenizer="cl100k_base", threads=1)
    assert report["settings"]["tokenizer"] == "cl100k_base"
    assert report["per_record"]["record_tokens"] == [len(load_tokenizer("cl100k_base").encode_ordinary(line))]
    with pytest.raises(ValueError, match="unknown tokenizer"):
        load_tokenizer("no_such_encoding")


def _comparable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "input"}


def test_three_input_forms_read_the_same(corpus_dir):
    records = quirk_records()
    jsonl = audit_corpus(write_jsonl(corpus_dir / "same.jsonl", records), threads=1)
    parquet = audit_corpus(write_parquet(corpus_dir / "same.parquet", records), threads=1)
    dataset = audit_corpus(write_dataset(corpus_dir / "same_dataset", records), threads=1)
    forms = (jsonl["input"]["form"], parquet["input"]["form"], dataset["input"]["form"])
    assert forms == ("jsonl", "parquet", "datasets")
    assert _comparable(parquet) == _comparable(jsonl)
    assert _comparable(dataset) == _comparable(jsonl)


def test_struct_columns_read_null_as_absent(corpus_dir):
    """Native list<struct> messages fill every key any message has; the nulls must not become schema variants."""
    records = quirk_records()
    path = corpus_dir / "structs.parquet"
    present = [k for k in RECORD_KEYS if any(k in r for r in records)]
    pq.write_table(pa.table({k: [r.get(k) for r in records] for k in present}), path)
    columnar = audit_corpus(path, threads=1)
    jsonl = audit_corpus(write_jsonl(corpus_dir / "structs.jsonl", records), threads=1)
    for section in ("metadata", "assistant", "topics", "dates"):
        assert columnar[section] == jsonl[section], section
    assert columnar["format"]["message_schema_variants"] == 8
    assert columnar["format"]["record_schema_variants"] == 4
    assert columnar["per_record"]["text_tokens"] == jsonl["per_record"]["text_tokens"]


def test_a_folder_of_shards_is_one_corpus(corpus_dir):
    folder = corpus_dir / "shards"
    folder.mkdir()
    records = quirk_records()
    write_jsonl(folder / "part-0.jsonl", records[:3])
    write_parquet(folder / "part-1.parquet", records[3:])
    report = audit_corpus(folder, threads=1)
    assert report["input"]["form"] == "mixed" and report["input"]["files"] == 2
    assert report["per_record"]["sample_id"] == [r["sample_id"] for r in records]


def test_written_report_has_json_markdown_csv_and_plots(report, tmp_path):
    written = write_audit_report(report, tmp_path / "audit")
    names = {p.name for p in written}
    assert {"audit.json", "audit.md", "per_record.csv", "lengths.png", "composition.png", "tool_calls.png",
            "fanout.png", "topics.png"} <= names
    for path in written:
        assert path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert summary["format"]["tool_final"] == 1 and "per_record" not in summary
    markdown = (tmp_path / "audit" / "audit.md").read_text()
    assert "| Assistant-final / tool-final trajectories | 5 / 1 |" in markdown
    assert "| Calls with empty / missing function name | 1 / 0 |" in markdown
    rows = (tmp_path / "audit" / "per_record.csv").read_text().splitlines()
    assert rows[0] == "sample_id,messages,text_tokens,record_tokens" and len(rows) == 7


def test_an_empty_corpus_still_reports(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("not json\n", encoding="utf-8")
    report = audit_corpus(path, threads=1)
    assert report["scale"]["trajectories"] == 0 and report["rejects"]["by_reason"] == {"invalid_json": 1}
    written = write_audit_report(report, tmp_path / "out")
    assert (tmp_path / "out" / "lengths.png") in written


def test_cli_audit_and_review_sheet(corpus_dir, tmp_path, capsys):
    from trailforge.cli.main import build_parser, main

    path = write_jsonl(corpus_dir / "cli.jsonl", quirk_records()[:2])
    out = tmp_path / "cli_audit"
    assert main(["audit", str(path), "--out", str(out), "--no-plots", "--tokenizer", "cl100k_base",
                 "--topic-pattern", r"topics/(\w+)"]) == 0
    summary = json.loads((out / "audit.json").read_text())
    assert summary["settings"]["tokenizer"] == "cl100k_base" and summary["topics"]["top"] == [["optics", 2]]
    assert not list(out.glob("*.png"))
    assert "trajectories" in capsys.readouterr().out
    assert main(["audit", str(tmp_path / "nowhere.jsonl")]) == 2
    sheet = build_parser().parse_args(["review-sheet", "--size", "10", "--min-per-stratum", "1"])
    assert (sheet.size, sheet.min_per_stratum, sheet.out) == (10, 1, "outputs/audit")


def test_odd_but_parseable_records_are_counted_not_fatal(tmp_path):
    odd = [
        {"sample_id": 7, "_grade": None, "tools": "not a list", "messages": [
            {"content": "no role"},
            {"role": "assistant", "content": [{"type": "text", "text": "parts"}], "tool_calls": {"id": "x"}},
            {"role": "assistant", "tool_calls": ["not a call", {"id": "p", "function": {"arguments": {"q": 1}}},
                                                 {"function": {"name": "View", "arguments": "{}"}}]},
            {"role": "tool", "content": ["list", "content"]},
            {"role": "tool", "tool_call_id": "p", "content": None},
        ]},
        {"sample_id": 7, "messages": [{"role": "user", "content": "duplicate id"}, "not a message"]},
    ]
    path = write_jsonl(tmp_path / "odd.jsonl", odd)
    report = audit_corpus(path, threads=1)
    assert report["rejects"]["by_reason"] == {"message_not_an_object": 1}
    assert report["scale"]["trajectories"] == 1
    assert report["metadata"]["grades"]["<null>"]["count"] == 1
    assert report["metadata"]["tools_per_record"] == {"not_a_list": 1}
    assert report["composition"]["messages_by_role"][MISSING]["count"] == 1
    assert report["composition"]["non_string_text_fields"] == {"assistant.content": 1, "tool.content": 1}
    fmt = report["format"]
    assert (fmt["tool_calls_not_a_list"], fmt["calls_not_an_object"], fmt["arguments_not_a_string"]) == (1, 1, 1)
    assert (fmt["calls_without_function_name"], fmt["calls_without_id"]) == (1, 1)
    assert fmt["unmatched_by_cause"] == {"missing_tool_call_id": 1}
    assert fmt["matched_tool_observations"] == 1
    assert report["tools"]["per_tool"][MISSING]["observation_chars"]["max"] == 0


def test_compressed_and_damaged_jsonl(tmp_path):
    import gzip

    records = quirk_records()[:2]
    plain = write_jsonl(tmp_path / "plain.jsonl", records)
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert audit_corpus(packed, threads=1)["per_record"] == audit_corpus(plain, threads=1)["per_record"]
    damaged = tmp_path / "damaged.jsonl.gz"
    damaged.write_bytes(packed.read_bytes()[:-40])
    report = audit_corpus(damaged, threads=1)
    assert report["rejects"]["by_reason"].get("unreadable_file") == 1
