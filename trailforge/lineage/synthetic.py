"""Synthetic corpora with planted lineage, to measure how well the graph recovers it.

Families grow by the four operations the graph infers, with noise on every copy:

- refine: the parent with a few words substituted, inserted or deleted;
- derive: the later part of the parent (its results) followed by new work;
- diverge: the opening of the parent (its question, its setup) followed by a new direction;
- merge: a part of one parent and a part of another (often from another family).

Families grow interleaved in time, so neighbours in time are rarely relatives. Some children
name their parent explicitly (``parents``) or in the text; most do not. Outputs follow the
same ops (a refinement keeps its parent's result), and a few items copy another family's result:
the planted "different path, same result" pairs. Items carry a proxy score that depends on the
family and the depth, for the evaluation-driven sampler. Everything follows from ``seed``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .items import LineageItem

FUNCTION_WORDS = ("the of and to in a is that for on with as by we this are from at be an or which was it "
                  "these our were not can using than their into between its has been both more under two "
                  "such also each when over after").split()
OPERATIONS = ("refine", "derive", "diverge", "merge")


@dataclass
class PlantedCorpus:
    items: list[LineageItem]
    edges: set[tuple[str, str, str]]          # (parent, child, type)
    family: dict[str, int]                    # item -> family it was rooted in
    convergent_pairs: set[tuple[str, str]] = field(default_factory=set)
    depth: dict[str, int] = field(default_factory=dict)


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["qu", "th", "st", "ch", "sh"]
    seen, out = set(), []
    while len(out) < size:
        word = "".join(rng.choice(syllables, size=int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def planted_corpus(n_items: int, seed: int = 0, mean_family_size: float = 8.0, explicit_rate: float = 0.15,
                   back_reference_rate: float = 0.1, noise: float = 0.04, convergent_rate: float = 0.02,
                   op_weights: tuple[float, float, float, float] = (0.35, 0.25, 0.2, 0.2)) -> PlantedCorpus:
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng, 40_000)
    n_families = max(1, int(round(n_items / mean_family_size)))
    family_sizes = np.maximum(1, rng.geometric(1.0 / mean_family_size, size=n_families))
    while family_sizes.sum() < n_items:  # the schedule below must be long enough for n_items
        family_sizes[int(rng.integers(n_families))] += 1
    topics = [rng.choice(len(vocab), size=300, replace=False) for _ in range(n_families)]
    weights = np.asarray(op_weights) / sum(op_weights)

    def fresh(family: int, length: int) -> list[str]:
        topical = rng.random(length) > 0.3
        picks = rng.choice(topics[family], size=length)
        return [vocab[p] if t else FUNCTION_WORDS[rng.integers(len(FUNCTION_WORDS))] for p, t in zip(picks, topical)]

    def noisy(tokens: list[str], family: int, rate: float) -> list[str]:
        out = []
        for token in tokens:
            r = rng.random()
            if r < rate / 2:
                out.append(fresh(family, 1)[0])          # substitution
            elif r < rate * 0.75:
                continue                                  # deletion
            elif r < rate:
                out.extend([token, fresh(family, 1)[0]])  # insertion
            else:
                out.append(token)
        return out

    def window(tokens: list[str], share: float, where: str) -> list[str]:
        size = max(3, int(len(tokens) * share))
        if where == "head":
            return tokens[:size]
        if where == "tail":
            return tokens[-size:]
        start = int(rng.integers(0, max(1, len(tokens) - size + 1)))
        return tokens[start:start + size]

    items: list[LineageItem] = []
    tokens_of: dict[str, list[str]] = {}
    outputs_of: dict[str, list[str]] = {}
    members: list[list[str]] = [[] for _ in range(n_families)]
    edges: set[tuple[str, str, str]] = set()
    family_of: dict[str, int] = {}
    depth: dict[str, int] = {}
    ancestors: dict[str, set[str]] = {}
    started: list[int] = []
    convergent: set[tuple[str, str]] = set()
    quality = rng.uniform(0.2, 0.9, size=n_families)
    schedule = np.repeat(np.arange(n_families), family_sizes)
    rng.shuffle(schedule)
    # a family's root must come first: its first appearance in the schedule is the root
    for step, family in enumerate(schedule[:n_items]):
        family = int(family)
        item_id = f"T{step:06d}"
        parents: list[tuple[str, str]] = []
        if not members[family]:
            started.append(family)
            text = fresh(family, int(rng.integers(60, 140)))
            result = fresh(family, 30)
            depth[item_id] = 0
        else:
            pool = members[family]
            parent = pool[-1 - int(min(len(pool) - 1, rng.geometric(0.5) - 1))]  # recent members more often
            op = OPERATIONS[int(rng.choice(4, p=weights))]
            base = tokens_of[parent]
            if op == "refine":
                text = noisy(base, family, 0.1)
                result = noisy(outputs_of[parent], family, noise)
            elif op == "derive":
                text = noisy(window(base, rng.uniform(0.4, 0.6), "tail") + fresh(family, int(len(base) * rng.uniform(0.5, 0.8))), family, noise)
                result = fresh(family, 30)
            elif op == "diverge":
                text = noisy(window(base, rng.uniform(0.4, 0.6), "head") + fresh(family, int(len(base) * rng.uniform(0.5, 0.8))), family, noise)
                result = fresh(family, 30)
            else:
                # constant time per step: families are drawn from those already started
                other_family = family if rng.random() < 0.4 else started[int(rng.integers(len(started)))]
                # a merge joins branches: the second parent is neither an ancestor nor a descendant of the first
                other_pool = [m for m in members[other_family] if m != parent and m not in ancestors[parent]
                              and parent not in ancestors[m]]
                if not other_pool:
                    op = "derive"
                    text = noisy(window(base, 0.5, "tail") + fresh(family, len(base) // 2), family, noise)
                    result = fresh(family, 30)
                else:
                    second = other_pool[int(rng.integers(len(other_pool)))]
                    text = noisy(window(base, rng.uniform(0.45, 0.6), "any") +
                                 window(tokens_of[second], rng.uniform(0.45, 0.6), "any"), family, noise)
                    result = fresh(family, 30)
                    parents.append((second, "merge"))
            parents.insert(0, (parent, op))
            depth[item_id] = 1 + max(depth[p] for p, _ in parents)
            if rng.random() < convergent_rate:
                for _ in range(10):  # a few draws find an item of another family, in constant time
                    donor = items[int(rng.integers(len(items)))].item_id
                    if family_of[donor] != family:
                        result = noisy(outputs_of[donor], family, noise)
                        convergent.add((donor, item_id))
                        break
        explicit = [p for p, _ in parents] if parents and rng.random() < explicit_rate else []
        if parents and not explicit and rng.random() < back_reference_rate:
            text = text + ["continuing", "from", parents[0][0]]
        ancestors[item_id] = set()  # within the family only: cross-family sets would grow with the corpus
        for p, op in parents:
            edges.add((p, item_id, op))
            if family_of[p] == family:
                ancestors[item_id] |= ancestors[p] | {p}
        tokens_of[item_id], outputs_of[item_id] = text, result
        members[family].append(item_id)
        family_of[item_id] = family
        score = float(np.clip(quality[family] + 0.3 * (1 - 0.6 ** depth[item_id]) + rng.normal(0, 0.05), 0, 1))
        items.append(LineageItem(item_id=item_id, text=" ".join(text), outputs=" ".join(result),
                                 parents=explicit, time=float(step), score=score, passed=score >= 0.3))
    return PlantedCorpus(items=items, edges=edges, family=family_of, convergent_pairs=convergent, depth=depth)


def edge_scores(predicted: set[tuple[str, str, str]], planted: set[tuple[str, str, str]]) -> dict[str, dict[str, float]]:
    """Precision and recall of (parent, child, type) per type, and of (parent, child) ignoring type."""
    out = {}
    for kind in sorted({t for *_, t in planted} | {t for *_, t in predicted}):
        pred = {e for e in predicted if e[2] == kind}
        true = {e for e in planted if e[2] == kind}
        hit = len(pred & true)
        out[kind] = {"predicted": len(pred), "planted": len(true),
                     "precision": hit / len(pred) if pred else 1.0, "recall": hit / len(true) if true else 1.0}
    pred2, true2 = {e[:2] for e in predicted}, {e[:2] for e in planted}
    hit = len(pred2 & true2)
    out["any"] = {"predicted": len(pred2), "planted": len(true2),
                  "precision": hit / len(pred2) if pred2 else 1.0, "recall": hit / len(true2) if true2 else 1.0}
    return out
