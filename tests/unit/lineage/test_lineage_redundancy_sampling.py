import networkx as nx
import numpy as np
import pytest

from trailforge.lineage.diversity import centroid_distance, embed_texts, sampled_diversity, vendi_score
from trailforge.lineage.graph import LineageGraph
from trailforge.lineage.metrics import selection_metrics
from trailforge.lineage.redundancy import RedundancySettings, diminishing_refinements, redundant_pairs
from trailforge.lineage.sampling import adaptive, factorisations, farthest_point, root_anchored, uniform
from trailforge.lineage.synthetic import planted_corpus


@pytest.fixture(scope="module")
def planted():
    corpus = planted_corpus(1500, seed=9)
    lineage = LineageGraph()
    lineage.add_batch(corpus.items)
    return corpus, lineage


def test_different_path_same_result_pairs_are_flagged_convergent(planted):
    corpus, lineage = planted
    pairs = redundant_pairs(lineage.graph, {i.item_id: i.outputs for i in corpus.items}, RedundancySettings())
    convergent = {(p["a"], p["b"]) for p in pairs if p["kind"] == "convergent"}
    assert corpus.convergent_pairs and len(convergent & corpus.convergent_pairs) >= 0.8 * len(corpus.convergent_pairs)
    duplicates = [p for p in pairs if p["kind"] == "lineage_duplicate"]
    assert duplicates and all(p["path_overlap"] > 0.2 for p in duplicates)


def test_redundancy_score_is_alpha_similarity_plus_beta_overlap():
    g = nx.DiGraph([("a", "b")])
    out = "the fitted rate constant is 0.42 per second with r squared 0.99"
    pairs = redundant_pairs(g, {"a": out, "b": out, "c": "something else entirely, nothing shared"},
                            RedundancySettings(alpha=0.6, beta=0.4))
    assert pairs == [{"a": "a", "b": "b", "kind": "lineage_duplicate", "score": pytest.approx(0.6 + 0.4 * 0.5),
                      "output_similarity": 1.0, "path_overlap": 0.5}]


def test_a_refinement_that_adds_almost_nothing_is_diminishing():
    g = nx.DiGraph()
    g.add_edge("p", "c1", type="refine")
    g.add_edge("p", "c2", type="refine")
    base = " ".join(f"w{i}" for i in range(100))
    texts = {"p": base, "c1": base + " w1000", "c2": " ".join(f"v{i}" for i in range(50)) + " " + base}
    assert diminishing_refinements(g, texts, RedundancySettings(min_novelty=0.1)) == {"c1": pytest.approx(0.0102, abs=1e-3)}


def test_samplers_are_deterministic_and_respect_the_budget(planted):
    corpus, lineage = planted
    ids = [i.item_id for i in corpus.items]
    assert farthest_point(lineage.graph, ids, 50, seed=3) == farthest_point(lineage.graph, ids, 50, seed=3)
    assert farthest_point(lineage.graph, ids, 50, seed=3) != farthest_point(lineage.graph, ids, 50, seed=4)
    assert len(farthest_point(lineage.graph, ids, 50, seed=3)) == 50
    anchored = root_anchored(lineage.graph, ids, c=2, l=3, k=5, seed=1)
    assert 0 < len(anchored) <= 30 and anchored == root_anchored(lineage.graph, ids, 2, 3, 5, seed=1)
    assert len(uniform(ids, 50, 0)) == 50


def test_root_anchored_follows_the_shape():
    g = nx.DiGraph()
    for r in "AB":
        for b in range(3):
            nx.add_path(g, [r] + [f"{r}{b}{d}" for d in range(4)])
    candidates = [n for n in g if len(n) > 1]  # the roots themselves are not items here
    picked = root_anchored(g, candidates, c=2, l=3, k=1, seed=0)
    assert len(picked) == 6 and len({p[0] for p in picked}) == 1          # k = 1 root
    for depth in range(3):                                                # l = 3 layers,
        assert sum(1 for p in picked if int(p[2]) == depth) == 2          # c = 2 per layer
    assert all(int(p[2]) < 3 for p in picked)
    layer0 = [p for p in picked if p[2] == "0"]
    assert layer0[0][1] != layer0[1][1]                                   # from different branches
    assert len(root_anchored(g, candidates, c=3, l=4, k=2, seed=0)) == 24


def test_with_a_large_disconnected_distance_farthest_point_reaches_every_family_first(planted):
    corpus, lineage = planted
    families = list(nx.weakly_connected_components(lineage.graph))
    ids = [i.item_id for i in corpus.items]
    picked = farthest_point(lineage.graph, ids, len(families), seed=0, disconnected=100.0)
    assert len({next(i for i, f in enumerate(families) if p in f) for p in picked}) == len(families)


def test_lineage_sampling_beats_uniform_on_lineage_and_embedding_diversity(planted):
    corpus, lineage = planted
    ids = [i.item_id for i in corpus.items]
    texts = {i.item_id: i.text for i in corpus.items}
    wins = 0
    for seed in range(3):
        fps = selection_metrics(lineage.graph, farthest_point(lineage.graph, ids, 100, seed), texts, [])
        base = selection_metrics(lineage.graph, uniform(ids, 100, seed), texts, [])
        wins += fps["roots_covered"] > base["roots_covered"] and fps["vendi"] > base["vendi"]
    assert wins == 3


def test_adaptive_prefers_the_arm_whose_items_score_best():
    # Two roots with deep chains: deep items score high, so a deeper arm should win.
    g = nx.DiGraph()
    scores = {}
    for r in range(6):
        for b in range(2):
            chain = [f"r{r}"] + [f"r{r}b{b}d{d}" for d in range(6)]
            nx.add_path(g, chain)
            for d in range(6):
                scores[f"r{r}b{b}d{d}"] = 1.0
    items = list(scores)
    chosen, info = adaptive(g, items, scores, budget=12, rounds=40, seed=0)
    assert info["arm"][0] * info["arm"][1] * info["arm"][2] == 12
    assert len(chosen) == 12  # the winning arm fills the budget
    assert adaptive(g, items, scores, 12, 40, 0) == (chosen, info)
    assert sorted(factorisations(4)) == [(1, 1, 4), (1, 2, 2), (1, 4, 1), (2, 1, 2), (2, 2, 1), (4, 1, 1)]


def test_vendi_score_dual_form_matches_the_definition():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 8))  # d < N: the dual form is used
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    eig = np.linalg.eigvalsh(unit @ unit.T / 40)
    eig = eig[eig > 1e-12]
    assert vendi_score(x) == pytest.approx(float(np.exp(-np.sum(eig * np.log(eig)))), rel=1e-9)
    assert vendi_score(np.ones((5, 3))) == pytest.approx(1.0)
    assert vendi_score(np.eye(6)) == pytest.approx(6.0)
    assert centroid_distance(np.ones((4, 3))) == pytest.approx(0.0)


def test_offline_embeddings_and_equal_size_diversity():
    texts = ["enzyme kinetics of lactase", "enzyme kinetics of lactase", "tidal gauges and sea level"]
    e = embed_texts(texts)
    assert e.shape == (3, 512) and float(e[0] @ e[1]) == pytest.approx(1.0) and float(e[0] @ e[2]) < 0.3
    summary = sampled_diversity(e, size=2, seeds=[0, 1, 2])
    assert summary["sample_size"] == 2 and 1.0 <= summary["vendi"] <= 2.0
    with pytest.raises(ValueError, match="unknown embedding method"):
        embed_texts(texts, "word2vec")
