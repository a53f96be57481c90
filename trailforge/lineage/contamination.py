"""Contamination: find items that match benchmark material or failed evaluation, then follow the graph.

A seed of contamination is an item (or a provenance node's item) that

- shares at least ``min_ngram_hits`` word ``ngram``-grams with a benchmark text, or
- is a near duplicate of one (Jaccard of word-shingle sets at least ``near_duplicate``), or
- failed its evaluation (``passed`` is false), when ``failed_evaluation`` is on.

Labels travel forward along parent -> child edges with weight ``decay ** hops`` (and, when
``backward`` is on, to ancestors with ``backward_decay ** hops``). Each item keeps the largest
weight that reaches it and the path that explains it, seed first.
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from .items import LineageItem
from .signals import jaccard, shingle_sequence, shingle_set, words

TEXT_SUFFIXES = {".txt", ".md", ".py", ".json", ".jsonl", ".csv", ".tex", ".rst", ".yaml", ".yml"}


@dataclass(frozen=True)
class ContaminationSettings:
    ngram: int = 8
    min_ngram_hits: int = 3
    near_duplicate: float = 0.5
    failed_evaluation: bool = True
    decay: float = 0.5
    backward: bool = False
    backward_decay: float = 0.25


@dataclass
class Label:
    weight: float
    source: str
    reason: str
    path: list[str]


def benchmark_texts(paths: list[str | Path]) -> dict[str, str]:
    """Benchmark material by name: text files, JSONL files (one document per line), or whole folders."""
    texts: dict[str, str] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"lineage.contamination.benchmarks: {path} does not exist")
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.suffix.lower() not in TEXT_SUFFIXES:
                continue
            content = file.read_text(encoding="utf-8", errors="replace")
            if file.suffix.lower() == ".jsonl":
                for number, line in enumerate(content.splitlines(), 1):
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError:
                        record = line
                    text = " ".join(str(v) for v in record.values()) if isinstance(record, dict) else str(record)
                    texts[f"{file}:{number}"] = text
            else:
                texts[str(file)] = content
    return texts


class BenchmarkIndex:
    """Word n-grams and shingle sets of benchmark texts, for overlap and near-duplicate checks."""

    def __init__(self, texts: dict[str, str], settings: ContaminationSettings):
        self.settings = settings
        self.ngram_owner: dict[int, str] = {}
        self.shingles: dict[str, np.ndarray] = {}
        for name, text in sorted(texts.items()):
            tokens = words(text)
            for h in shingle_set(shingle_sequence(tokens, settings.ngram)).tolist() if len(tokens) >= settings.ngram else []:
                self.ngram_owner.setdefault(h, name)
            self.shingles[name] = shingle_set(shingle_sequence(tokens, 3))

    def match(self, text: str) -> tuple[str, str, dict] | None:
        """``(benchmark, reason, detail)`` for a contaminated text, else None."""
        tokens = words(text)
        s = self.settings
        if len(tokens) >= s.ngram:
            hits: dict[str, int] = {}
            for h in shingle_set(shingle_sequence(tokens, s.ngram)).tolist():
                owner = self.ngram_owner.get(h)
                if owner is not None:
                    hits[owner] = hits.get(owner, 0) + 1
            if hits:
                owner, count = max(sorted(hits.items()), key=lambda kv: kv[1])
                if count >= s.min_ngram_hits:
                    return owner, "benchmark_ngram", {"shared_ngrams": count, "n": s.ngram}
        own = shingle_set(shingle_sequence(tokens, 3))
        for name, shingles in self.shingles.items():
            similarity = jaccard(own, shingles)
            if similarity >= s.near_duplicate:
                return name, "benchmark_near_duplicate", {"jaccard": round(similarity, 4)}
        return None


def benchmark_matches(texts: list[str], index: BenchmarkIndex) -> list[tuple[str, str, dict] | None]:
    """``index.match`` of each text: the per-item part of finding seeds, which a stage may run in chunks."""
    return [index.match(text) for text in texts]


def seed_text(item: LineageItem) -> str:
    return f"{item.text}\n{item.code}"


def contamination_seeds(items: list[LineageItem], index: BenchmarkIndex | None, settings: ContaminationSettings,
                        matches: list | None = None) -> dict[str, tuple[str, str, dict]]:
    """item id -> (what it matched, reason, detail) for every seed of contamination.

    ``matches``, when given, is ``benchmark_matches`` of the items' ``seed_text`` computed elsewhere.
    """
    if matches is None:
        matches = benchmark_matches([seed_text(i) for i in items], index) if index is not None else [None] * len(items)
    seeds = {}
    for item, found in zip(items, matches):
        if found is not None:
            seeds[item.item_id] = found
        elif settings.failed_evaluation and item.passed is False:
            seeds[item.item_id] = ("evaluation", "failed_evaluation", {})
    return seeds


def _spread(graph: nx.DiGraph, seeds: dict[str, tuple[str, str, dict]], neighbours, decay: float) -> dict[str, Label]:
    labels: dict[str, Label] = {}
    heap: list[tuple[float, str, str, str, tuple[str, ...]]] = []
    for node, (source, reason, _) in sorted(seeds.items()):
        heapq.heappush(heap, (-1.0, node, source, reason, (node,)))
    while heap:
        negative, node, source, reason, path = heapq.heappop(heap)
        if node in labels:
            continue
        weight = -negative
        labels[node] = Label(weight, source, reason, list(path))
        for nxt in sorted(neighbours(node)):
            if nxt not in labels and weight * decay > 0:  # no floor: a descendant 30 hops down is still one
                heapq.heappush(heap, (-(weight * decay), nxt, source, reason, path + (nxt,)))
    return labels


def propagate(graph: nx.DiGraph, seeds: dict[str, tuple[str, str, dict]],
              settings: ContaminationSettings) -> dict[str, Label]:
    """Largest decayed weight reaching each node from any seed, with the path that carries it.

    Forward and backward spreads are separate walks: going up to an ancestor never comes back
    down to that ancestor's other descendants.
    """
    labels = _spread(graph, seeds, graph.successors, settings.decay)
    if settings.backward:
        for node, label in _spread(graph, seeds, graph.predecessors, settings.backward_decay).items():
            if node not in labels or label.weight > labels[node].weight:
                labels[node] = label
    return labels
