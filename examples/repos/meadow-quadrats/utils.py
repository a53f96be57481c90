"""Diversity index helpers shared by the meadow quadrat analyses.

This module only defines functions; it is imported by diversity.py.
"""
import numpy as np


def proportions(counts):
    """Relative abundances p_i from a vector of non-negative counts."""
    counts = np.asarray(counts, dtype=float)
    counts = counts[counts > 0]
    return counts / counts.sum()


def shannon_index(counts):
    """Shannon diversity H' = -sum(p_i * ln p_i) (natural log)."""
    p = proportions(counts)
    return float(-(p * np.log(p)).sum())


def simpson_index(counts):
    """Gini-Simpson diversity 1 - sum(p_i^2)."""
    p = proportions(counts)
    return float(1.0 - (p ** 2).sum())


def pielou_evenness(counts):
    """Pielou's J = H' / ln(S); returns 0 for single-species samples."""
    richness = int((np.asarray(counts) > 0).sum())
    if richness < 2:
        return 0.0
    return shannon_index(counts) / float(np.log(richness))


def bray_curtis(a, b):
    """Bray-Curtis dissimilarity between two abundance vectors."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return float(np.abs(a - b).sum() / (a + b).sum())
