"""How good a selection is: redundancy, lineage diversity, embedding diversity, coverage."""
from __future__ import annotations

import networkx as nx

from .diversity import centroid_distance, embed_texts, vendi_score
from .graph import lineage_branches, lineage_roots


def selection_metrics(graph: nx.DiGraph, selected: list[str], texts: dict[str, str], pairs: list[dict],
                      embedding: str = "hashing", scores: dict[str, float] | None = None) -> dict:
    chosen = set(selected)
    roots, branches = lineage_roots(graph), lineage_branches(graph)
    all_roots = {r for i in texts for r in roots.get(i, ())}
    redundant = set()
    for pair in pairs:
        if pair["a"] in chosen and pair["b"] in chosen:
            redundant.update((pair["a"], pair["b"]))
    covered_roots = {r for i in chosen for r in roots.get(i, ())}
    covered_branches = {b for i in chosen for b in branches.get(i, ())}
    families = list(nx.weakly_connected_components(graph.subgraph(set(graph.nodes))))
    family_of = {n: f for f, members in enumerate(families) for n in members}
    item_families = {family_of[i] for i in texts if i in family_of}
    embeddings = embed_texts([texts[i] for i in sorted(chosen)], embedding) if chosen else None
    scored = [scores[i] for i in chosen if scores and i in scores]
    return {
        "items": len(chosen),
        **({"mean_score": round(sum(scored) / len(scored), 4)} if scored else {}),
        "redundancy_rate": round(len(redundant) / len(chosen), 4) if chosen else 0.0,
        "roots_covered": len(covered_roots),
        "branches_covered": len(covered_branches),
        "root_coverage": round(len(covered_roots) / len(all_roots), 4) if all_roots else 0.0,
        "family_coverage": round(len({family_of[i] for i in chosen if i in family_of}) / len(item_families), 4)
        if item_families else 0.0,
        "vendi": round(vendi_score(embeddings), 4) if chosen else 0.0,
        "centroid_distance": round(centroid_distance(embeddings), 4) if chosen else 0.0,
    }
