"""Lineage benchmark on planted corpora: edge precision/recall per type, build time versus size
(with the fitted exponent), the cost of one incremental batch, contamination reach, and sampling
against uniform random sampling at equal size.

    python bench/lineage.py                      # sizes 1k..100k (several minutes on 2 cores)
    python bench/lineage.py --sizes 1000 3000 10000 --quality-size 10000
"""
from __future__ import annotations

import argparse
import json
import time

import networkx as nx
import numpy as np

from trailforge.lineage.contamination import (
    BenchmarkIndex, ContaminationSettings, contamination_seeds, propagate,
)
from trailforge.lineage.graph import LineageGraph
from trailforge.lineage.metrics import selection_metrics
from trailforge.lineage.redundancy import RedundancySettings, redundant_pairs
from trailforge.lineage.sampling import adaptive, farthest_point, root_anchored, uniform
from trailforge.lineage.synthetic import edge_scores, planted_corpus


def build(n: int, seed: int = 0):
    corpus = planted_corpus(n, seed=seed)
    start = time.perf_counter()
    lineage = LineageGraph()
    for i in range(0, n, 5000):
        lineage.add_batch(corpus.items[i:i + 5000])
    return corpus, lineage, time.perf_counter() - start


def quality(n: int) -> dict:
    corpus, lineage, seconds = build(n)
    predicted = {(u, v, d["type"]) for u, v, d in lineage.graph.edges(data=True)}
    scores = edge_scores(predicted, corpus.edges)
    return {"items": n, "build_s": round(seconds, 2),
            **{k: {m: round(v, 4) if isinstance(v, float) else v for m, v in s.items()} for k, s in scores.items()}}


def scaling(sizes: list[int]) -> dict:
    rows = []
    for n in sizes:
        _, _, seconds = build(n, seed=1)
        rows.append({"items": n, "build_s": round(seconds, 2), "us_per_item": round(1e6 * seconds / n, 1)})
        print(json.dumps(rows[-1]), flush=True)
    slope = float(np.polyfit(np.log([r["items"] for r in rows]), np.log([r["build_s"] for r in rows]), 1)[0])
    return {"runs": rows, "fitted_exponent": round(slope, 3)}


def incremental(base_sizes: list[int], batch: int = 1000) -> list[dict]:
    """Seconds to insert the same-sized batch into graphs of different sizes."""
    out = []
    for base in base_sizes:
        corpus = planted_corpus(base + batch, seed=2)
        lineage = LineageGraph()
        for i in range(0, base, 5000):
            lineage.add_batch(corpus.items[i:min(base, i + 5000)])
        start = time.perf_counter()
        lineage.add_batch(corpus.items[base:])
        out.append({"graph_items": base, "batch": batch, "batch_s": round(time.perf_counter() - start, 3)})
    return out


def contamination(n: int = 3000) -> dict:
    """A label planted in the largest family's root, then the root's text planted as a benchmark."""
    corpus, lineage, _ = build(n, seed=3)
    truth = nx.DiGraph()
    truth.add_edges_from((p, c) for p, c, _ in corpus.edges)
    root = max((i.item_id for i in corpus.items if i.item_id in truth and truth.in_degree(i.item_id) == 0),
               key=lambda r: len(nx.descendants(truth, r)))
    family = nx.descendants(truth, root) | {root}
    graph_family = nx.descendants(lineage.graph, root) | {root}
    settings = ContaminationSettings(failed_evaluation=False, decay=0.5)
    labels = propagate(lineage.graph, {root: ("planted", "failed_evaluation", {})}, settings)
    hops = nx.single_source_shortest_path_length(lineage.graph, root)
    exact_decay = sum(1 for k, v in labels.items() if v.weight == 0.5 ** hops[k])
    planted_label = {"root": root, "planted_family": len(family), "graph_descendants_plus_root": len(graph_family),
                     "reached": len(labels), "reached_equals_graph_descendants": set(labels) == graph_family,
                     "weight_equals_decay_pow_hops": f"{exact_decay}/{len(labels)}",
                     "reached_in_planted_family": len(set(labels) & family),
                     "reached_outside_planted_family": len(set(labels) - family)}
    benchmark = next(i.text for i in corpus.items if i.item_id == root)
    seeds = contamination_seeds(corpus.items, BenchmarkIndex({"planted": benchmark}, settings), settings)
    matched = propagate(lineage.graph, seeds, settings)
    planted_benchmark = {"direct_matches": len(seeds), "direct_matches_outside_family": len(set(seeds) - family),
                         "reached": len(matched), "reached_in_planted_family": len(set(matched) & family),
                         "reached_outside_planted_family": len(set(matched) - family)}
    return {"label_in_root": planted_label, "benchmark_text_of_root": planted_benchmark}


