"""Single-defect mutations of scientific scripts: sites, exact edits, untouched surroundings."""
from __future__ import annotations

import ast

import pytest

from trailforge.envs import mutations
from trailforge.envs.mutations import (
    OPERATORS, Mutation, Operator, apply_mutation, find_mutations, mutated_line, register,
)

# Every snippet is embedded between these lines, so each case also checks that an edit
# leaves the rest of the file (including non-ASCII text) byte-identical.
HEAD = "# données: température (°C) — header\nimport math\nimport numpy as np\nimport pandas as pd\n"
TAIL = "\nDONE = True  # trailer: µ ± σ\n"


def found(snippet: str, operator: str, **kwargs) -> list[Mutation]:
    return find_mutations(HEAD + snippet + TAIL, "analysis.py", [operator], **kwargs)


def assert_clean_splice(source: str, mutation: Mutation) -> str:
    """Apply the mutation and check that nothing outside its span changed."""
    mutated = apply_mutation(source, mutation)
    before, after = source.splitlines(keepends=True), mutated.splitlines(keepends=True)
    first, last = mutation.line - 1, mutation.end_line - 1
    assert after[:first] == before[:first]
    tail = len(before) - 1 - last
    assert after[len(after) - tail:] == before[len(before) - tail:] if tail else True
    old_line, new_line = mutated_line(source, mutation)
    assert old_line.startswith(before[first][:mutation.col])
    assert new_line.startswith(before[first][:mutation.col])
    assert old_line.endswith(before[last].rstrip("\r\n")[mutation.end_col:])
    assert new_line.endswith(before[last].rstrip("\r\n")[mutation.end_col:])
    ast.parse(mutated)
    return mutated


