"""Scientific operators: the slips a scientist makes (a reduction over the wrong axis, a sample versus a population
spread, a logarithm in the wrong base, a boundary that includes what it should exclude, a missing normalisation,
a unit off by a prefix...). Registered in priority order, before the generic operators."""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator

from .registry import mutation_operator
from .edits import (Mutation, add_keyword, binop_operands, bool_flip, bracket, make_mutation, name_token, receiver_text,
                    rename, span, string_text, swap, token_between)
from .scope import (callee, calls, imports, in_index, int_value, is_number, is_sequence_literal, is_zero,
                    literal_context, module_of, parent_links, protected_literal, renames, visible_nodes)


@mutation_operator("reduction_axis", "Reduce along the other axis of a table or array.", scientific=True)
def _find_reduction_axis(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # -1 means "the last axis"; for the usual 2-D case that is axis 1, so 0 is its mistake.
    int_swaps = {0: ["1"], 1: ["0"], -1: ["0"]}
    name_swaps = {"index": "columns", "rows": "columns", "columns": "index"}  # pandas spellings
    for node, _, _ in visible_nodes(tree):
        if not (isinstance(node, ast.keyword) and node.arg == "axis"):
            continue
        value = int_value(node.value)
        if value in int_swaps:
            for new in int_swaps[value]:
                yield make_mutation("reduction_axis", source, *span(source, node.value), new)
        elif isinstance(node.value, ast.Constant) and node.value.value in name_swaps:
            start, end = span(source, node.value)
            new = string_text(source[start:end], node.value.value, name_swaps[node.value.value])
            yield make_mutation("reduction_axis", source, start, end, new)


def _numpy_receiver(expr: ast.AST, modules: dict[str, str]) -> bool:
    """Best guess that a method receiver is a numpy array (``.values``, ``.to_numpy()``, ``np.f(...)``)."""
    if isinstance(expr, ast.Attribute) and expr.attr == "values":
        return True
    if isinstance(expr, ast.Call):
        name, receiver = callee(expr)
        return name == "to_numpy" or module_of(receiver, modules) == "numpy"
    return False


@mutation_operator("degrees_of_freedom",
                   "Switch between the sample and the population formula for a spread.", scientific=True)
def _find_degrees_of_freedom(tree: ast.Module, source: str) -> Iterator[Mutation]:
    modules, names = imports(tree)
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.keyword) and node.arg == "ddof":
            if int_value(node.value) in (0, 1):
                yield make_mutation("degrees_of_freedom", source, *span(source, node.value),
                                str(1 - int_value(node.value)))
            continue
        if not isinstance(node, ast.Call):
            continue
        name, receiver = callee(node)
        if name not in {"std", "var", "nanstd", "nanvar"} or any(k.arg == "ddof" for k in node.keywords):
            continue
        # numpy defaults to the population formula (ddof=0) and pandas to the sample one
        # (ddof=1); the defect is to pass the other library's default.
        if receiver is None:
            if not names.get(name, "").startswith("numpy."):
                continue
            ddof, max_positional = 1, 4
        elif module_of(receiver, modules) is not None:
            if module_of(receiver, modules) != "numpy":
                continue  # other libraries' std/var take no ddof keyword
            ddof, max_positional = 1, 4
        else:
            ddof, max_positional = (1 if _numpy_receiver(receiver, modules) else 0), 2
        if len(node.args) > max_positional:
            continue  # ddof may already be given positionally
        edit = add_keyword(source, node, f"ddof={ddof}")
        if edit:
            yield make_mutation("degrees_of_freedom", source, *edit)


