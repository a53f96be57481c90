"""The library behind the lineage, decontaminate and sample stages: rows in, rows and figures out."""
from __future__ import annotations

from functools import partial
from typing import Any

import networkx as nx

from .contamination import (
    BenchmarkIndex, ContaminationSettings, benchmark_matches, benchmark_texts, contamination_seeds, propagate, seed_text,
)
from .graph import EdgeSettings, LineageGraph, item_signals, lineage_roots
from .items import LineageItem
from .metrics import selection_metrics
from .redundancy import RedundancySettings, ancestry_sets, diminishing_refinements, redundant_pairs
from .sampling import adaptive, farthest_point, root_anchored, uniform
from ..io.progress import Progress
from ..io.rows import LineageRow


def edge_settings(cfg) -> EdgeSettings:
    e = cfg.edges
    return EdgeSettings(shingle=e.shingle, num_perm=e.num_perm, bands=e.bands, max_bucket=e.max_bucket,
                        min_similarity=e.min_similarity, min_containment=e.min_containment,
                        refine_similarity=e.refine_similarity, merge_min_gain=e.merge_min_gain,
                        diverge_max_position=e.diverge_max_position, code_weight=e.code_weight,
                        max_parents=e.max_parents, infer_when_parents_known=e.infer_when_parents_known,
                        back_references=e.back_references)


def contamination_settings(cfg) -> ContaminationSettings:
    c = cfg.contamination
    return ContaminationSettings(ngram=c.ngram, min_ngram_hits=c.min_ngram_hits, near_duplicate=c.near_duplicate,
                                 failed_evaluation=c.failed_evaluation, decay=c.decay, backward=c.backward,
                                 backward_decay=c.backward_decay)


def redundancy_settings(cfg) -> RedundancySettings:
    r = cfg.redundancy
    return RedundancySettings(alpha=r.alpha, beta=r.beta, min_output_similarity=r.min_output_similarity,
                              threshold=r.threshold, convergent_max_path_overlap=r.convergent_max_path_overlap,
                              min_novelty=r.min_novelty)


# Items per executor task for the per-item work (signals, benchmark matching): large enough that a
# task's overhead on a cluster is small next to its work, small enough to spread over the workers.
CHUNK = 256