POSITIVE = [
    # reduction_axis
    ("reduction_axis", "m = x.mean(axis=0)\n", ["m = x.mean(axis=1)\n"]),
    ("reduction_axis", "m = np.sum(x, axis=-1)\n", ["m = np.sum(x, axis=0)\n"]),
    ("reduction_axis", "m = df.mean(axis='columns')\n", ["m = df.mean(axis='index')\n"]),
    # degrees_of_freedom
    ("degrees_of_freedom", "s = np.std(x)\n", ["s = np.std(x, ddof=1)\n"]),
    ("degrees_of_freedom", 's = df["a"].std()\n', ['s = df["a"].std(ddof=0)\n']),
    ("degrees_of_freedom", "s = df.values.var()\n", ["s = df.values.var(ddof=1)\n"]),
    ("degrees_of_freedom", "s = x.var(ddof=1)\n", ["s = x.var(ddof=0)\n"]),
    ("degrees_of_freedom", "s = np.std(x, ddof=0)\n", ["s = np.std(x, ddof=1)\n"]),
    # log_base
    ("log_base", "y = np.log(x)\n", ["y = np.log10(x)\n"]),
    ("log_base", "y = math.log10(x)\n", ["y = math.log(x)\n"]),
    ("log_base", "y = np.log2(x + 1)\n", ["y = np.log(x + 1)\n"]),
    ("log_base", "from math import log, log10\ny = log(x)\n", ["from math import log, log10\ny = log10(x)\n"]),
    # mean_median_sum
    ("mean_median_sum", "m = np.mean(x)\n", ["m = np.median(x)\n", "m = np.sum(x)\n"]),
    ("mean_median_sum", 'm = df["a"].sum()\n', ['m = df["a"].mean()\n']),
    ("mean_median_sum", "m = s.median()\n", ["m = s.mean()\n"]),
    ("mean_median_sum", "m = np.nanmean(x)\n", ["m = np.nanmedian(x)\n"]),
    ("mean_median_sum", 'g = df.groupby("k").agg(avg=("v", "mean"))\n',
     ['g = df.groupby("k").agg(avg=("v", "median"))\n', 'g = df.groupby("k").agg(avg=("v", "sum"))\n']),
    ("mean_median_sum", "g = df.groupby('k')['v'].agg(['mean', 'std'])\n",
     ["g = df.groupby('k')['v'].agg(['median', 'std'])\n", "g = df.groupby('k')['v'].agg(['sum', 'std'])\n"]),
    ("mean_median_sum", "g = df.groupby('k').agg({'v': np.median})\n", ["g = df.groupby('k').agg({'v': np.mean})\n"]),
    ("mean_median_sum", "t = pd.pivot_table(df, index='k', aggfunc='sum')\n",
     ["t = pd.pivot_table(df, index='k', aggfunc='mean')\n"]),
    # comparison_boundary
    ("comparison_boundary", "hot = t > 30\n", ["hot = t >= 30\n"]),
    ("comparison_boundary", "ok = 0 <= x < 1\n", ["ok = 0 < x < 1\n", "ok = 0 <= x <= 1\n"]),
    ("comparison_boundary", "ok = (a)>=(b)\n", ["ok = (a)>(b)\n"]),
    # slice_off_by_one
    ("slice_off_by_one", "tail = a[1:]\n", ["tail = a[2:]\n", "tail = a[0:]\n"]),
    ("slice_off_by_one", "head = a[:n]\n", ["head = a[:n - 1]\n", "head = a[:n + 1]\n"]),
    ("slice_off_by_one", "body = a[:-1]\n", ["body = a[:-2]\n"]),
    ("slice_off_by_one", "first = a[0]\n", ["first = a[1]\n"]),
    ("slice_off_by_one", "last = a[-1]\n", ["last = a[-2]\n"]),
    ("slice_off_by_one", "row = arr[0, :]\n", ["row = arr[1, :]\n"]),
    ("slice_off_by_one", "fit = d[0:200]\n", ["fit = d[1:200]\n"]),  # from the start: yes; the chosen end: no
    ("slice_off_by_one", "head = a[:len(a) - 5]\n", ["head = a[:len(a) - 5 - 1]\n", "head = a[:len(a) - 5 + 1]\n"]),
    ("slice_off_by_one", "b = a[:i if c else j]\n", ["b = a[:(i if c else j) - 1]\n", "b = a[:(i if c else j) + 1]\n"]),
    # sort_order
    ("sort_order", 's = df.sort_values("v", ascending=True)\n', ['s = df.sort_values("v", ascending=False)\n']),
    ("sort_order", 's = df.sort_values("v")\n', ['s = df.sort_values("v", ascending=False)\n']),
    ("sort_order", "s = df.sort_index()\n", ["s = df.sort_index(ascending=False)\n"]),
    ("sort_order", "s = sorted(xs, key=len)\n", ["s = sorted(xs, key=len, reverse=True)\n"]),
    ("sort_order", "s = sorted(x for x in xs)\n", ["s = sorted((x for x in xs), reverse=True)\n"]),
    ("sort_order", "s = sorted((xs))\n", ["s = sorted((xs), reverse=True)\n"]),
    ("sort_order", "xs.sort(reverse=True)\n", ["xs.sort(reverse=False)\n"]),
    # argmax_argmin
    ("argmax_argmin", "i = np.argmax(x)\n", ["i = np.argmin(x)\n"]),
    ("argmax_argmin", "best = max(items, key=score)\n", ["best = min(items, key=score)\n"]),
    ("argmax_argmin", 'top = df.nlargest(3, "v")\n', ['top = df.nsmallest(3, "v")\n']),
    ("argmax_argmin", "i = s.idxmin()\n", ["i = s.idxmax()\n"]),
    ("argmax_argmin", "peak = df.max()\n", ["peak = df.min()\n"]),
    # unit_scale
    ("unit_scale", "km = m / 1000\n", ["km = m / 10000\n", "km = m / 100\n", "km = m / 1\n"]),
    ("unit_scale", "h = s / 3600\n", ["h = s / 60\n"]),
    ("unit_scale", "minutes = h * 60.0\n", ["minutes = h * 3600.0\n"]),
    ("unit_scale", "c = k - 273.15\n", ["c = k - 273.0\n"]),
    ("unit_scale", "mm = 1e-3 * x\n", ["mm = 1e-2 * x\n", "mm = 1e-4 * x\n", "mm = 1e-6 * x\n"]),
    ("unit_scale", "PERCENT = 100\n", ["PERCENT = 1000\n", "PERCENT = 10\n"]),
    ("unit_scale", "def f(x, scale=0.01):\n    return x * scale\n",
     ["def f(x, scale=0.1):\n    return x * scale\n", "def f(x, scale=0.001):\n    return x * scale\n"]),
    # sign
    ("sign", "y = -x\n", ["y = x\n"]),
    ("sign", "d = a - b\n", ["d = b - a\n"]),
    ("sign", "y = c * -(a + b)\n", ["y = c * (a + b)\n"]),
    ("sign", "d = a - b - c\n", ["d = c - (a - b)\n", "d = b - a - c\n"]),
    ("sign", "d = (a + b) - c\n", ["d = c - (a + b)\n"]),
    # key_swap
    ("key_swap", 'a = df["x"]\nb = df["y"]\nc = df["z"]\n',
     ['a = df["y"]\nb = df["y"]\nc = df["z"]\n', 'a = df["z"]\nb = df["y"]\nc = df["z"]\n',
      'a = df["x"]\nb = df["z"]\nc = df["z"]\n', 'a = df["x"]\nb = df["x"]\nc = df["z"]\n',
      'a = df["x"]\nb = df["y"]\nc = df["x"]\n', 'a = df["x"]\nb = df["y"]\nc = df["y"]\n']),
    ("key_swap", "df['out'] = 1\nv = df['in']\n", ["df['out'] = 1\nv = df['out']\n"]),
    # drop_missing_handling
    ("drop_missing_handling", "m = df.dropna().mean()\n", ["m = df.mean()\n"]),
    ("drop_missing_handling", "m = (df).dropna().mean()\n", ["m = (df).mean()\n"]),
    ("drop_missing_handling", "f = df.fillna(0)\n", ["f = df\n"]),
    ("drop_missing_handling", "m = s.mean(skipna=True)\n", ["m = s.mean(skipna=False)\n"]),
    ("drop_missing_handling", "m = np.nanmean(x)\n", ["m = np.mean(x)\n"]),
    ("drop_missing_handling", "y = np.nan_to_num(a + b) * 2\n", ["y = (a + b) * 2\n"]),
    ("drop_missing_handling", 's = df["v"].interpolate(method="linear")\n', ['s = df["v"]\n']),
    # drop_normalisation
    ("drop_normalisation", "p = x / x.sum()\n", ["p = x\n"]),
    ("drop_normalisation", "z = (x - m) / sd\n", ["z = (x - m)\n"]),
    ("drop_normalisation", "r = counts / total_count\n", ["r = counts\n"]),
    ("drop_normalisation", "f = a * b / len(xs)\n", ["f = a * b\n"]),
    ("drop_normalisation", "s = (x - x.min()) / (x.max() - x.min())\n", ["s = (x - x.min())\n"]),
    ("drop_normalisation", "w /= w.sum()\n", ["pass\n"]),
    # binary_operator
    ("binary_operator", "y = a + b\n", ["y = a - b\n"]),
    ("binary_operator", "y = a * b\n", ["y = a / b\n"]),
    ("binary_operator", "y = x ** 2\n", ["y = x * 2\n"]),
    ("binary_operator", "y = c / x ** 2\n", ["y = c * x ** 2\n", "y = c / (x * 2)\n"]),
    ("binary_operator", "y = c / (x ** 2)\n", ["y = c * (x ** 2)\n", "y = c / (x * 2)\n"]),
    ("binary_operator", "acc += v\n", ["acc -= v\n"]),
    # swap_operands
    ("swap_operands", "y = a / b\n", ["y = b / a\n"]),
    ("swap_operands", "y = a ** b ** c\n", ["y = (b ** c) ** a\n", "y = a ** c ** b\n"]),
    ("swap_operands", "y = a * b / c\n", ["y = c / (a * b)\n"]),
    ("swap_operands", "y = (a + b) / c\n", ["y = c / (a + b)\n"]),
    ("swap_operands", "y = a - b * c\n", ["y = b * c - a\n"]),
    # constant
    ("constant", "n = 5\n", ["n = 6\n"]),
    ("constant", "r = 0.25 * x\n", ["r = 0.5 * x\n"]),
    ("constant", "y = x - 3\n", ["y = x - 4\n"]),
    ("constant", "y = -7\n", ["y = -8\n"]),
    # negate_condition
    ("negate_condition", "if x > 0:\n    y = 1\n", ["if not (x > 0):\n    y = 1\n"]),
    ("negate_condition", "while n < 10:\n    n += 1\n", ["while not (n < 10):\n    n += 1\n"]),
    ("negate_condition", "y = a if c else b\n", ["y = a if not (c) else b\n"]),
    ("negate_condition", "ys = [v for v in xs if v > 0]\n", ["ys = [v for v in xs if not (v > 0)]\n"]),
    ("negate_condition", "if not ok:\n    pass\n", ["if ok:\n    pass\n"]),
    ("negate_condition", "if x:\n    pass\nelif y:\n    pass\n",
     ["if not (x):\n    pass\nelif y:\n    pass\n", "if x:\n    pass\nelif not (y):\n    pass\n"]),
]