@mutation_operator("log_base", "Take the logarithm in a different base.", scientific=True)
def _find_log_base(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {"log": ["log10"], "log10": ["log"], "log2": ["log"]}
    # one-argument logs only: math.log(x, base) already states its base
    yield from renames("log_base", tree, source, swaps, allow_method=False,
                        modules_ok=lambda module, new: module in {"numpy", "math", "cmath"},
                        call_ok=lambda call: len(call.args) == 1)


_AGGREGATION_SWAPS = {"mean": ["median", "sum"], "median": ["mean"], "sum": ["mean"]}


_AGGREGATION_CALLS = {"agg", "aggregate", "transform", "pivot_table", "apply", "crosstab"}


_AGGREGATION_KEYWORDS = {"aggfunc", "func", "statistic"}


def _aggregation_names(node: ast.AST) -> Iterator[ast.AST]:
    """Reductions named inside an aggregation argument: ``"mean"`` or ``np.mean``, also in lists,
    tuples and dict values."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.Attribute):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for element in node.elts:
            yield from _aggregation_names(element)
    elif isinstance(node, ast.Dict):
        for value in node.values:  # keys are column names
            yield from _aggregation_names(value)


@mutation_operator("mean_median_sum", "Summarise with a different statistic (mean, median or total).", scientific=True)
def _find_mean_median_sum(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {**_AGGREGATION_SWAPS, "nanmean": ["nanmedian"], "nanmedian": ["nanmean"]}
    # statistics has mean and median but no sum; math and pandas have neither as functions
    yield from renames("mean_median_sum", tree, source, swaps, allow_method=True,
                        modules_ok=lambda module, new: module not in {"math", "pandas"}
                        and not (module == "statistics" and new == "sum"))
    modules, _ = imports(tree)
    visible = {id(node) for node, _, _ in visible_nodes(tree)}
    for call in calls(tree):
        name, _ = callee(call)
        values = [k.value for k in call.keywords if k.arg in _AGGREGATION_KEYWORDS]
        if name in _AGGREGATION_CALLS:
            values += [*call.args, *(k.value for k in call.keywords if k.arg not in _AGGREGATION_KEYWORDS)]
        for value in values:
            for ref in _aggregation_names(value):
                if id(ref) not in visible:
                    continue
                if isinstance(ref, ast.Attribute):  # agg(np.mean): rename the function passed
                    if ref.attr in _AGGREGATION_SWAPS and module_of(ref.value, modules) == "numpy":
                        token = name_token(source, ref)
                        for new in _AGGREGATION_SWAPS[ref.attr] if token else []:
                            yield make_mutation("mean_median_sum", source, *token, new)
                elif ref.value in _AGGREGATION_SWAPS:
                    start, end = span(source, ref)
                    for new in _AGGREGATION_SWAPS[ref.value]:
                        yield make_mutation("mean_median_sum", source, start, end,
                                        string_text(source[start:end], ref.value, new))


_BOUNDARY_SWAPS = {ast.Gt: ">=", ast.GtE: ">", ast.Lt: "<=", ast.LtE: "<"}


_BOUNDARY_TOKENS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}


@mutation_operator("comparison_boundary",
                   "Move a threshold boundary so that the edge value flips sides.", scientific=True)
def _find_comparison_boundary(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in visible_nodes(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            if type(op) not in _BOUNDARY_SWAPS:
                continue
            token = token_between(source, span(source, operands[index])[1], span(source, operands[index + 1])[0])
            if token and source[token[0]:token[1]] == _BOUNDARY_TOKENS[type(op)]:
                yield make_mutation("comparison_boundary", source, *token, _BOUNDARY_SWAPS[type(op)])


def _shifted(value: int) -> list[int]:
    """Neighbouring integers that stay on the same side of zero (counting from the start or the end)."""
    if value >= 0:
        return [value + 1] + ([value - 1] if value >= 1 else [])
    return [value - 1] + ([value + 1] if value <= -2 else [])


# Literal positions where a shift by one is a recognisable slip: the first or last element, a header row
# skipped (x[1:]), the last one dropped (x[:-1]). Any other literal (data[0:201], x[-50:], gps[6]) is a
# window or field the author chose: a shifted one is no scientific error, and no statement can say which
# bound is right, so only the exact original would pass. So is a column of a 2-D index (d[:, 1], d[0:200, 0]).
_IDIOMATIC_POSITIONS = {0, 1, -1}


@mutation_operator("slice_off_by_one", "Shift an index or slice bound by one position.", scientific=True)
def _find_slice_off_by_one(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # The same window cut from several arrays on one line (np.polyfit(d[0:200, 5], d[0:200, 1], 1)): shifting
    # one bound alone only breaks the call (lengths differ); the defect a person makes moves the window itself.
    windows: dict[tuple[int, str, int], list[tuple[int, int]]] = {}
    for node, _, _ in visible_nodes(tree):
        if not isinstance(node, ast.Subscript):
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for axis, part in enumerate(parts):
            if isinstance(part, ast.Slice):
                for role, bound in (("lower", part.lower), ("upper", part.upper)):
                    if bound is None:
                        continue
                    start, end = span(source, bound)
                    value = int_value(bound)
                    if value is not None:
                        if value not in _IDIOMATIC_POSITIONS:
                            continue
                        windows.setdefault((bound.lineno, role, value), []).append((start, end))
                        for new in _shifted(value):
                            yield make_mutation("slice_off_by_one", source, start, end, str(new))
                    elif not isinstance(bound, (ast.Constant, ast.JoinedStr)):  # labels are not positions
                        text = bracket(source[start:end], bound, 10)
                        for delta in (" - 1", " + 1"):
                            yield make_mutation("slice_off_by_one", source, start, end, text + delta)
            else:
                value = int_value(part)
                if value in _IDIOMATIC_POSITIONS and axis == 0:
                    for new in _shifted(value):
                        yield make_mutation("slice_off_by_one", source, *span(source, part), str(new))
    for (_, _, value), spans in windows.items():
        spans = sorted(set(spans))
        if len(spans) < 2:
            continue
        first, last = spans[0][0], spans[-1][1]
        for new in _shifted(value):
            text, done = [], first
            for start, end in spans:
                text += [source[done:start], str(new)]
                done = end
            yield make_mutation("slice_off_by_one", source, first, last, "".join(text) + source[done:last])


@mutation_operator("sort_order", "Rank in the opposite direction.", scientific=True)
def _find_sort_order(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.keyword) and node.arg in {"ascending", "reverse"}:
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for value in values:
                mutation = bool_flip("sort_order", source, value)
                if mutation:
                    yield mutation
        elif isinstance(node, ast.Call):
            name, receiver = callee(node)
            if name == "sorted" and receiver is None and not any(k.arg == "reverse" for k in node.keywords):
                edit = add_keyword(source, node, "reverse=True")
            elif name in {"sort_values", "sort_index"} and receiver is not None and len(node.args) < 3 \
                    and not any(k.arg == "ascending" for k in node.keywords):
                edit = add_keyword(source, node, "ascending=False")
            else:
                continue
            if edit:
                yield make_mutation("sort_order", source, *edit)


_EXTREMA_PAIRS = [("argmax", "argmin"), ("nanargmax", "nanargmin"), ("idxmax", "idxmin"),
                  ("nlargest", "nsmallest"), ("max", "min"), ("nanmax", "nanmin"), ("amax", "amin"),
                  ("cummax", "cummin"), ("maximum", "minimum")]


@mutation_operator("argmax_argmin", "Pick the opposite extreme (largest instead of smallest or back).", scientific=True)
def _find_argmax_argmin(tree: ast.Module, source: str) -> Iterator[Mutation]:
    swaps = {a: [b] for a, b in _EXTREMA_PAIRS} | {b: [a] for a, b in _EXTREMA_PAIRS}
    yield from renames("argmax_argmin", tree, source, swaps, allow_method=True,
                        modules_ok=lambda module, new: module not in {"math", "statistics", "pandas"})
    # builtins need no import
    for call in calls(tree):
        name, receiver = callee(call)
        if receiver is None and name in {"max", "min"}:
            mutation = rename("argmax_argmin", source, call, "min" if name == "max" else "max")
            if mutation:
                yield mutation


_TIME_SWAPS = {60: [3600], 3600: [60], 86400: [3600]}


def _power_of_ten(value: object) -> int | None:
    if type(value) not in (int, float) or not value > 0 or not math.isfinite(value):
        return None
    exponent = round(math.log10(value))
    if type(value) is int:
        return exponent if exponent >= 0 and value == 10 ** exponent else None
    return exponent if value == float(f"1e{exponent}") else None


def _ten_to(exponent: int, like: ast.Constant, text: str) -> str | None:
    """Literal text of 10**exponent, written the way the original literal was (int, 1e3, 1000.0)."""
    if type(like.value) is int:
        return str(10 ** exponent) if exponent >= 0 else None
    if "e" in text.lower():
        return f"1e{exponent}"
    return repr(float(f"1e{exponent}"))


def _unit_candidates(node: ast.Constant, text: str, multiplicative: bool, named: bool) -> list[str]:
    """Replacement texts modelling a unit slip for a literal in the given kind of context."""
    out: list[str] = []
    value = node.value
    if multiplicative or named:
        exponent = _power_of_ten(value)
        if exponent is not None and (exponent >= 1 or exponent <= -2):
            # a decade slip either way (percent vs fraction, cm vs mm), and for SI steps a
            # whole prefix down (k -> none, M -> k, m -> micro)
            steps = [exponent + 1, exponent - 1] + ([exponent - 3] if exponent % 3 == 0 else [])
            out += [t for t in (_ten_to(e, node, text) for e in steps) if t is not None]
        for new in _TIME_SWAPS.get(value, []):  # seconds / minutes / hours / days
            out.append(str(new) if type(value) is int else repr(float(new)))
    if value == 273.15 and type(value) is float:  # Kelvin offset rounded
        out.append("273.0")
    return out


@mutation_operator("unit_scale",
                   "Convert with a factor off by a unit prefix, a decade or a time unit.", scientific=True)
def _find_unit_scale(tree: ast.Module, source: str) -> Iterator[Mutation]:
    parents = parent_links(tree)
    scaling = (ast.Mult, ast.Div, ast.FloorDiv)
    shifting = (ast.Add, ast.Sub)
    for node, _, _ in visible_nodes(tree):
        if not is_number(node) or in_index(node, parents) or protected_literal(node, parents):
            continue
        parent, field = literal_context(node, parents)
        op = getattr(parent, "op", None) if isinstance(parent, (ast.BinOp, ast.AugAssign)) else None
        # Unit conversions are scale factors (x * 1000, t / 3600), offsets (T - 273.15) or
        # named constants; a bare 100 in range(100) is a count, not a unit.
        # ... and [0] * 10 is a repetition
        multiplicative = isinstance(op, scaling) and not (
            isinstance(parent, ast.BinOp) and (is_sequence_literal(parent.left) or is_sequence_literal(parent.right)))
        named = (isinstance(parent, (ast.Assign, ast.AnnAssign)) and field == "value") \
            or isinstance(parent, ast.arguments)
        if not (multiplicative or named or isinstance(op, shifting)):
            continue
        start, end = span(source, node)
        for new in _unit_candidates(node, source[start:end], multiplicative, named):
            yield make_mutation("unit_scale", source, start, end, new)


@mutation_operator("sign", "Flip the sign of a quantity or the direction of a difference.", scientific=True)
def _find_sign(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            start, end = span(source, node)
            # the operand of a unary minus binds at least as tightly as the minus did, and
            # its own brackets are in the text after the '-', so it can stand in its place
            operand = source[start + 1:end].lstrip(" \t")
            if source[start] == "-" and operand and operand[0] not in "\\\r\n#":
                yield make_mutation("sign", source, start, end, operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) \
                and not is_zero(node.left) and not is_zero(node.right):
            mutation = swap("sign", source, node)
            if mutation:
                yield mutation


@mutation_operator("key_swap", "Read a different named column or field.", scientific=True)
def _find_key_swap(tree: ast.Module, source: str) -> Iterator[Mutation]:
    # the pool is every string key subscripted anywhere (reads and writes): real column names
    pool = sorted({node.slice.value for node in ast.walk(tree) if isinstance(node, ast.Subscript)
                   and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)})
    for node, _, _ in visible_nodes(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            continue
        key = node.slice.value
        index = pool.index(key)
        # the next keys in sorted order, wrapping around, at most two per site
        others = [pool[(index + step) % len(pool)] for step in range(1, len(pool))][:2]
        start, end = span(source, node.slice)
        for other in others:
            yield make_mutation("key_swap", source, start, end, string_text(source[start:end], key, other))


_MISSING_REMOVALS = {"dropna", "fillna", "ffill", "bfill", "interpolate"}


_NAN_REDUCTIONS = {"nanmean", "nansum", "nanstd", "nanvar", "nanmax", "nanmin", "nanmedian", "nanpercentile",
                   "nanquantile", "nanargmax", "nanargmin", "nanprod", "nancumsum", "nancumprod"}


@mutation_operator("drop_missing_handling", "Stop skipping, dropping or filling missing values.", scientific=True)
def _find_drop_missing_handling(tree: ast.Module, source: str) -> Iterator[Mutation]:
    modules, _ = imports(tree)
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.keyword) and node.arg in {"skipna", "dropna"}:
            mutation = bool_flip("drop_missing_handling", source, node.value)
            if mutation:
                yield mutation
            continue
        if not isinstance(node, ast.Call):
            continue
        name, receiver = callee(node)
        # pandas interpolate() takes keywords; with a positional argument it is most
        # likely some other interpolate (string templates, configuration values)
        if name in _MISSING_REMOVALS and receiver is not None and module_of(receiver, modules) is None \
                and not (name == "interpolate" and node.args):
            text = receiver_text(source, node.func)
            if text:  # x.dropna().mean() -> x.mean(): the receiver stands in for the whole call
                yield make_mutation("drop_missing_handling", source, *span(source, node), text)
        elif name == "nan_to_num" and len(node.args) == 1 and not node.keywords \
                and (receiver is None or module_of(receiver, modules) == "numpy"):
            start, end = span(source, node.args[0])
            yield make_mutation("drop_missing_handling", source, *span(source, node),
                            bracket(source[start:end], node.args[0], 15))
    swaps = {name: [name[3:]] for name in _NAN_REDUCTIONS}
    yield from renames("drop_missing_handling", tree, source, swaps, allow_method=False,
                        modules_ok=lambda module, new: module == "numpy")


_NORMALISER_CALLS = {"sum", "nansum", "max", "nanmax", "amax", "norm", "std", "nanstd", "mean", "nanmean", "len",
                     "count", "total", "size", "ptp", "sqrt"}


_NORMALISER_WORDS = {"total", "totals", "sum", "sums", "norm", "norms", "normaliser", "normalizer", "std", "sd",
                     "sigma", "scale", "denom", "denominator", "count", "counts", "n", "max", "size", "shape"}


def _looks_like_normaliser(node: ast.AST, depth: int = 0) -> bool:
    """Whether a divisor looks like a normalising quantity (a sum, count, norm, spread...)."""
    if depth > 3:
        return False
    if isinstance(node, ast.Call):
        name, _ = callee(node)
        if name == "sqrt":  # standard errors: x / sqrt(n)
            return any(_looks_like_normaliser(arg, depth + 1) for arg in node.args)
        return name in _NORMALISER_CALLS
    if isinstance(node, (ast.Name, ast.Attribute)):
        word = node.id if isinstance(node, ast.Name) else node.attr
        parts = [p for p in re.split(r"[_\d]+", word.lower()) if p]
        return any(p in _NORMALISER_WORDS or p.startswith(("total", "norm")) for p in parts)
    if isinstance(node, ast.Subscript):
        return _looks_like_normaliser(node.value, depth + 1)
    if isinstance(node, ast.BinOp):  # x.max() - x.min(), n - 1
        return _looks_like_normaliser(node.left, depth + 1) or _looks_like_normaliser(node.right, depth + 1)
    return False


@mutation_operator("drop_normalisation", "Leave out the division that normalises a quantity.", scientific=True)
def _find_drop_normalisation(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _looks_like_normaliser(node.right):
            parts = binop_operands(source, node, node.left, node.right)
            if parts:
                # the dividend binds at least as tightly as the division did, so it can
                # stand in for it without brackets (its own brackets come along)
                yield make_mutation("drop_normalisation", source, *span(source, node), parts[0])
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and _looks_like_normaliser(node.value):
            yield make_mutation("drop_normalisation", source, *span(source, node), "pass")
