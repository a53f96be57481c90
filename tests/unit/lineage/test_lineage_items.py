import json

import pytest

from trailforge.lineage.items import InputError, read_items


def test_jsonl_lines_that_cannot_be_used_are_rejects_with_reasons(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join([
        json.dumps({"uid": "a", "body": "first text", "when": "2026-01-02T00:00:00Z", "ok": False}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"body": "no id"}),
        json.dumps({"uid": "c", "messages": [{"role": "user", "content": "chat text"}], "from": ["a"]}),
        "",
    ]))
    fields = {"id": "uid", "text": "body", "time": "when", "passed": "ok", "parents": "from"}
    items, rejects = read_items(path, "jsonl", fields)
    assert [i.item_id for i in items] == ["a", "c"]
    assert items[0].passed is False and items[0].time == pytest.approx(1767312000.0)
    assert items[1].text == "chat text" and items[1].parents == ["a"]
    assert [(where, reason) for where, reason, _ in rejects] == [
        ("corpus.jsonl:2", "malformed_json"), ("corpus.jsonl:3", "not_an_object"), ("corpus.jsonl:4", "missing_field")]


def test_a_bad_time_and_a_missing_input_name_the_problem(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "x", "text": "t", "time": "yesterday"}) + "\n")
    _, rejects = read_items(path, "jsonl", {})
    assert "time 'yesterday'" in rejects[0][2]
    with pytest.raises(InputError, match="lineage.input.path"):
        read_items(tmp_path / "missing.jsonl", "jsonl", {})


def test_released_environments_carry_their_provenance(tmp_path):
    env = tmp_path / "envs" / "lab__fit.py__correction__3"
    (env / "solution").mkdir(parents=True)
    (env / "eval").mkdir()
    (env / "metadata.json").write_text(json.dumps({
        "env_id": env.name, "repo_id": "lab", "seed_id": "lab:fit.py", "task_type": "correction",
        "discipline": "physics", "construction": {"operator": "sign"}}))
    (env / "task.md").write_text("Fix the sign error.")
    (env / "solution" / "fit.py").write_text("print(1)\n")
    (env / "eval" / "expected.json").write_text('{"a": 1}')
    (tmp_path / "envs" / "broken").mkdir()
    items, rejects = read_items(tmp_path / "envs", "environments", {})
    assert items[0].provenance == {"repo_id": "lab", "seed_id": "lab:fit.py", "task_type": "correction",
                                   "discipline": "physics", "mutation": "sign"}
    assert items[0].code == "print(1)\n" and items[0].outputs == '{"a": 1}'
    assert rejects == [("broken", "missing_metadata", "broken has no metadata.json")]