def _chunks(items: list, size: int = CHUNK) -> list[list]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def build_lineage(items: list[LineageItem], cfg, executor=None
                  ) -> tuple[LineageGraph, list[LineageRow], dict[str, Any]]:
    """Graph, one row per item (contamination, redundancy, roots) and the figures for stats.json.

    With an ``executor`` (``trailforge.executor``), the per-item work (shingles and MinHash band keys,
    matching against benchmarks) runs on it in chunks; inserting items into the graph is sequential,
    since each item is linked to those inserted before it. Results do not depend on the executor.
    """
    settings = edge_settings(cfg)
    lineage = LineageGraph(settings)
    figures: dict[str, Any] = {}
    signals = None
    if executor is not None:
        signals = [s for part in executor.map(partial(item_signals, settings=settings), _chunks(items),
                                              label="lineage signals", figures=figures) for s in part]
    with Progress("lineage", len(items)) as progress:
        for start in range(0, len(items), cfg.batch_size):
            batch = items[start:start + cfg.batch_size]
            lineage.add_batch(batch, signals[start:start + cfg.batch_size] if signals is not None else None)
            progress.advance(len(batch))
    graph = lineage.graph
    by_id = {item_id: entry.item for item_id, entry in lineage.entries.items()}
    index = BenchmarkIndex(benchmark_texts(cfg.contamination.benchmarks), contamination_settings(cfg)) \
        if cfg.contamination.benchmarks else None
    matches = None
    if index is not None and executor is not None:
        texts = [seed_text(item) for item in by_id.values()]
        matches = [m for part in executor.map(partial(benchmark_matches, index=index), _chunks(texts),
                                              label="benchmark matching", figures=figures) for m in part]
    seeds = contamination_seeds(list(by_id.values()), index, contamination_settings(cfg), matches)
    labels = propagate(graph, seeds, contamination_settings(cfg))
    ancestry = ancestry_sets(graph)
    pairs = redundant_pairs(graph, {i: by_id[i].outputs or "" for i in by_id}, redundancy_settings(cfg), ancestry)
    diminishing = diminishing_refinements(graph, {i: by_id[i].text for i in by_id}, redundancy_settings(cfg))
    roots = lineage_roots(graph)
    depth: dict[str, int] = {}
    for node in nx.topological_sort(graph):
        depth[node] = 1 + max((depth[p] for p in graph.predecessors(node)), default=-1)
    partners: dict[str, list[dict]] = {}
    for pair in pairs:
        partners.setdefault(pair["b"], []).append({"id": pair["a"], "kind": pair["kind"], "score": pair["score"]})
        partners.setdefault(pair["a"], []).append({"id": pair["b"], "kind": pair["kind"], "score": pair["score"]})
    rows = []
    for item_id in lineage.item_ids():
        item, label = by_id[item_id], labels.get(item_id)
        rows.append(LineageRow(
            item_id=item_id, kind=item.kind, text=item.text,
            parents=[{"id": p, "type": graph.edges[p, item_id]["type"], "signal": graph.edges[p, item_id]["signal"],
                      "weight": graph.edges[p, item_id]["weight"]} for p in sorted(graph.predecessors(item_id))],
            roots=list(roots[item_id]), depth=depth[item_id],
            contamination=label.weight if label else 0.0,
            contamination_reason=label.reason if label else None,
            contamination_source=label.source if label else None,
            contamination_path=label.path if label else [],
            redundant_with=sorted(partners.get(item_id, []), key=lambda p: p["id"]),
            diminishing=diminishing.get(item_id), score=item.score, passed=item.passed,
        ))
    edge_types: dict[str, int] = {}
    for _, _, data in graph.edges(data=True):
        edge_types[data["type"]] = edge_types.get(data["type"], 0) + 1
    figures.update({
        "items": len(rows), "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
        "edge_types": dict(sorted(edge_types.items())),
        "edge_signals": dict(sorted(lineage.stats.edges_by_signal.items())),
        "roots": len([n for n in graph.nodes if graph.in_degree(n) == 0]),
        "families": nx.number_weakly_connected_components(graph),
        "candidates_checked": lineage.stats.candidates_checked,
        "bucket_truncations": lineage.stats.bucket_truncations,
        "unknown_parents": lineage.stats.unknown_parents, "duplicate_ids": lineage.stats.duplicate_ids,
        "contamination_seeds": dict(sorted(_count(r for _, r, _ in seeds.values()).items())),
        "contaminated_items": sum(1 for r in rows if r.contamination > 0),
        "redundant_pairs": dict(sorted(_count(p["kind"] for p in pairs).items())),
        "diminishing_refinements": len(diminishing),
        "redundancy_rate": round(sum(1 for r in rows if r.redundant_with) / len(rows), 4) if rows else 0.0,
    })
    return lineage, rows, figures


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def decontaminate(rows: list[LineageRow], drop_threshold: float, downweight_threshold: float):
    """(kept rows with their sampling weight, dropped rows): drop at or above the drop threshold,
    weight ``1 - contamination`` at or above the down-weight threshold."""
    kept, dropped = [], []
    for row in rows:
        if row.contamination > 0 and row.contamination >= drop_threshold:
            dropped.append(row)
            continue
        weight = 1.0 - row.contamination if row.contamination >= downweight_threshold and row.contamination > 0 else 1.0
        kept.append(row.model_copy(update={"weight": round(weight, 6)}))
    return kept, dropped


def select(graph: nx.DiGraph, rows: list[LineageRow], cfg, seed: int) -> tuple[list[str], dict[str, Any]]:
    """The sample under ``lineage.sampling``, with its metrics next to a uniform sample of the same size."""
    s = cfg.sampling
    ids = [r.item_id for r in rows]
    texts = {r.item_id: r.text for r in rows}
    pairs = [{"a": r.item_id, "b": p["id"], "kind": p["kind"]} for r in rows for p in r.redundant_with]
    info: dict[str, Any] = {"method": s.method, "budget": s.budget,
                            "shape": {"breadth": s.breadth, "depth": s.depth, "granularity": s.granularity}}
    weights = dict(cfg.edges.edge_weights)
    if s.method == "farthest_point":
        chosen = farthest_point(graph, ids, s.budget, seed, weights, s.disconnected)
    elif s.method == "root_anchored":
        chosen = root_anchored(graph, ids, s.breadth, s.depth, s.granularity, seed)
    elif s.method == "adaptive":
        scores = {r.item_id: r.score * r.weight for r in rows if r.score is not None}
        chosen, trace = adaptive(graph, ids, scores, s.budget, s.rounds, seed, s.exploration)
        info["adaptive"] = trace
    else:
        chosen = uniform(ids, s.budget, seed)
    baseline = uniform(ids, len(chosen), seed)
    scores = {r.item_id: r.score for r in rows if r.score is not None}
    info["selected"] = selection_metrics(graph, chosen, texts, pairs, s.embedding, scores)
    info["uniform_same_size"] = selection_metrics(graph, baseline, texts, pairs, s.embedding, scores)
    return chosen, info
