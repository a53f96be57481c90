"""Release statistics on hand-made rows: counts, the funnel's arithmetic, lengths and equal-size diversity."""
from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trailforge.io import AnswerField, Reject, SeedRow, VerifiedTaskRow
from trailforge.io.store import arrow_schema, to_record
from trailforge.lineage.diversity import embed_texts, vendi_score
from trailforge.release.card import known_limitations, size_category, statistics_tables
from trailforge.release.report import write_plot_tables
from trailforge.release.stats import (
    PLOT_COLUMNS, StageFolderError, counts, diversity, funnel, read_stage_outcome, release_statistics, repository_yield,
    summarise,
)


def _task(i: int, kind: str, repo: str, discipline: str, level: int | None = None, words: int = 3,
          program_lines: int = 2) -> VerifiedTaskRow:
    checks = {"difficulty": {"level": level, "reason": "r"}} if level is not None else {}
    return VerifiedTaskRow(
        task_id=f"t{i:03d}", task_type=kind, seed_id=f"{repo}:a.py", repo_id=repo, discipline=discipline,
        statement=" ".join(f"word{i}_{w}" for w in range(words)),
        answer_schema=[AnswerField(name="x", type="number", label="x", source="stdout")], reference_answer={"x": 1.0},
        entrypoint="a.py", reference_program={"a.py": "x = 1\n" * program_lines}, workspace_files=[], tree="/nonexistent",
        distributions=[], sandbox_spec={"isolation": "process"}, tolerances={"x": {"rtol": 1e-6, "atol": 0.0}},
        checks=checks,
    )


def _seed(repo: str, script: str) -> SeedRow:
    return SeedRow(seed_id=f"{repo}:{script}", repo_id=repo, discipline="ecology", script=script, tree="/nonexistent",
                   program_files=[script], data_files=[], stdout="", files_written=[], distributions=[], sandbox_spec={})


def _reject(stage: str, item: str, reason: str) -> Reject:
    return Reject(stage=stage, item_id=item, reason=reason, message=f"{reason} on {item}")


TASKS = ([_task(i, "correction", "meadow", "ecology", level=2) for i in range(5)]
         + [_task(10 + i, "subflow", "meadow", "ecology") for i in range(3)]
         + [_task(20 + i, "reproduction", "pendulum", "physics", level=3, words=10, program_lines=7) for i in range(2)])


def test_counts_by_discipline_task_type_difficulty_and_repository():
    figures = counts(TASKS)
    assert figures["environments"] == 10
    assert figures["by_task_type"] == {"reproduction": 2, "subflow": 3, "correction": 5}, "pipeline order, no empty types"
    assert figures["by_discipline"] == {"ecology": 8, "physics": 2}
    assert figures["by_difficulty"] == {"2": 5, "3": 2, "unrated": 3}
    assert figures["by_repository"] == {"meadow": 8, "pendulum": 2}
    cross = figures["task_type_by_discipline"]
    assert cross["disciplines"] == ["ecology", "physics"]
    assert dict(zip(cross["task_types"], cross["cells"])) == {"reproduction": [0, 2], "subflow": [3, 0],
                                                              "correction": [5, 0]}


def test_yield_per_repository_divides_environments_by_seed_programs():
    seeds = [_seed("meadow", "a.py"), _seed("meadow", "b.py"), _seed("pendulum", "g.py"), _seed("barren", "x.py")]
    rows = {r["repo_id"]: r for r in repository_yield(TASKS, seeds)}
    assert rows["meadow"]["seeds"] == 2 and rows["meadow"]["environments"] == 8
    assert rows["meadow"]["environments_per_seed"] == 4.0
    assert rows["meadow"]["by_task_type"] == {"reproduction": 0, "subflow": 3, "completion": 0, "correction": 5}
    assert rows["barren"] == {"repo_id": "barren", "seeds": 1, "environments": 0, "environments_per_seed": 0.0,
                              "by_task_type": {"reproduction": 0, "subflow": 0, "completion": 0, "correction": 0}}
    assert {r["seeds"] for r in repository_yield(TASKS, None)} == {None}, "unknown, not zero, without the seeds stage"


def test_funnel_chains_each_stage_to_the_previous_ones_accepted_rows():
    outcomes = [
        {"stage": "discover", "accepted": 3, "rejects": [_reject("discover", "r9", "no_data")]},
        {"stage": "seeds", "accepted": 4, "rejects": [_reject("seeds", "r1:b.py", "nonzero_exit"),
                                                      _reject("seeds", "r1:a.py", "nonzero_exit"),
                                                      _reject("seeds", "r2:c.py", "not_entry_point")]},
        {"stage": "tasks", "accepted": 20, "rejects": []},
    ]
    steps = funnel(outcomes)
    assert [(s["stage"], s["rows_in"], s["rejected"], s["accepted"], s["considered"]) for s in steps] == [
        ("discover", None, 1, 3, 4), ("seeds", 3, 3, 4, 7), ("tasks", 4, 0, 20, 20)]
    reasons = steps[1]["reject_reasons"]
    assert [(r["reason"], r["count"]) for r in reasons] == [("nonzero_exit", 2), ("not_entry_point", 1)]
    assert reasons[0]["item_id"] == "r1:a.py", "the example is the first item by id, so the card is stable"


