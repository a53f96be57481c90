"""Offline text embeddings and the diversity measures reported for corpora and samples.

Embeddings are signed feature hashing of word unigrams, word bigrams and character 4-grams with
sublinear term weights, L2-normalised. They need no model download and are deterministic across
machines (blake2b, not Python's salted ``hash``). A sentence-transformers model can replace them
through :func:`embed_texts` (``method="sentence-transformers:<model>"``) where one is installed.

Vendi score: exp of the Shannon entropy of the eigenvalues of K/N, with K the cosine-similarity
kernel. When the embedding dimension d is below N, the non-zero eigenvalues of X Xᵀ/N equal those
of Xᵀ X/N, so the d x d matrix is decomposed instead (the dual form).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter

import numpy as np

DEFAULT_DIM = 512
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9_]", re.UNICODE)


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


def text_features(text: str) -> Counter[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    features: Counter[str] = Counter(f"w:{w}" for w in words)
    features.update(f"b:{a} {b}" for a, b in zip(words, words[1:]))
    squashed = " ".join(words)
    features.update(f"c:{squashed[i:i + 4]}" for i in range(max(0, len(squashed) - 3)))
    return features


def hashed_embeddings(texts: list[str], dim: int = DEFAULT_DIM) -> np.ndarray:
    """One unit-length row per text (a zero row for an empty text)."""
    out = np.zeros((len(texts), dim), dtype=np.float64)
    cache: dict[str, tuple[int, float]] = {}
    for row, text in enumerate(texts):
        for feature, count in text_features(text).items():
            slot = cache.get(feature)
            if slot is None:
                slot = cache[feature] = _bucket(feature, dim)
            out[row, slot[0]] += slot[1] * (1.0 + np.log(count))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def embed_texts(texts: list[str], method: str = "hashing", dim: int = DEFAULT_DIM) -> np.ndarray:
    """Embeddings by name: ``hashing`` (offline, default) or ``sentence-transformers:<model>`` (optional extra)."""
    if method == "hashing":
        return hashed_embeddings(texts, dim)
    if method.startswith("sentence-transformers:"):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ValueError(f"embedding method '{method}' needs the optional extra: pip install "
                             "'trailforge[embeddings]'") from None
        model = SentenceTransformer(method.split(":", 1)[1])
        return np.asarray(model.encode(texts, normalize_embeddings=True), dtype=np.float64)
    raise ValueError(f"unknown embedding method '{method}'; known: hashing, sentence-transformers:<model>")


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def vendi_score(embeddings: np.ndarray) -> float:
    """Effective number of distinct items (1 for identical rows, N for orthogonal ones)."""
    x = _unit_rows(embeddings)
    n, d = x.shape
    if n == 0:
        return 0.0
    gram = (x.T @ x) / n if d < n else (x @ x.T) / n
    eigenvalues = np.linalg.eigvalsh(gram)
    eigenvalues = eigenvalues[eigenvalues > 1e-12]
    eigenvalues = eigenvalues / eigenvalues.sum()  # rows of zeros would otherwise leave a trace below one
    return float(np.exp(-np.sum(eigenvalues * np.log(eigenvalues))))


def centroid_distance(embeddings: np.ndarray) -> float:
    """Mean cosine distance of each embedding to the centroid of all of them."""
    x = _unit_rows(embeddings)
    if len(x) == 0:
        return 0.0
    centroid = x.mean(axis=0)
    norm = np.linalg.norm(centroid)
    if norm == 0:
        return 1.0
    return float(np.mean(1.0 - x @ (centroid / norm)))


def sampled_diversity(embeddings: np.ndarray, size: int, seeds: list[int]) -> dict[str, float]:
    """Vendi score and centroid distance on equal-size random subsets, averaged over ``seeds``.

    Comparing corpora of different sizes needs equal sample sizes: both measures grow with N.
    """
    n = len(embeddings)
    size = min(size, n)
    vendi, centroid = [], []
    for seed in seeds:
        pick = np.random.default_rng(seed).choice(n, size=size, replace=False) if n else np.arange(0)
        vendi.append(vendi_score(embeddings[pick]))
        centroid.append(centroid_distance(embeddings[pick]))
    return {"sample_size": size, "seeds": len(seeds),
            "vendi": float(np.mean(vendi)) if vendi else 0.0,
            "centroid_distance": float(np.mean(centroid)) if centroid else 0.0}
