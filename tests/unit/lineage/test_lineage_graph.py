import numpy as np
import pytest

from trailforge.lineage.graph import LineageGraph, item_signals, lineage_branches, lineage_roots
from trailforge.lineage.items import LineageItem
from trailforge.lineage.synthetic import edge_scores, planted_corpus


def text(rng, n):
    return [f"w{i}" for i in rng.integers(0, 50_000, size=n)]


@pytest.fixture
def family():
    """A root and one child made by each operation, plus an unrelated item."""
    rng = np.random.default_rng(3)
    root, other = text(rng, 120), text(rng, 120)
    refined = list(root)
    for i in range(0, 120, 15):
        refined[i] = "edited"
    derived = root[60:] + text(rng, 70)       # carries the results on
    diverged = root[:60] + text(rng, 70)      # keeps the opening, departs
    merged = other[:60] + root[30:90]
    items = [("root", root, 0), ("other", other, 1), ("refined", refined, 2), ("derived", derived, 3),
             ("diverged", diverged, 4), ("merged", merged, 5), ("stranger", text(rng, 100), 6)]
    return [LineageItem(item_id=i, text=" ".join(t), time=float(ts)) for i, t, ts in items]


def edge_types(graph):
    return {(u, v): d["type"] for u, v, d in graph.edges(data=True)}


def test_each_operation_is_recovered_with_its_type(family):
    lineage = LineageGraph()
    lineage.add_batch(family)
    assert edge_types(lineage.graph) == {
        ("root", "refined"): "refine", ("root", "derived"): "derive", ("root", "diverged"): "diverge",
        ("other", "merged"): "merge", ("root", "merged"): "merge",
    }
    assert lineage.graph.in_degree("stranger") == 0 and lineage.graph.out_degree("stranger") == 0


def test_incremental_batches_give_the_same_graph_as_one_batch(family):
    whole, parts = LineageGraph(), LineageGraph()
    whole.add_batch(family)
    parts.add_batch(family[:3])
    parts.add_batch(family[3:5])
    parts.add_batch(family[5:])
    assert edge_types(whole.graph) == edge_types(parts.graph)


def test_time_decides_direction_even_when_a_batch_is_out_of_order(family):
    lineage = LineageGraph()
    lineage.add_batch(list(reversed(family)))
    assert ("root", "refined") in edge_types(lineage.graph)


def test_explicit_parents_and_back_references_are_exact_edges():
    items = [LineageItem("a", "completely unrelated words here one two three", time=0),
             LineageItem("b", "nothing in common with anything else at all", time=1),
             LineageItem("c", "a fresh text that follows up on b with new words", time=2),
             LineageItem("d", "another fresh text entirely different words", parents=["a", "b"], time=3),
             LineageItem("e", "parent missing from the corpus", parents=["zzz"], time=4)]
    lineage = LineageGraph()
    lineage.add_batch(items)
    g = lineage.graph
    assert g.edges["b", "c"]["signal"] == "back_reference" and g.edges["b", "c"]["exact"]
    assert g.edges["a", "d"]["type"] == g.edges["b", "d"]["type"] == "merge"
    assert g.edges["a", "d"]["signal"] == "explicit"
    assert lineage.stats.unknown_parents == 1 and g.in_degree("e") == 0


def test_a_back_reference_copied_from_the_parent_does_not_point_at_the_grandparent():
    rng = np.random.default_rng(5)
    grand = " ".join(text(rng, 80))
    parent = " ".join(text(rng, 40)) + " continuing from g " + grand[:200]
    child = parent.replace("w", "w", 1) + " " + " ".join(text(rng, 5))
    lineage = LineageGraph()
    lineage.add_batch([LineageItem("g", grand, time=0), LineageItem("p", parent, time=1),
                       LineageItem("c", child, time=2)])
    assert list(lineage.graph.predecessors("c")) == ["p"]


def test_provenance_links_environments_to_seed_program_and_repository():
    items = [LineageItem(f"env{i}", f"statement {i}", kind="environment",
                         provenance={"repo_id": "lab", "seed_id": f"lab:s{i % 2}.py", "mutation": "sign" if i else None})
             for i in range(3)]
    lineage = LineageGraph()
    lineage.add_batch(items)
    g = lineage.graph
    assert g.nodes["repo:lab"]["kind"] == "repository" and g.nodes["seed:lab:s0.py"]["kind"] == "seed_program"
    assert sorted(g.predecessors("env0")) == ["seed:lab:s0.py"] and sorted(g.predecessors("env1")) == ["seed:lab:s1.py"]
    assert g.edges["seed:lab:s1.py", "env1"]["via"] == "sign"
    assert lineage_roots(g)["env2"] == ("repo:lab",)
    assert lineage_branches(g)["env1"] == (("repo:lab", "seed:lab:s1.py"),)


def test_duplicate_ids_are_counted_not_inserted(family):
    lineage = LineageGraph()
    lineage.add_batch(family)
    lineage.add_batch(family[:2])
    assert lineage.stats.duplicate_ids == 2 and lineage.stats.items == len(family)


def test_planted_corpus_edges_are_recovered_per_type():
    corpus = planted_corpus(2000, seed=11)
    lineage = LineageGraph()
    lineage.add_batch(corpus.items)
    scores = edge_scores({(u, v, d["type"]) for u, v, d in lineage.graph.edges(data=True)}, corpus.edges)
    for kind in ("derive", "refine", "merge", "diverge"):
        assert scores[kind]["precision"] >= 0.9 and scores[kind]["recall"] >= 0.88, (kind, scores[kind])


def test_a_repeated_id_within_one_batch_is_counted_and_the_first_kept(family):
    lineage = LineageGraph()
    impostor = LineageItem(item_id="root", text="something else entirely " * 20, time=9.0)
    lineage.add_batch(family + [impostor])
    assert lineage.stats.duplicate_ids == 1 and lineage.stats.items == len(family)
    assert lineage.entries["root"].item is family[0]


def test_signals_computed_elsewhere_in_chunks_give_the_same_graph():
    corpus = planted_corpus(600, seed=5)
    whole = LineageGraph()
    whole.add_batch(corpus.items)
    chunked = LineageGraph()
    signals = [s for start in range(0, 600, 97) for s in item_signals(corpus.items[start:start + 97], chunked.settings)]
    chunked.add_batch(corpus.items, signals)
    assert whole.node_link() == chunked.node_link()
    with pytest.raises(ValueError, match="2 signals for 600 items"):
        LineageGraph().add_batch(corpus.items, signals[:2])
