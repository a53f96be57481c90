"""Redundancy: pairs that add little to each other, scored R(i, j) = alpha*sim(outputs) + beta*path_overlap.

Two kinds are flagged:

- ``convergent``: different paths, same result. Outputs at least ``min_output_similarity`` alike
  while the lineage paths barely overlap (``path_overlap`` at most ``convergent_max_path_overlap``);
- ``lineage_duplicate``: the same result reached along a shared path (R at least ``threshold``).

Along refinement chains, a step that adds less than ``min_novelty`` of new text (share of the
child's shingles absent from its parent) is ``diminishing``. path_overlap is the Jaccard of the two
items' ancestor sets, each including the item itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .signals import (
    LSHIndex, band_keys, containment, jaccard, minhash_permutations, minhash_signatures, shingle_sequence,
    shingle_set, words,
)


@dataclass(frozen=True)
class RedundancySettings:
    alpha: float = 0.7
    beta: float = 0.3
    min_output_similarity: float = 0.6
    threshold: float = 0.7
    convergent_max_path_overlap: float = 0.2
    min_novelty: float = 0.1
    num_perm: int = 64
    bands: int = 32


def path_overlap(ancestry: dict[str, set[str]], a: str, b: str) -> float:
    left, right = ancestry[a] | {a}, ancestry[b] | {b}
    return len(left & right) / len(left | right)


def ancestry_sets(graph: nx.DiGraph) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for node in nx.topological_sort(graph):
        acc: set[str] = set()
        for parent in graph.predecessors(node):
            acc |= out[parent] | {parent}
        out[node] = acc
    return out


def redundant_pairs(graph: nx.DiGraph, outputs: dict[str, str], settings: RedundancySettings,
                    ancestry: dict[str, set[str]] | None = None) -> list[dict]:
    """Flagged pairs ``{a, b, kind, score, output_similarity, path_overlap}``, ``b`` the later item."""
    ancestry = ancestry if ancestry is not None else ancestry_sets(graph)
    ids = [i for i in outputs if outputs[i].strip()]
    sets = [shingle_set(shingle_sequence(words(outputs[i]), 3)) for i in ids]
    salts, multipliers = minhash_permutations(settings.num_perm, seed=7)
    keys = band_keys(minhash_signatures(sets, salts, multipliers), settings.bands)
    index = LSHIndex(settings.bands)
    flagged = []
    for position, item in enumerate(ids):
        for other in sorted(index.query_then_insert(position, keys[position])):
            similarity = jaccard(sets[other], sets[position])
            if similarity < settings.min_output_similarity:
                continue
            overlap = path_overlap(ancestry, ids[other], item)
            score = settings.alpha * similarity + settings.beta * overlap
            if overlap <= settings.convergent_max_path_overlap:
                kind = "convergent"
            elif score >= settings.threshold:
                kind = "lineage_duplicate"
            else:
                continue
            flagged.append({"a": ids[other], "b": item, "kind": kind, "score": round(score, 4),
                            "output_similarity": round(similarity, 4), "path_overlap": round(overlap, 4)})
    return flagged


def diminishing_refinements(graph: nx.DiGraph, texts: dict[str, str], settings: RedundancySettings) -> dict[str, float]:
    """Children of ``refine`` edges whose new content is below ``min_novelty``: child -> novelty."""
    out = {}
    cache: dict[str, np.ndarray] = {}

    def shingles(node: str) -> np.ndarray:
        if node not in cache:
            cache[node] = shingle_set(shingle_sequence(words(texts.get(node, "")), 3))
        return cache[node]

    for parent, child, data in graph.edges(data=True):
        if data.get("type") != "refine" or child not in texts or parent not in texts:
            continue
        novelty = 1.0 - containment(shingles(child), shingles(parent))
        if novelty < settings.min_novelty:
            out[child] = round(novelty, 4)
    return out
