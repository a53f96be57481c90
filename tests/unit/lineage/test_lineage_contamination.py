import networkx as nx
import pytest

from trailforge.lineage.contamination import (
    BenchmarkIndex, ContaminationSettings, benchmark_texts, contamination_seeds, propagate,
)
from trailforge.lineage.graph import LineageGraph
from trailforge.lineage.items import LineageItem
from trailforge.lineage.synthetic import planted_corpus


@pytest.fixture(scope="module")
def planted():
    corpus = planted_corpus(1500, seed=5)
    lineage = LineageGraph()
    lineage.add_batch(corpus.items)
    truth = nx.DiGraph()
    truth.add_nodes_from(i.item_id for i in corpus.items)
    truth.add_edges_from((p, c) for p, c, _ in corpus.edges)
    return corpus, lineage, truth


def test_a_label_planted_in_a_root_reaches_exactly_its_descendants_with_the_decay(planted):
    corpus, lineage, truth = planted
    root = max((n for n in truth if truth.in_degree(n) == 0), key=lambda n: len(nx.descendants(truth, n)))
    family = nx.descendants(truth, root)
    assert len(family) >= 10
    labels = propagate(lineage.graph, {root: ("planted", "failed_evaluation", {})}, ContaminationSettings(decay=0.5))
    assert set(labels) == nx.descendants(lineage.graph, root) | {root}  # exactly, in the graph it walks
    # and against the planted truth: (almost) the whole family, nothing outside it
    assert len(set(labels) & family) >= 0.7 * len(family)  # a missed edge high up loses its subtree
    assert set(labels) - family == {root}
    hops = nx.single_source_shortest_path_length(lineage.graph, root)
    for node, label in labels.items():
        assert label.weight == pytest.approx(0.5 ** hops[node])
        assert label.path[0] == root and label.path[-1] == node and len(label.path) == hops[node] + 1


def test_backward_propagation_reaches_ancestors_but_not_their_other_descendants():
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "x")])
    labels = propagate(g, {"b": ("bench", "benchmark_ngram", {})},
                       ContaminationSettings(decay=0.5, backward=True, backward_decay=0.25))
    assert {k: v.weight for k, v in labels.items()} == {"b": 1.0, "c": 0.5, "a": 0.25}


def test_benchmark_overlap_near_duplicates_and_failed_evaluations_are_seeds(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    question = ("compute the michaelis menten constant from the initial rates listed in the table "
                "and report the maximal velocity with its standard error")
    (bench / "questions.jsonl").write_text('{"q": "%s"}\n' % question)
    (bench / "image.png").write_bytes(b"\x89PNG")
    settings = ContaminationSettings(ngram=8, min_ngram_hits=3)
    index = BenchmarkIndex(benchmark_texts([bench]), settings)
    items = [LineageItem("leak", "Task: " + question + ". Use the data file."),
             LineageItem("clean", "estimate the growth rate of the bacterial culture from optical density"),
             LineageItem("failed", "a task whose reference failed", passed=False),
             LineageItem("short", "compute the michaelis menten constant")]
    seeds = contamination_seeds(items, index, settings)
    assert set(seeds) == {"leak", "failed"}
    assert seeds["leak"][1] == "benchmark_ngram" and seeds["leak"][0].endswith("questions.jsonl:1")
    assert seeds["failed"][1] == "failed_evaluation"
    assert "failed" not in contamination_seeds(items, index, ContaminationSettings(failed_evaluation=False))


def test_a_missing_benchmark_path_is_named():
    with pytest.raises(FileNotFoundError, match="lineage.contamination.benchmarks: /nonexistent"):
        benchmark_texts(["/nonexistent"])


def test_a_long_refinement_chain_is_followed_to_its_end():
    chain = [f"v{i}" for i in range(60)]
    g = nx.DiGraph()
    nx.add_path(g, chain)
    labels = propagate(g, {"v0": ("bench", "benchmark_ngram", {})}, ContaminationSettings(decay=0.5))
    assert set(labels) == set(chain) and labels["v59"].weight == 0.5 ** 59
    assert propagate(g, {"v0": ("b", "r", {})}, ContaminationSettings(decay=0.0)).keys() == {"v0"}
