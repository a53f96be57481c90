"""Choosing a subset of items under a budget, guided by the lineage graph. Deterministic given ``seed``.

- ``farthest_point``: greedy farthest-point sampling in lineage distance (shortest path over the
  undirected graph, each edge costing its type's weight; unrelated items are ``disconnected``
  apart). It reaches every family before it takes a second item from any.
- ``root_anchored``: budget B = c x l x k: k roots (root granularity), breadth-first from each
  down l layers (refinement depth), at most c items per layer spread over the root's branches
  (lineage breadth). A corpus too small for the shape yields fewer than B items; the shortfall is
  reported, not padded.
- ``adaptive``: an upper-confidence-bound loop over the (c, l, k) factorisations of B. Each round
  draws a root-anchored sample for one arm and scores it by the proxy scores of its items; the
  final sample uses the arm with the best mean reward.
- ``uniform``: the baseline, a uniform random subset.
"""
from __future__ import annotations

import math

import networkx as nx
import numpy as np

DEFAULT_EDGE_WEIGHTS = {"refine": 0.25, "derive": 1.0, "merge": 1.0, "diverge": 1.5}


def distance_graph(graph: nx.DiGraph, edge_weights: dict[str, float]) -> nx.Graph:
    undirected = nx.Graph()
    undirected.add_nodes_from(graph.nodes)
    for u, v, data in graph.edges(data=True):
        undirected.add_edge(u, v, weight=edge_weights.get(data.get("type", "derive"), 1.0))
    return undirected


def uniform(candidates: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    pool = sorted(candidates)
    return sorted(pool[i] for i in rng.choice(len(pool), size=min(n, len(pool)), replace=False))


def farthest_point(graph: nx.DiGraph, candidates: list[str], n: int, seed: int,
                   edge_weights: dict[str, float] | None = None, disconnected: float = 6.0) -> list[str]:
    pool = sorted(candidates)
    if not pool or n <= 0:
        return []
    undirected = distance_graph(graph, edge_weights or DEFAULT_EDGE_WEIGHTS)
    rng = np.random.default_rng(seed)
    tiebreak = rng.permutation(len(pool)).astype(np.float64) / (10 * len(pool))  # < any edge weight
    where = {c: i for i, c in enumerate(pool)}
    nearest = np.full(len(pool), np.inf)
    chosen = np.zeros(len(pool), dtype=bool)
    picked: list[str] = []
    current = int(rng.integers(len(pool)))
    while len(picked) < min(n, len(pool)):
        picked.append(pool[current])
        chosen[current] = True
        np.minimum(nearest, disconnected, out=nearest)
        for node, d in nx.single_source_dijkstra_path_length(undirected, pool[current], cutoff=disconnected,
                                                              weight="weight").items():
            i = where.get(node)
            if i is not None and d < nearest[i]:
                nearest[i] = d
        score = np.where(chosen, -np.inf, nearest + tiebreak)
        current = int(np.argmax(score))
    return sorted(picked)


def _children(graph: nx.DiGraph, node: str, rng: np.random.Generator) -> list[str]:
    kids = sorted(graph.successors(node))
    return [kids[i] for i in rng.permutation(len(kids))]


def root_anchored(graph: nx.DiGraph, candidates: list[str], c: int, l: int, k: int, seed: int) -> list[str]:
    """k roots; from each, breadth-first down l layers that hold candidates, at most c items per layer.

    Roots are nodes without parents (provenance nodes count: in a release, the repositories).
    Within a layer the c items are spread round-robin over the root's branches (the root's
    children that lead to them), so breadth means branches, not siblings of one branch. Layers
    without candidates (seed-program nodes between a repository and its environments) are walked
    through without counting.
    """
    pool = set(candidates)
    rng = np.random.default_rng(seed)
    roots = sorted(n for n in graph.nodes if graph.in_degree(n) == 0)
    roots = [roots[i] for i in rng.permutation(len(roots))]
    picked: list[str] = []
    taken: set[str] = set()
    for root in roots[:k]:
        branch_of = {root: root}
        layer, seen, counted = [root], {root}, 0
        while layer and counted < l:
            eligible = [n for n in layer if n in pool and n not in taken]
            if eligible:
                by_branch: dict[str, list[str]] = {}
                for node in eligible:
                    by_branch.setdefault(branch_of[node], []).append(node)
                queues = [[group[i] for i in rng.permutation(len(group))] for _, group in sorted(by_branch.items())]
                queues = [queues[i] for i in rng.permutation(len(queues))]
                chosen = []
                while len(chosen) < c and any(queues):
                    for queue in queues:
                        if queue and len(chosen) < c:
                            chosen.append(queue.pop(0))
                taken.update(chosen)
                picked.extend(chosen)
                counted += 1
            following = []
            for node in layer:
                for kid in sorted(graph.successors(node)):
                    if kid not in seen:
                        seen.add(kid)
                        branch_of[kid] = kid if node == root else branch_of[node]
                        following.append(kid)
            layer = following
    return sorted(picked)


def factorisations(budget: int) -> list[tuple[int, int, int]]:
    return [(c, l, budget // (c * l)) for c in range(1, budget + 1) if budget % c == 0
            for l in range(1, budget // c + 1) if (budget // c) % l == 0]


def adaptive(graph: nx.DiGraph, candidates: list[str], scores: dict[str, float], budget: int, rounds: int,
             seed: int, exploration: float = 1.0, max_depth: int | None = None) -> tuple[list[str], dict]:
    """UCB1 over (c, l, k) arms. A draw's reward is the summed proxy score of its items divided by the
    budget, so an arm the corpus cannot fill (too deep, too many branches) pays for its shortfall."""
    arms = [a for a in factorisations(budget) if max_depth is None or a[1] <= max_depth]
    rng = np.random.default_rng(seed)
    arms = [arms[i] for i in rng.permutation(len(arms))]
    pulls = np.zeros(len(arms))
    totals = np.zeros(len(arms))
    history = []
    for t in range(1, rounds + 1):
        if (pulls == 0).any():
            arm = int(np.flatnonzero(pulls == 0)[0])
        else:
            bonus = exploration * np.sqrt(math.log(t) / pulls)
            arm = int(np.argmax(totals / pulls + bonus))
        sample = root_anchored(graph, candidates, *arms[arm], seed=seed * 1_000_003 + t)
        scored = [scores[i] for i in sample if i in scores]
        reward = float(np.sum(scored)) / budget
        pulls[arm] += 1
        totals[arm] += reward
        history.append({"round": t, "arm": list(arms[arm]), "reward": round(reward, 6), "items": len(sample)})
    means = np.divide(totals, pulls, out=np.full(len(arms), -np.inf), where=pulls > 0)
    best = arms[int(np.argmax(means))]
    return root_anchored(graph, candidates, *best, seed=seed), {"arm": list(best), "rounds": history}
