"""Stage tier: a script that prints its results as bare numbers gives environments whose fields are named by the
print calls that printed them.

``gc.py`` below reads a FASTA file and prints, per sequence, the sequence and then one number, with no label: a
reading of stdout alone names nothing (before, ``no_structured_answer`` and no task at all). The seeds stage runs it
under the tracer, which records each ``print()`` call; the numbers become fields named ``calc_gc(seq) (value k)``.
Only tasks that give the code keep them: the Reproduction, from the data alone, would have to guess what
``calc_gc`` computes (a fraction or a percent), and is a counted reject.
"""
from __future__ import annotations

import json

import pytest

from conftest import build_to_tasks, run_stage
from trailforge.io import SeedRow, TaskRow, VerifiedTaskRow, read_rejects, read_rows

GC = '''def read_fasta(path):
    records, name = {}, None
    for line in open(path):
        line = line.strip()
        if line.startswith(">"):
            name = line[1:]
            records[name] = ""
        elif name:
            records[name] += line.upper()
    return records


def calc_gc(seq):
    return (seq.count("G") + seq.count("C")) / len(seq)


def gc_skew(seq):
    g, c = seq.count("G"), seq.count("C")
    return (g - c) / (g + c)


if __name__ == "__main__":
    records = read_fasta("genome/sample.fasta")
    for name, seq in records.items():
        print(name)
        print(calc_gc(seq))
        print(gc_skew(seq))
'''
FASTA = (">chr1\nATGGGCCGCATTAGCGGGCTAACG\nGGCTTAAC\n>chr2\nTTGACCCATGGAACTTTAGCAGGT\nCCAT\n"
         ">chr3\nGGGCCCGCGATATCGCGGCCTTAA\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project, _ = build_to_tasks(tmp_path_factory.mktemp("printed"), "gc-content", {
        "README.md": "GC content and GC skew of the sequences of a small genome.\n",
        "gc.py": GC,
        "genome/sample.fasta": FASTA,
    }, [])
    run_stage(project, "verify", "--tasks", "out/tasks", "--out", "out/verify")
    return project


def test_the_seed_names_its_bare_numbers_by_their_print_calls(built):
    [seed] = read_rows(built / "out/seeds/data", SeedRow)
    assert sorted(seed.stdout_names.values()) == sorted(
        [f"calc_gc(seq) (value {k})" for k in (1, 2, 3)] + [f"gc_skew(seq) (value {k})" for k in (1, 2, 3)])
    first = next(int(k) for k, v in seed.stdout_names.items() if v == "calc_gc(seq) (value 1)")
    assert seed.stdout.splitlines()[first - 1:first + 1] == ["chr1", "0.59375"]  # 19 of 32 bases are G or C


def test_only_tasks_that_give_the_code_keep_the_fields_and_they_verify(built):
    tasks = read_rows(built / "out/tasks/data", TaskRow)
    reasons = {r.reason for r in read_rejects(built / "out/tasks/rejects.parquet")}
    assert "reproduction_needs_the_code" in reasons and "no_structured_answer" not in reasons
    # The FASTA file's residues are substituted (dependence.perturb_fasta): every GC and skew value moves.
    assert "data_not_perturbable" not in reasons
    counters = json.loads((built / "out/tasks/stats.json").read_text())["counters"]
    assert counters["answer_fields_data_dependent"] == 6 and counters["answer_fields_not_data_dependent"] == 0
    assert {t.task_type for t in tasks} >= {"correction"} and "reproduction" not in {t.task_type for t in tasks}
    verified = read_rows(built / "out/verify/data", VerifiedTaskRow)
    assert any(t.task_type == "correction" for t in verified), read_rejects(built / "out/verify/rejects.parquet")
    for task in verified:
        assert task.answer_schema and all(f.source.startswith("stdout@") for f in task.answer_schema)
        assert "with `print(calc_gc(seq))`" in task.statement or "with `print(gc_skew(seq))`" in task.statement
