"""The lineage graph: which item was made from which, and how.

Nodes are lineage items plus the provenance nodes trailforge knows of (repositories and seed
programs). Edges point from parent to child and carry a type:

- ``refine``: the child is the parent with small edits (text similarity at least
  ``refine_similarity``);
- ``derive``: the child carries over the later part of the parent (its results) and adds new
  work; trailforge's own derivations (repository -> seed program -> environment) are exact
  ``derive`` edges;
- ``diverge``: the child keeps the parent's opening (its question, its setup) and then departs;
- ``merge``: the child combines two or more parents, each contributing content the other lacks.

Signals, strongest first: explicit parent ids, recorded provenance, textual back-references to a
known id, then content similarity. Content candidates come from MinHash LSH over word shingles
(and normalised-AST shingles for code) and are confirmed with exact Jaccard on the shingle sets.
Time (or insertion order) decides direction: a parent always precedes its child. Insertion is
incremental: a batch costs its size times the candidates it meets in the LSH buckets.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx
import numpy as np

from .items import LineageItem
from .signals import (
    LSHIndex, band_keys, code_tokens, jaccard, minhash_permutations, minhash_signatures,
    shingle_sequence, shingle_set, words,
)

EDGE_TYPES = ("derive", "refine", "merge", "diverge")
_ID_TOKEN = re.compile(r"[\w.:#/@-]+")


@dataclass(frozen=True)
class EdgeSettings:
    shingle: int = 3
    num_perm: int = 128
    bands: int = 64
    max_bucket: int = 200
    min_similarity: float = 0.15
    min_containment: float = 0.3
    refine_similarity: float = 0.42
    merge_min_gain: float = 0.15
    diverge_max_position: float = 0.5
    code_weight: float = 0.5
    max_parents: int = 3
    infer_when_parents_known: bool = False
    back_references: bool = True


@dataclass(frozen=True)
class ItemSignals:
    """What content similarity needs of one item; computed from that item alone, so anywhere."""
    text_seq: np.ndarray
    text_set: np.ndarray
    code_set: np.ndarray
    text_keys: np.ndarray
    code_keys: np.ndarray


def item_signals(items: list[LineageItem], settings: EdgeSettings) -> list[ItemSignals]:
    """Shingles, shingle sets and LSH band keys of each item (the per-item part of building the graph).

    Pure and deterministic (the MinHash permutations come from a fixed seed), so a stage can compute
    it in chunks on any executor and hand the results to ``LineageGraph.add_batch``.
    """
    s = settings
    salts, multipliers = minhash_permutations(s.num_perm)
    text_seqs = [shingle_sequence(words(i.text), s.shingle) for i in items]
    text_sets = [shingle_set(q) for q in text_seqs]
    code_sets = [shingle_set(shingle_sequence(code_tokens(i.code), s.shingle * 2)) if i.code else
                 np.zeros(0, dtype=np.uint64) for i in items]
    text_keys = band_keys(minhash_signatures(text_sets, salts, multipliers), s.bands)
    code_keys = band_keys(minhash_signatures(code_sets, salts, multipliers), s.bands)
    return [ItemSignals(text_seqs[n], text_sets[n], code_sets[n], text_keys[n], code_keys[n])
            for n in range(len(items))]


@dataclass
class _Entry:
    item: LineageItem
    order: int
    text_seq: np.ndarray
    text_set: np.ndarray
    code_set: np.ndarray
    mentions: frozenset[str] = frozenset()


@dataclass
class BuildStats:
    items: int = 0
    candidates_checked: int = 0
    bucket_truncations: int = 0
    unknown_parents: int = 0
    duplicate_ids: int = 0
    edges_by_signal: dict[str, int] = field(default_factory=dict)


class LineageGraph:
    """Incrementally built lineage graph over items; ``add_batch`` may be called any number of times."""

    def __init__(self, settings: EdgeSettings | None = None):
        self.settings = settings or EdgeSettings()
        s = self.settings
        self.graph = nx.DiGraph()
        self.entries: dict[str, _Entry] = {}
        self.stats = BuildStats()
        self._text_index = LSHIndex(s.bands, s.max_bucket)
        self._code_index = LSHIndex(s.bands, s.max_bucket)
        self._ids: list[str] = []

    # -- building ------------------------------------------------------------------------------

    def add_batch(self, items: Iterable[LineageItem], signals: list[ItemSignals] | None = None) -> list[str]:
        """Insert items (sorted by time, then given order) and infer their parent edges; returns ids added.

        ``signals``, when given, are ``item_signals(items)`` computed elsewhere (one per item, same order).
        """
        items = list(items)
        if signals is not None and len(signals) != len(items):
            raise ValueError(f"add_batch: {len(signals)} signals for {len(items)} items")
        batch, batch_signals = [], {}
        for position, item in enumerate(items):
            if item.item_id in self.entries or self.graph.has_node(item.item_id) or item.item_id in batch_signals:
                self.stats.duplicate_ids += 1
                continue
            batch.append(item)
            batch_signals[item.item_id] = signals[position] if signals is not None else None
        batch = _parents_first([item for _, item in sorted(enumerate(batch), key=lambda p: (
            p[1].time if p[1].time is not None else float("-inf"), p[0]))])
        if signals is None:
            batch_signals = dict(zip((i.item_id for i in batch), item_signals(batch, self.settings)))
        for item in batch:
            sig = batch_signals[item.item_id]
            entry = _Entry(item, len(self._ids), sig.text_seq, sig.text_set, sig.code_set, self._mentions(item))
            self._ids.append(item.item_id)
            self.entries[item.item_id] = entry
            self.graph.add_node(item.item_id, kind=item.kind, time=item.time)
            found = set()
            if len(entry.text_set):
                found |= self._text_index.query_then_insert(entry.order, sig.text_keys)
            if len(entry.code_set):
                found |= self._code_index.query_then_insert(entry.order, sig.code_keys)
            self._link(entry, sorted(found))
        self.stats.items = len(self.entries)
        self.stats.bucket_truncations = self._text_index.truncated + self._code_index.truncated
        return [i.item_id for i in batch]

    def _count(self, signal: str) -> None:
        self.stats.edges_by_signal[signal] = self.stats.edges_by_signal.get(signal, 0) + 1

    def _add_edge(self, parent: str, child: str, kind: str, signal: str, weight: float, **signals: Any) -> None:
        if self.graph.has_edge(parent, child):
            return
        self.graph.add_edge(parent, child, type=kind, signal=signal, weight=round(float(weight), 4),
                            exact=signal in ("explicit", "provenance", "back_reference"),
                            **{k: round(float(v), 4) for k, v in signals.items()})
        self._count(signal)

    def _provenance(self, entry: _Entry) -> bool:
        """Exact edges repository -> seed program -> item from what trailforge recorded."""
        prov = entry.item.provenance
        repo, seed = prov.get("repo_id"), prov.get("seed_id")
        parent = None
        if repo:
            parent = f"repo:{repo}"
            self.graph.add_node(parent, kind="repository", time=None)
        if seed:
            seed_node = f"seed:{seed}"
            self.graph.add_node(seed_node, kind="seed_program", time=None)
            if parent:
                self._add_edge(parent, seed_node, "derive", "provenance", 1.0)
            parent = seed_node
        if parent is None:
            return False
        extra = {"via": prov["mutation"]} if prov.get("mutation") else {}
        self._add_edge(parent, entry.item.item_id, "derive", "provenance", 1.0)
        if extra:
            self.graph.edges[parent, entry.item.item_id].update(extra)
        return True

    def _earlier(self, candidate: _Entry, entry: _Entry) -> bool:
        a, b = candidate.item.time, entry.item.time
        if a is not None and b is not None and a != b:
            return a < b
        return candidate.order < entry.order

    def _similarity(self, candidate: _Entry, entry: _Entry,
                    shared: int | None = None) -> tuple[float, float, float | None]:
        """(combined, text Jaccard, code Jaccard or None); ``shared`` is the text overlap when already counted."""
        if shared is None:
            text_j = jaccard(candidate.text_set, entry.text_set)
        else:
            union = len(candidate.text_set) + len(entry.text_set) - shared
            text_j = shared / union if len(candidate.text_set) and len(entry.text_set) else 0.0
        if len(candidate.code_set) and len(entry.code_set):
            code_j = jaccard(candidate.code_set, entry.code_set)
            w = self.settings.code_weight
            return (1 - w) * text_j + w * code_j, text_j, code_j
        return text_j, text_j, None

    def _classify(self, parent: _Entry, entry: _Entry, text_j: float) -> str:
        if text_j >= self.settings.refine_similarity:
            return "refine"
        carried = np.isin(parent.text_seq, entry.text_set)
        if not carried.any():
            return "derive"
        where = float(np.flatnonzero(carried).mean()) / max(1, len(parent.text_seq) - 1)
        return "diverge" if where < self.settings.diverge_max_position else "derive"

    def _mentions(self, item: LineageItem) -> frozenset[str]:
        if not self.settings.back_references:
            return frozenset()
        named = {t.strip(".,;:)") for t in _ID_TOKEN.findall(item.text)}
        return frozenset(t for t in named if t != item.item_id and t in self.entries)

    def _back_references(self, entry: _Entry, similar: list[_Entry]) -> list[str]:
        """Ids the text names, minus those it may have inherited by copying a text that already named them."""
        inherited: set[str] = set()
        for candidate in similar:
            inherited |= candidate.mentions
        for name in entry.mentions:
            inherited |= self.entries[name].mentions
        return sorted(entry.mentions - inherited - set(entry.item.parents))

    def _scored_candidates(self, entry: _Entry, found: list[int]) -> list[tuple]:
        s = self.settings
        scored = []
        for order in found:
            candidate = self.entries[self._ids[order]]
            if not self._earlier(candidate, entry):
                continue
            self.stats.candidates_checked += 1
            # One intersection per candidate gives Jaccard, containment and the overlap the ranking uses.
            shared = len(np.intersect1d(candidate.text_set, entry.text_set, assume_unique=True))
            sim, text_j, code_j = self._similarity(candidate, entry, shared)
            carried = shared / len(candidate.text_set) if len(candidate.text_set) else 0.0
            if sim < s.min_similarity and carried < s.min_containment:
                continue
            scored.append((shared, sim, candidate.order, candidate, text_j, code_j))
        scored.sort(key=lambda t: (-t[0], -t[1], -t[2]))
        return scored

    def _link(self, entry: _Entry, found: list[int]) -> None:
        s = self.settings
        scored = self._scored_candidates(entry, found)
        known = []
        references = [(p, "explicit") for p in entry.item.parents]
        references += [(p, "back_reference") for p in self._back_references(entry, [c[3] for c in scored])]
        for parent_id, signal in references:
            if parent_id not in self.entries and not self.graph.has_node(parent_id):
                self.stats.unknown_parents += 1
                continue
            known.append((parent_id, signal))
        has_provenance = self._provenance(entry)
        if known:
            kinds = "merge" if len(known) > 1 else None
            for parent_id, signal in known:
                parent = self.entries.get(parent_id)
                if parent is None:
                    self._add_edge(parent_id, entry.item.item_id, kinds or "derive", signal, 1.0)
                    continue
                sim, text_j, _ = self._similarity(parent, entry)
                kind = kinds or self._classify(parent, entry, text_j)
                self._add_edge(parent_id, entry.item.item_id, kind, signal, 1.0, similarity=sim)
        explicit = any(signal == "explicit" for _, signal in known)
        if (explicit or has_provenance) and not s.infer_when_parents_known:
            return
        # A back-reference names one parent; the text may still merge in another, so keep looking.
        named = [self.entries[p] for p, _ in known if p in self.entries]
        if named:
            first = next((c for c in scored if c[3] is named[0]), None)
            if first is None:
                return
            scored = [first] + [c for c in scored if c[3] not in named]
        if not scored:
            return
        first = scored[0]
        parents = [first]
        explained = np.intersect1d(first[3].text_set, entry.text_set, assume_unique=True)
        size = max(1, len(entry.text_set))
        for other in scored[1:]:
            if len(parents) >= s.max_parents:
                break
            fresh = np.setdiff1d(np.intersect1d(other[3].text_set, entry.text_set, assume_unique=True),
                                 explained, assume_unique=True)
            if len(fresh) / size >= s.merge_min_gain and other[1] >= s.min_similarity:
                parents.append(other)
                explained = np.union1d(explained, fresh)
        if named and len(parents) == 1:
            return  # the back-reference edge already stands for this parent
        for shared, sim, _, parent, text_j, code_j in parents:
            kind = "merge" if len(parents) > 1 else self._classify(parent, entry, text_j)
            signals = {"similarity": sim, "text_jaccard": text_j}
            if code_j is not None:
                signals["code_jaccard"] = code_j
            if self.graph.has_edge(parent.item.item_id, entry.item.item_id):
                self.graph.edges[parent.item.item_id, entry.item.item_id]["type"] = kind
                continue
            self._add_edge(parent.item.item_id, entry.item.item_id, kind, "content", sim, **signals)

    # -- reading -------------------------------------------------------------------------------

    def item_ids(self) -> list[str]:
        return list(self._ids)

    def roots(self) -> list[str]:
        return sorted(n for n in self.graph.nodes if self.graph.in_degree(n) == 0)

    def node_link(self) -> dict[str, Any]:
        return nx.node_link_data(self.graph, edges="edges")


def _parents_first(batch: list[LineageItem]) -> list[LineageItem]:
    """Keep the given order, except that an explicit parent in the same batch moves before its child."""
    by_id = {item.item_id: item for item in batch}
    placed: set[str] = set()
    out: list[LineageItem] = []

    def place(item: LineageItem, visiting: set[str]) -> None:
        if item.item_id in placed or item.item_id in visiting:
            return  # a cycle of explicit parents: keep the given order, the edge is counted as unknown
        visiting.add(item.item_id)
        for parent in item.parents:
            if parent in by_id:
                place(by_id[parent], visiting)
        placed.add(item.item_id)
        out.append(item)

    for item in batch:
        place(item, set())
    return out


def lineage_roots(graph: nx.DiGraph) -> dict[str, tuple[str, ...]]:
    """For every node, the roots (nodes without parents) it descends from; a root maps to itself."""
    out: dict[str, tuple[str, ...]] = {}
    for node in nx.topological_sort(graph):
        parents = list(graph.predecessors(node))
        out[node] = (node,) if not parents else tuple(sorted({r for p in parents for r in out[p]}))
    return out


def lineage_branches(graph: nx.DiGraph) -> dict[str, tuple[tuple[str, str], ...]]:
    """For every node, the branches it sits on: (root, the root's child that leads to it)."""
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for node in nx.topological_sort(graph):
        parents = list(graph.predecessors(node))
        if not parents:
            out[node] = ((node, node),)
            continue
        found = set()
        for p in parents:
            for root, child in out[p]:
                found.add((root, node) if root == child == p else (root, child))
        out[node] = tuple(sorted(found))
    return out