def sampling(n: int, budget_shape: tuple[int, int, int], seeds: list[int]) -> dict:
    corpus, lineage, _ = build(n, seed=4)
    graph = lineage.graph
    texts = {i.item_id: i.text for i in corpus.items}
    pairs = redundant_pairs(graph, {i.item_id: i.outputs for i in corpus.items}, RedundancySettings())
    ids = list(texts)
    scores = {i.item_id: i.score for i in corpus.items}
    c, l, k = budget_shape
    budget = c * l * k
    results: dict[str, list[dict]] = {"farthest_point": [], "root_anchored": [], "adaptive": [],
                                      "uniform (same size as farthest_point)": [],
                                      "uniform (same size as root_anchored)": []}
    for seed in seeds:
        fps = farthest_point(graph, ids, budget, seed)
        anchored = root_anchored(graph, ids, c, l, k, seed)
        chosen, trace = adaptive(graph, ids, scores, budget, 30, seed)
        results["farthest_point"].append(selection_metrics(graph, fps, texts, pairs))
        results["root_anchored"].append(selection_metrics(graph, anchored, texts, pairs))
        results["adaptive"].append({**selection_metrics(graph, chosen, texts, pairs), "arm": trace["arm"],
                                    "mean_score": round(float(np.mean([scores[i] for i in chosen])), 4)})
        results["uniform (same size as farthest_point)"].append(selection_metrics(graph, uniform(ids, len(fps), seed), texts, pairs))
        results["uniform (same size as root_anchored)"].append(
            selection_metrics(graph, uniform(ids, len(anchored), seed), texts, pairs))
    keys = ["items", "roots_covered", "branches_covered", "family_coverage", "redundancy_rate", "vendi",
            "centroid_distance"]
    summary = {name: {key: round(float(np.mean([r[key] for r in runs])), 4) for key in keys}
               for name, runs in results.items()}
    summary["adaptive"]["arms"] = [r["arm"] for r in results["adaptive"]]
    summary["adaptive"]["mean_score"] = round(float(np.mean([r["mean_score"] for r in results["adaptive"]])), 4)
    summary["uniform (same size as farthest_point)"]["mean_score"] = round(float(np.mean(
        [np.mean([scores[i] for i in uniform(ids, budget, s)]) for s in seeds])), 4)
    return {"items": n, "budget": budget, "shape_c_l_k": list(budget_shape), "seeds": seeds, "mean_over_seeds": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 30000, 100000])
    parser.add_argument("--quality-size", type=int, default=10000)
    parser.add_argument("--sample-size", type=int, default=5000)
    args = parser.parse_args()
    report = {"edge_quality": quality(args.quality_size)}
    print(json.dumps(report["edge_quality"]), flush=True)
    report["contamination"] = contamination()
    print(json.dumps(report["contamination"]), flush=True)
    report["sampling"] = sampling(args.sample_size, (4, 3, 10), seeds=[0, 1, 2, 3, 4])
    print(json.dumps(report["sampling"], indent=1), flush=True)
    report["incremental"] = incremental([10000, min(90000, max(args.sizes))])
    print(json.dumps(report["incremental"]), flush=True)
    report["scaling"] = scaling(args.sizes)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
