import numpy as np

from trailforge.lineage.signals import (
    LSHIndex, band_keys, code_tokens, containment, jaccard, minhash_permutations, minhash_signatures,
    shingle_sequence, shingle_set, words,
)


def shingles(text, n=3):
    return shingle_set(shingle_sequence(words(text), n))


def test_jaccard_and_containment_on_shingle_sets():
    a = shingles("the quick brown fox jumps over the lazy dog today")
    b = shingles("the quick brown fox jumps over the lazy cat today")
    assert len(a) == 8 and jaccard(a, b) == 6 / 10 and containment(a, b) == 6 / 8
    assert jaccard(a, shingles("")) == 0.0 and containment(shingles(""), a) == 0.0


def test_hashing_is_stable_across_processes():
    import subprocess
    import sys

    code = ("from trailforge.lineage.signals import *; "
            "print(shingle_sequence(words('alpha beta gamma delta'), 3).tolist())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and outs.pop().strip().startswith("[")


def test_normalised_ast_ignores_names_literals_and_docstrings_but_not_structure():
    one = "def fit(x, y):\n    '''Fit it.'''\n    slope = np.polyfit(x, y, 1)\n    return slope[0] * 2.5\n"
    renamed = "def regress(a, b):\n    k = np.polyfit(a, b, 1)\n    return k[0] * 7.0\n"
    different = "def fit(x, y):\n    return np.mean(x) - np.median(y)\n"
    assert code_tokens(one) == code_tokens(renamed)
    assert code_tokens(one) != code_tokens(different)
    assert code_tokens("this is not python (") == ["this", "is", "not", "python"]


def test_minhash_estimates_jaccard_and_lsh_finds_near_pairs_only():
    rng = np.random.default_rng(0)
    base = [f"w{i}" for i in rng.integers(0, 10_000, size=200)]
    near = list(base)
    for i in rng.choice(200, size=10, replace=False):
        near[i] = "changed"
    far = [f"w{i}" for i in rng.integers(0, 10_000, size=200)]
    sets = [shingle_set(shingle_sequence(t, 3)) for t in (base, near, far)]
    salts, mult = minhash_permutations(128)
    sig = minhash_signatures(sets, salts, mult)
    estimate = float((sig[0] == sig[1]).mean())
    assert abs(estimate - jaccard(sets[0], sets[1])) < 0.12
    keys = band_keys(sig, 64)
    index = LSHIndex(64)
    assert index.query_then_insert(0, keys[0]) == set()
    assert index.query_then_insert(1, keys[1]) == {0}
    assert index.query_then_insert(2, keys[2]) == set()


def test_lsh_bucket_cap_is_counted():
    index = LSHIndex(bands=1, max_bucket=2)
    key = np.array([7], dtype=np.uint64)
    for i in range(4):
        found = index.query_then_insert(i, key)
    assert found == {1, 2} and index.truncated == 1