def test_a_stage_folder_is_read_from_its_files_and_a_missing_one_is_named(tmp_path):
    folder = tmp_path / "seeds"
    folder.mkdir()
    (folder / "stats.json").write_text(json.dumps({"accepted": 4, "rejected": 1, "wall_s": 1.5}))
    rejects = [_reject("seeds", "r1:a.py", "nonzero_exit")]
    pq.write_table(pa.Table.from_pylist([to_record(r) for r in rejects], schema=arrow_schema(Reject)),
                   folder / "rejects.parquet")
    outcome = read_stage_outcome("seeds", folder)
    assert outcome["accepted"] == 4 and outcome["rejects"] == rejects
    with pytest.raises(StageFolderError, match=str(tmp_path / "tasks" / "stats.json")):
        read_stage_outcome("tasks", tmp_path / "tasks")


def test_summaries_use_nearest_rank_percentiles():
    figures = summarise(list(range(1, 11)))
    assert figures == {"n": 10, "min": 1, "median": 5.5, "mean": 5.5, "p90": 9, "max": 10}
    assert summarise([])["n"] == 0


def test_diversity_uses_one_sample_size_and_averages_over_seeds():
    rng = np.random.default_rng(0)
    vocabulary = [f"term{i}" for i in range(200)]
    texts = lambda n: [" ".join(rng.choice(vocabulary, size=8)) for _ in range(n)]  # noqa: E731
    groups = {"big": texts(30), "small": texts(12), "tiny": texts(3)}
    result = diversity(groups, seeds=[0, 1, 2], max_sample=50, min_group=5)
    assert result["sample_size"] == 12, "the smallest measurable group sets the size; 'tiny' is below min_group"
    rows = {g["group"]: g for g in result["groups"]}
    assert rows["tiny"]["vendi"] is None and rows["tiny"]["items"] == 3
    embeddings = embed_texts(groups["big"])
    expected = np.mean([vendi_score(embeddings[np.random.default_rng(seed).choice(30, size=12, replace=False)])
                        for seed in (0, 1, 2)])
    assert rows["big"]["vendi"] == round(float(expected), 3)
    single = vendi_score(embeddings[np.random.default_rng(0).choice(30, size=12, replace=False)])
    assert rows["big"]["vendi"] != round(single, 3), "the figure is an average, not one draw"
    assert rows["small"]["vendi"] == round(vendi_score(embed_texts(groups["small"])), 3), \
        "a group of exactly the sample size is the same sample for every seed"
    assert diversity(groups, seeds=[0], max_sample=10, min_group=5)["sample_size"] == 10


def test_release_statistics_feed_tables_and_limitations_from_the_figures():
    outcomes = [{"stage": "verify", "accepted": 10, "rejects": [_reject("verify", "t999", "irreproducible")]}]
    stats = release_statistics(TASKS, outcomes, seed=0)
    assert stats["lengths"]["groups"][0]["statement_words"]["max"] == 10
    assert stats["lengths"]["groups"][0]["reference_program_lines"]["min"] == 2
    assert stats["isolation"] == {"process": 10}
    tables = {t["id"]: t for t in statistics_tables(stats)}
    assert tables["funnel"]["rows"] == [["verify", None, 1, 10, 11]]
    assert tables["by-difficulty"]["rows"][-1] == ["unrated", 3, "30.0%"]
    notes = " ".join(known_limitations(stats, {"llm_provider": "none", "statements": "deterministic"}))
    assert "3 of 10 environments have no difficulty rating" in notes
    assert "10 environments were verified in a plain subprocess" in notes
    assert size_category(999) == "n<1K" and size_category(1000) == "1K<n<10K"


def test_plot_tables_are_csv_files_of_the_funnel_and_the_yield_per_repository(tmp_path):
    outcomes = [{"stage": "seeds", "accepted": 4, "rejects": [_reject("seeds", "r1:b.py", "nonzero_exit")]},
                {"stage": "verify", "accepted": 10, "rejects": [_reject("verify", "t999", "irreproducible")] * 2}]
    seeds = [_seed("meadow", "a.py"), _seed("meadow", "b.py"), _seed("pendulum", "g.py"), _seed("barren", "x.py")]
    stats = release_statistics(TASKS, outcomes, seed=0, seed_rows=seeds)
    paths = write_plot_tables(stats, tmp_path / "plots")
    assert [p.name for p in paths] == ["funnel.csv", "yield.csv"]

    def read(name):
        with open(tmp_path / "plots" / name, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            return tuple(reader.fieldnames), list(reader)

    columns, rows = read("funnel.csv")
    assert columns == PLOT_COLUMNS["funnel"]
    assert rows == [{"stage": "seeds", "considered": "5", "rejected": "1", "accepted": "4"},
                    {"stage": "verify", "considered": "12", "rejected": "2", "accepted": "10"}]
    columns, rows = read("yield.csv")
    assert columns == ("repo_id", "seeds", "environments", "reproduction", "subflow", "completion", "correction")
    assert {r["repo_id"]: (r["seeds"], r["environments"], r["correction"], r["reproduction"]) for r in rows} == {
        "barren": ("1", "0", "0", "0"), "meadow": ("2", "8", "5", "0"), "pendulum": ("1", "2", "0", "2")}


def test_an_empty_release_still_writes_plot_headers(tmp_path):
    stats = release_statistics([], [{"stage": "verify", "accepted": 0, "rejects": []}], seed=0)
    write_plot_tables(stats, tmp_path)
    assert (tmp_path / "yield.csv").read_text() == ",".join(PLOT_COLUMNS["yield"]) + "\n"
    assert (tmp_path / "funnel.csv").read_text() == "stage,considered,rejected,accepted\nverify,0,0,0\n"
