"""Similarity signals between items: word shingles, normalised-AST shingles, MinHash and LSH.

Everything here is deterministic across processes and machines: words are hashed with crc32
and combined with fixed odd multipliers (Python's ``hash`` is salted per process), and the
MinHash permutations come from a fixed seed. Shingle sets are sorted unique ``uint64`` arrays,
so exact Jaccard and containment are array intersections.
"""
from __future__ import annotations

import ast
import re
import zlib
from collections import defaultdict

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD], dtype=np.uint64)
EMPTY = np.zeros(0, dtype=np.uint64)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def token_hashes(tokens: list[str]) -> np.ndarray:
    return np.fromiter((zlib.crc32(t.encode("utf-8")) for t in tokens), dtype=np.uint64, count=len(tokens))


def shingle_sequence(tokens: list[str], n: int) -> np.ndarray:
    """Hashes of consecutive ``n``-token windows, in text order (a short text is one window)."""
    if not tokens:
        return EMPTY
    hashes = token_hashes(tokens)
    n = max(1, min(n, len(hashes), len(_MIX)))
    count = len(hashes) - n + 1
    with np.errstate(over="ignore"):
        out = np.zeros(count, dtype=np.uint64)
        for offset in range(n):
            out = out * np.uint64(31) + hashes[offset:offset + count] * _MIX[offset]
        out ^= out >> np.uint64(31)
    return out


def shingle_set(sequence: np.ndarray) -> np.ndarray:
    return np.unique(sequence)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 or len(b) == 0:
        return 0.0
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return shared / (len(a) + len(b) - shared)


def containment(part: np.ndarray, whole: np.ndarray) -> float:
    """Share of ``part``'s shingles that also occur in ``whole``."""
    if len(part) == 0:
        return 0.0
    return len(np.intersect1d(part, whole, assume_unique=True)) / len(part)


# -- code -------------------------------------------------------------------------------------

class _Normaliser(ast.NodeVisitor):
    """Flattens an AST into node-type tokens with names renamed in order of first appearance.

    Renaming makes ``x = a + b`` and ``total = left + right`` the same code; literals keep only
    their type, and docstrings are dropped, so comments and wording never count as code.
    """

    def __init__(self):
        self.tokens: list[str] = []
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def generic_visit(self, node):
        if isinstance(node, (ast.expr_context, ast.Load)):
            return
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) \
                and isinstance(node.value.value, str):
            return
        self.tokens.append(type(node).__name__)
        if isinstance(node, ast.Name):
            self.tokens.append(self._name(node.id))
        elif isinstance(node, ast.arg):
            self.tokens.append(self._name(node.arg))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.tokens.append(self._name(node.name))
        elif isinstance(node, ast.Attribute):
            self.tokens.append(f".{node.attr}")  # library API names carry meaning; keep them
        elif isinstance(node, ast.Constant):
            self.tokens.append(type(node.value).__name__)
        super().generic_visit(node)


def code_tokens(code: str) -> list[str]:
    """Normalised AST tokens of Python source; plain word tokens when it does not parse."""
    try:
        tree = ast.parse(code or "")
    except (SyntaxError, ValueError):
        return words(code)
    normaliser = _Normaliser()
    normaliser.visit(tree)
    return normaliser.tokens[1:]  # drop the Module node


# -- MinHash + LSH ----------------------------------------------------------------------------

def minhash_permutations(num_perm: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Salts and odd multipliers for ``num_perm`` signature columns (two columns per 64-bit product)."""
    if num_perm % 2:
        raise ValueError(f"lineage: num_perm must be even, got {num_perm}")
    rng = np.random.default_rng(seed)
    salts = rng.integers(0, 2**63, size=num_perm // 2, dtype=np.uint64)
    multipliers = rng.integers(0, 2**63, size=num_perm // 2, dtype=np.uint64) | np.uint64(1)
    return salts, multipliers


def minhash_signatures(shingle_sets: list[np.ndarray], salts: np.ndarray, multipliers: np.ndarray,
                       chunk: int = 1024) -> np.ndarray:
    """One signature row per set: the minimum of each hash permutation over the set's shingles.

    A permutation is xor-salt, odd multiply (a bijection mod 2^64), xor-shift; each 64-bit result
    gives two 32-bit hash values (low and high half), so ``len(salts)`` products yield twice as many
    signature columns for half the arithmetic. Sets are processed in chunks so memory stays
    bounded; an empty set gets all-max (it never collides).
    """
    columns = 2 * len(salts)
    out = np.full((len(shingle_sets), columns), np.iinfo(np.uint32).max, dtype=np.uint32)
    for start in range(0, len(shingle_sets), chunk):
        block = shingle_sets[start:start + chunk]
        sizes = np.array([len(s) for s in block])
        nonempty = np.flatnonzero(sizes)
        if len(nonempty) == 0:
            continue
        flat = np.concatenate([block[i] for i in nonempty])
        with np.errstate(over="ignore"):
            hashed = (flat[:, None] ^ salts[None, :]) * multipliers[None, :]
            hashed ^= hashed >> np.uint64(29)
        halves = hashed.view(np.uint32)  # (n, 2 * len(salts)): low and high half of every product
        offsets = np.concatenate([[0], np.cumsum(sizes[nonempty])[:-1]])
        out[start + nonempty] = np.minimum.reduceat(halves, offsets, axis=0)
    return out


def band_keys(signatures: np.ndarray, bands: int) -> np.ndarray:
    """One uint64 key per (item, band): the band's rows folded with fixed multipliers."""
    rows = signatures.shape[1] // bands
    if rows < 1:
        raise ValueError(f"lineage: {bands} bands need at least {bands} permutations, got {signatures.shape[1]}")
    trimmed = signatures[:, :bands * rows].reshape(len(signatures), bands, rows)
    with np.errstate(over="ignore"):
        keys = np.zeros((len(signatures), bands), dtype=np.uint64)
        for r in range(rows):
            keys = keys * _MIX[r % len(_MIX)] + trimmed[:, :, r].astype(np.uint64)
        keys ^= keys >> np.uint64(33)
    return keys


class LSHIndex:
    """Banded LSH over MinHash signatures, filled incrementally.

    ``query_then_insert`` returns earlier items sharing a band with each new one, so a batch costs
    its own size times the candidates it meets, never all pairs. A bucket holding more than
    ``max_bucket`` items (boilerplate shared by everything) yields only its newest members, and
    the truncation is counted.
    """

    def __init__(self, bands: int, max_bucket: int = 200):
        self.bands = bands
        self.max_bucket = max_bucket
        self.buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.truncated = 0

    def query_then_insert(self, item: int, keys: np.ndarray) -> set[int]:
        found: set[int] = set()
        for band, key in enumerate(keys.tolist()):
            bucket = self.buckets[(band, key)]
            if len(bucket) > self.max_bucket:
                self.truncated += 1
                found.update(bucket[-self.max_bucket:])
            else:
                found.update(bucket)
            bucket.append(item)
        found.discard(item)
        return found