NEGATIVE = [
    ("reduction_axis", "m = x.mean(axis=k)\nm = np.sum(x, 0)\nm = np.sum(x, axis=2)\nm = x.mean(axes=0)\n"),
    ("degrees_of_freedom", "import statistics\nimport torch\ns = statistics.stdev(x)\ns = torch.std(x)\n"
                           "s = x.std(**kw)\ns = np.mean(x)\ns = x.var(ddof=2)\n"),
    ("log_base", "from math import log\ny = math.log(x, 2)\ny = np.log1p(x)\ny = log(x)\ny = df.log(x)\n"
                 "y = np.exp(x)\n"),
    ("mean_median_sum", 'm = sum(values)\nm = df["mean"]\nm = x.total()\nm = math.fsum(x)\nm = x.agg("max")\n'),
    ("comparison_boundary", "a == b\na != b\na in b\na is not b\n"),
    ("slice_off_by_one", 'v = d["key"]\nv = a[i]\nv = df.loc["a":"b"]\nv = a[::2]\n'
                         # windows, fields and columns the author chose: no statement can say which is right
                         "v = data[10:201]\nv = x[-50:]\nv = x[:-3]\nv = gps[6]\nv = d[:, 1]\nv = d[:, -1]\n"
                         "v = d[10:200, 0]\n"),
    ("sort_order", "xs.sort()\ns = sorted(xs, reverse=flag)\ns = df.sort_values('v', **opts)\n"
                   "s = df.sort_values('v', ascending=order)\n"),
    ("argmax_argmin", "i = math.floor(x)\nx = np.clip(x, 0, 1)\nm = x.mode()\nm = x.maxsize\n"),
    ("unit_scale", "for i in range(100):\n    pass\nx = a[100]\nrng = np.random.default_rng(1000)\nseed = 1000\n"
                   "y = x * 7\nz = x > 1000\nw = f(1000)\nrow = [0.0] * 100\n"),
    ("sign", "d = a - 0\nd = 0 - a\ny = +x\ny = a + b\ny = ~x\n"),
    ("key_swap", 'a = df["x"]\nb = df[["x", "y"]]\nc = d.get("z")\n'),
    ("drop_missing_handling", "m = df.mean()\nm = pd.isna(x)\nm = np.mean(x)\nm = pd.fillna\n"
                              "v = config.interpolate(template)\n"),
    ("drop_normalisation", "r = a / b\nr = x / 2\nr = x / assumption\nr = x * total\nr = x // n\n"),
    ("binary_operator", 's = "a" + name\nrow = [0] * n\ny = a % b\ny = a // b\nline = "-" * 40\nt = (1,) + t\n'),
    ("swap_operands", "y = a + b\ny = a * b\ny = a % b\n"),
    ("constant", "n = 0\nn = 1\nx = a[2]\nm = x.mean(axis=2)\nflag = True\nrng = np.random.default_rng(42)\n"
                 "s = x.std(ddof=2)\nq = df.sample(n, random_state=7)\nname = 'x'\nz = 0.0\n"),
    ("negate_condition", "while True:\n    break\nif __name__ == '__main__':\n    main()\n"),
]


