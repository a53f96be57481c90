"""The audit sample: proportional with a floor per stratum, seeded, and blind."""
from __future__ import annotations

import csv
import json
from collections import Counter

from trailforge.io import AnswerField, FileEntry, VerifiedTaskRow
from trailforge.release.audit import JUDGEMENT_FIELDS, SHEET_FIELDS, allocate, audit_sample, write_audit


def _task(i: int, discipline: str, kind: str, level: int | None) -> VerifiedTaskRow:
    checks = {"negative_controls": {"scaled_value": "rejected"}, "review": {"score": 5, "history": []}}
    if level is not None:
        checks["difficulty"] = {"level": level, "reason": "r"}
    return VerifiedTaskRow(
        task_id=f"t{i:03d}", task_type=kind, seed_id="s", repo_id="org/repo", discipline=discipline,
        statement=f"statement {i}", answer_schema=[AnswerField(name="x", type="number", label="x", source="stdout")],
        reference_answer={"x": 123.456789}, entrypoint="a.py", reference_program={"a.py": "print('x: 1')\n"},
        workspace_files=[FileEntry(path="data/d.csv", sha256="0", size=1, kind="data")], tree="/nonexistent",
        distributions=[], sandbox_spec={"python": "3.11.7", "packages": {}},
        tolerances={"x": {"rtol": 1e-6, "atol": 0.0}}, checks=checks,
    )


TASKS = ([_task(i, "ecology", "correction", 2) for i in range(60)] + [_task(100 + i, "ecology", "subflow", 3)
                                                                       for i in range(30)]
         + [_task(200 + i, "physics", "reproduction", None) for i in range(3)] + [_task(300, "genomics", "completion", 4)])


def test_allocation_is_proportional_with_a_floor_per_stratum():
    quota = allocate({"big": 60, "mid": 30, "small": 3, "one": 1}, total=20, minimum=2)
    assert quota["one"] == 1 and quota["small"] == 2, "small strata get the floor (or all they have)"
    assert quota["big"] > quota["mid"] > quota["small"]
    assert sum(quota.values()) == 20


def test_the_sample_covers_every_stratum_and_is_reproducible():
    sample = audit_sample(TASKS, total=20, minimum=2, seed=7)
    strata = Counter((t.discipline, t.task_type) for t in sample)
    assert set(strata) == {("ecology", "correction"), ("ecology", "subflow"), ("physics", "reproduction"),
                           ("genomics", "completion")}
    assert min(strata.values()) >= 1 and len(sample) == 20
    assert [t.task_id for t in audit_sample(TASKS, 20, 2, seed=7)] == [t.task_id for t in sample]
    assert [t.task_id for t in audit_sample(TASKS, 20, 2, seed=8)] != [t.task_id for t in sample]


def test_the_sheet_is_blind(tmp_path):
    summary = write_audit(TASKS, tmp_path, total=12, minimum=2, seed=1)
    rows = list(csv.DictReader(open(tmp_path / "sheet.csv", encoding="utf-8")))
    assert len(rows) == summary["sampled"] == 12
    assert list(rows[0]) == SHEET_FIELDS + JUDGEMENT_FIELDS
    text = (tmp_path / "sheet.csv").read_text()
    for hidden in ("123.456789", "rejected", "score", "difficulty", "t0"):
        assert hidden not in text, f"the sheet must not show {hidden!r}"
    key = json.loads((tmp_path / "key.json").read_text())
    assert sorted(key) == sorted(r["audit_id"] for r in rows)