@pytest.mark.parametrize(("operator", "snippet", "expected"), POSITIVE,
                         ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(POSITIVE)])
def test_operator_applies_with_exact_edit(operator, snippet, expected):
    source = HEAD + snippet + TAIL
    mutations = find_mutations(source, "analysis.py", [operator])
    assert mutations, f"{operator} found nothing in {snippet!r}"
    assert all(m.operator == operator and m.path == "analysis.py" for m in mutations)
    mutated = [assert_clean_splice(source, m) for m in mutations]
    assert sorted(mutated) == sorted(HEAD + text + TAIL for text in expected)


@pytest.mark.parametrize(("operator", "snippet"), NEGATIVE, ids=[op for op, _ in NEGATIVE])
def test_operator_does_not_apply(operator, snippet):
    assert found(snippet, operator) == []


def test_every_operator_has_positive_and_negative_cases():
    assert {op for op, _, _ in POSITIVE} == set(OPERATORS) == {op for op, _ in NEGATIVE}


def test_statistics_module_gets_median_but_not_sum():
    replacements = [m.replacement for m in found("import statistics\nm = statistics.mean(x)\n", "mean_median_sum")]
    assert replacements == ["median"]


def test_registry_names_descriptions_and_priority():
    assert len(OPERATORS) >= 17
    for name, op in OPERATORS.items():
        assert op.name == name
        assert op.description.strip() and op.description.endswith(".")
        assert callable(op.find)
    flags = [op.scientific for op in OPERATORS.values()]
    assert flags == sorted(flags, reverse=True), "scientific operators must come first"
    assert {"binary_operator", "swap_operands", "constant", "negate_condition"} == \
        {name for name, op in OPERATORS.items() if not op.scientific}


def test_register_refuses_a_different_operator_under_a_taken_name():
    existing = OPERATORS["sign"]
    assert register(existing) is existing  # re-registering the same operator is harmless
    with pytest.raises(ValueError, match="sign"):
        register(Operator("sign", "Something else.", True, lambda tree, source: []))


def test_non_ascii_before_a_site_uses_character_columns():
    source = 'étiquette = "température µ"; y = np.log(x)\n'
    (mutation,) = find_mutations(source, "a.py", ["log_base"])
    line = source.splitlines()[0]
    assert line[mutation.col:mutation.end_col] == "log"
    assert mutation.col == line.index("np.log") + 3
    assert mutation.col < line.encode("utf-8").index(b"np.log") + 3  # a byte column would be further right
    assert apply_mutation(source, mutation) == 'étiquette = "température µ"; y = np.log10(x)\n'


def test_non_ascii_multiline_span_and_crlf_line_endings():
    source = 'x = {"ß": 1}["ß"]; y = (a -\r\n     b)  # Δ\r\nz = 1\r\n'
    mutations = find_mutations(source, "a.py", ["sign"])
    assert [m.replacement for m in mutations] == ["b - a"]
    (mutation,) = mutations
    assert (mutation.line, mutation.end_line) == (1, 2)
    assert apply_mutation(source, mutation) == 'x = {"ß": 1}["ß"]; y = (b - a)  # Δ\r\nz = 1\r\n'
    assert mutated_line(source, mutation) == ('x = {"ß": 1}["ß"]; y = (a -\r\n     b)  # Δ',
                                              'x = {"ß": 1}["ß"]; y = (b - a)  # Δ')


def test_byte_order_mark_is_tolerated():
    source = "\ufeffy = np.log(x)\n"
    (mutation,) = find_mutations(source, "a.py", ["log_base"])
    assert apply_mutation(source, mutation) == "\ufeffy = np.log10(x)\n"


def test_lines_filter_keeps_only_executed_lines():
    source = "a = np.log(x)\nb = 2\nc = np.log(y)\n"
    assert [m.line for m in find_mutations(source, "a.py", ["log_base"])] == [1, 3]
    assert [m.line for m in find_mutations(source, "a.py", ["log_base"], lines={3})] == [3]
    assert find_mutations(source, "a.py", lines=set()) == []


def test_unknown_operator_is_named_in_the_error():
    with pytest.raises(ValueError, match="no_such_op") as error:
        find_mutations("x = 1\n", "a.py", ["sign", "no_such_op"])
    assert "log_base" in str(error.value)


def test_apply_refuses_a_stale_span():
    source = "y = np.log(x)\n"
    (mutation,) = find_mutations(source, "a.py", ["log_base"])
    with pytest.raises(ValueError, match="stale"):
        apply_mutation("y = np.exp(x)\n", mutation)
    with pytest.raises(ValueError):
        apply_mutation("", mutation)
    with pytest.raises(ValueError):
        mutated_line("y = np.exp(x)\n", mutation)


def test_identical_edits_from_two_operators_are_kept_once_by_priority():
    mutations = find_mutations("d = a - b\n", "a.py", ["swap_operands", "sign"])
    swaps = [m for m in mutations if m.replacement == "b - a"]
    assert [m.operator for m in swaps] == ["sign"]


def test_unparsable_and_no_op_results_are_dropped(monkeypatch):
    def propose(tree, source):
        yield Mutation("junk", "", 1, 4, 1, 5, "a", "(")  # breaks the syntax
        yield Mutation("junk", "", 1, 4, 1, 5, "a", "a")  # changes nothing
        yield Mutation("junk", "", 1, 4, 1, 5, "a", "(a)")  # same tree, different text
        yield Mutation("junk", "", 1, 4, 1, 5, "a", "c")  # a real change
    monkeypatch.setitem(OPERATORS, "junk", Operator("junk", "Test only.", False, propose))
    assert [m.replacement for m in find_mutations("x = a + b\n", "a.py", ["junk"])] == ["c"]


def test_non_analysis_code_is_never_mutated():
    source = '''"""Docstring: x > 0, a / b, np.log(1000), df["k"]."""
import numpy as np
from math import log


@decorate(axis=0, n=5, scale=1000, agg=np.mean)
def main(values: Annotated[list, 5] = None) -> float:
    """Inner docstring: np.mean(x) > 3."""
    assert np.mean(values) > 0, "values must be positive"
    print(f"{np.mean([1, 2]) * 1000:.2f} {x[0] if x > 1 else -2}", np.log(2) > 1, -3, sorted(values))


if __name__ == "__main__":
    main()
'''
    assert find_mutations(source, "a.py") == []


REALISTIC = '''"""Daily river discharge summary for one gauge network."""
import json
import numpy as np
import pandas as pd

SECONDS_PER_DAY = 86400
LITRES_PER_M3 = 1000
THRESHOLD = 2.5


def load(path):
    df = pd.read_csv(path, parse_dates=["date"])
    df = df.dropna(subset=["flow"])
    df["flow_l"] = df["flow"] * LITRES_PER_M3
    df["volume"] = df["flow"] * SECONDS_PER_DAY / 1e6
    return df


def anomalies(series):
    z = (series - series.mean()) / series.std()
    return z[z.abs() > THRESHOLD]


def summarise(df):
    by_site = df.groupby("site").agg(mean_flow=("flow", "mean"), total=("volume", "sum"))
    ranked = by_site.sort_values("mean_flow", ascending=False)
    wettest = ranked.index[0]
    share = by_site["total"] / by_site["total"].sum()
    peak_day = df.loc[df["flow"].idxmax(), "date"]
    log_flow = np.log10(df["flow"] + 1).mean()
    spread = np.nanstd(df["flow"].to_numpy(), ddof=1)
    recent = df["flow"].values[-7:]
    trend = np.polyfit(np.arange(len(recent)), recent, 1)[0]
    daily = df.pivot_table(index="date", columns="site", values="flow").mean(axis=1)
    if daily.empty:
        trend = 0.0
    low = int((df["flow"] < 0.1 * df["flow"].median()).sum())
    return {"wettest": wettest, "share": float(share.max()), "peak": str(peak_day),
            "log": float(log_flow), "spread": float(spread), "trend": float(trend), "low": low,
            "n_anom": len(anomalies(df["flow"])), "days": max(len(recent), 1)}


if __name__ == "__main__":
    print(json.dumps(summarise(load("data/flows.csv")), indent=2))
'''


def test_realistic_script_mutants_parse_and_touch_only_their_span():
    assert len(REALISTIC.splitlines()) >= 40
    mutations = find_mutations(REALISTIC, "pipeline/summary.py")
    assert len(mutations) > 50
    assert {m.operator for m in mutations} == set(OPERATORS)
    for mutation in mutations:
        assert mutation.path == "pipeline/summary.py"
        mutated = assert_clean_splice(REALISTIC, mutation)
        assert mutated != REALISTIC
    assert len({(m.line, m.col, m.end_line, m.end_col, m.replacement) for m in mutations}) == len(mutations)
    keys = [(m.line, m.col, m.operator, m.replacement) for m in mutations]
    assert keys == sorted(keys)
    # nothing in the __main__ block (print, json.dumps, indent=2) is a site
    main_line = REALISTIC.splitlines().index('if __name__ == "__main__":') + 1
    assert all(m.line < main_line for m in mutations)


def test_results_are_deterministic():
    first = find_mutations(REALISTIC, "s.py")
    mutations.scope._last_scan[0] = None  # a cold walk gives the same answer as a warm one
    assert find_mutations(REALISTIC, "s.py") == first
    assert find_mutations(REALISTIC, "s.py", list(reversed(OPERATORS))) == first


def test_operators_can_be_called_directly_with_a_tree():
    source = "y = np.log(x)\n"
    (mutation,) = OPERATORS["log_base"].find(ast.parse(source), source)
    assert (mutation.line, mutation.col, mutation.end_col, mutation.original) == (1, 7, 10, "log")


def test_mutated_line_returns_whole_lines():
    source = "a = 1\nvalue = np.log(x) + 2  # note\nb = 2\n"
    (mutation,) = find_mutations(source, "a.py", ["log_base"])
    assert mutated_line(source, mutation) == ("value = np.log(x) + 2  # note", "value = np.log10(x) + 2  # note")


def test_a_window_cut_from_two_arrays_on_one_line_moves_as_one():
    """Shifting one bound of `d[0:200, 5], d[0:200, 1]` only breaks the fit (lengths differ); the window moves."""
    source = "import numpy as np\nd = np.ones((300, 6))\nfit = np.polyfit(d[0:200, 5], d[0:200, 1], 1)\n"
    edits = {(m.original, m.replacement) for m in find_mutations(source, "fit.py", ["slice_off_by_one"])}
    assert ("0:200, 5], d[0", "1:200, 5], d[1") in edits
    assert ("0", "1") in edits  # each bound alone is still proposed


def test_a_chosen_window_end_or_column_is_never_shifted():
    """Ryn-Oliphant's fit window `data[0:200, 5]` vs `data[0:200, 1]`: 199, 201 or column 0/2 are not errors a
    statement could point to; only the exact original would pass such a Correction."""
    source = ("import numpy as np\ndata = np.ones((300, 6))\n"
              "lin_fit = np.polyfit(data[0:200,5],data[0:200,1],1)\nplot = data[:,5], data[:,1]\n")
    mutants = [apply_mutation(source, m) for m in find_mutations(source, "plot.py", ["slice_off_by_one"])]
    assert mutants, "the window start 0 is still a recognisable slip"
    for mutant in mutants:
        assert "0:200" in mutant or "1:200" in mutant  # the end bound 200 never moves
        assert mutant.count("0:200,1]") + mutant.count("1:200,1]") == 1 and "data[:,1]" in mutant
    assert not any("201" in m or "199" in m for m in mutants)
