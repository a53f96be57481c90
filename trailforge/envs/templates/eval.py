"""Grade an answer file against the expected answer of one trailforge environment.

Usage: python eval.py ANSWER_JSON EXPECTED_JSON

ANSWER_JSON is the agent's answer: a JSON object mapping field names to values.
EXPECTED_JSON holds the fields, their types, expected values and tolerances. A number list
or table field may carry ``rtols``/``atols``: one tolerance per element (a list), or per cell
(a list of rows, ``null`` for a text cell), which then replace the field's single
``rtol``/``atol`` element by element; documents without them grade as before.
Missing values are one class: where the expected value is missing (null, NaN, or the text a program
prints for one, such as "NaN" or "<NA>", in a number field, list or a table column that holds numbers
elsewhere), any missing value in the answer matches it (null, NaN, "nan", "None", ...); a missing value
never matches a number.
Prints a JSON report; exits 0 when every field matches, 1 when any field is wrong,
2 when the answer cannot be read. Standard library only, so it runs anywhere.
"""
import json
import math
import sys


# How programs write a missing value: pandas' NaN, <NA> and NaT, Python's None, JSON's null, R's NA, and the
# empty cell of a CSV file. Compared without case and surrounding blanks.
MISSING_TEXTS = frozenset({"", "nan", "na", "<na>", "nat", "none", "null"})


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_missing(value, numeric=True):
    """Whether ``value`` is a missing value: null or NaN anywhere; one of MISSING_TEXTS only where a number
    belongs (``numeric``), so that a text field or column whose value is the word "None" stays that word."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return True
    return numeric and isinstance(value, str) and value.strip().lower() in MISSING_TEXTS


def _close(got, want, rtol, atol):
    if _is_missing(want):
        return _is_missing(got)
    return _is_number(got) and abs(got - want) <= atol + rtol * abs(want)


def _numeric_columns(rows):
    """Per column: whether it holds numbers, where every cell is a number or a missing value and one at least
    is a number. Only there does a printed "NaN" or "None" stand for a missing number."""
    width = max((len(row) for row in rows), default=0)
    cells = [[row[c] for row in rows if c < len(row)] for c in range(width)]
    return [any(_is_number(v) for v in column) and all(_is_number(v) or _is_missing(v) for v in column)
            for column in cells]


def _cell_match(got, want, rtol, atol, numeric=False):
    if _is_missing(want, numeric):
        return _is_missing(got)
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if isinstance(got, str):
            try:
                got = float(got)
            except ValueError:
                return False
        return _close(got, want, rtol, atol)
    return str(got).strip() == str(want).strip()


def _per_element(spec, key, shape):
    """The tolerance ``key`` of each element (number list) or cell (table rows), in the layout of ``shape``."""
    default = spec.get(key[:-1], 0.0)
    given = spec.get(key)
    if not isinstance(given, list) or len(given) != len(shape):
        given = None
    if shape and isinstance(shape[0], list):  # table rows
        rows = []
        for index, row in enumerate(shape):
            own = given[index] if given is not None else None
            if not isinstance(own, list) or len(own) != len(row):
                own = [None] * len(row)
            rows.append([default if t is None else t for t in own])
        return rows
    return [default if given is None or given[i] is None else given[i] for i in range(len(shape))]


def _rows_match(got_rows, want_rows, rtols, atols, numeric):
    return len(got_rows) == len(want_rows) and all(
        len(g) == len(w) and all(_cell_match(a, b, r, t, n) for a, b, r, t, n in zip(g, w, rt, at, numeric))
        for g, w, rt, at in zip(got_rows, want_rows, rtols, atols)
    )


def _row_key(row, numeric):
    """A sort key of a row that writes every missing value of a number column alike (before all numbers)."""
    return tuple("" if n and _is_missing(c) else ("%.6g" % c) if isinstance(c, (int, float))
                 and not isinstance(c, bool) else str(c) for c, n in zip(row, numeric))


def check_field(spec, got):
    kind, want = spec["type"], spec["value"]
    rtol, atol = spec.get("rtol", 0.0), spec.get("atol", 0.0)  # one tolerance for a whole scalar field
    if kind == "number":
        return _close(got, want, rtol, atol)
    if kind == "integer":
        return _is_number(got) and float(got).is_integer() and int(got) == want
    if kind == "boolean":
        return isinstance(got, bool) and got == want
    if kind == "string":
        return isinstance(got, str) and got.strip() == want.strip()
    if kind == "number_list":
        rtols, atols = _per_element(spec, "rtols", want), _per_element(spec, "atols", want)
        return isinstance(got, list) and len(got) == len(want) and all(
            _close(g, w, r, t) for g, w, r, t in zip(got, want, rtols, atols)
        )
    if kind == "table":
        if not isinstance(got, dict) or not isinstance(got.get("rows"), list):
            return False
        columns = got.get("columns")
        if not isinstance(columns, list) or sorted(map(str, columns)) != sorted(want["columns"]):
            return False
        order = [columns.index(c) for c in want["columns"]]
        try:
            rows = [[row[i] for i in order] for row in got["rows"]]
        except (TypeError, IndexError, KeyError):
            return False
        want_rows = want["rows"]
        numeric = _numeric_columns(want_rows)
        rtols, atols = _per_element(spec, "rtols", want_rows), _per_element(spec, "atols", want_rows)
        if _rows_match(rows, want_rows, rtols, atols, numeric):
            return True
        # Rows in any order: the expected rows are sorted together with their own tolerances.
        order = sorted(range(len(want_rows)), key=lambda i: _row_key(want_rows[i], numeric))
        return _rows_match(sorted(rows, key=lambda row: _row_key(row, numeric)), [want_rows[i] for i in order],
                           [rtols[i] for i in order], [atols[i] for i in order], numeric)
    return False


def grade(answer, expected):
    report = {"fields": {}, "passed": True}
    for spec in expected["fields"]:
        name = spec["name"]
        if name not in answer:
            ok, why = False, "missing"
        else:
            try:
                ok = bool(check_field(spec, answer[name]))
            except (TypeError, ValueError, KeyError, IndexError, OverflowError):
                ok = False
            why = "match" if ok else "mismatch"
        report["fields"][name] = why
        report["passed"] = report["passed"] and ok
    return report


def main(argv):
    if len(argv) != 3:
        print(json.dumps({"passed": False, "error": "usage: eval.py ANSWER_JSON EXPECTED_JSON"}))
        return 2
    with open(argv[2], encoding="utf-8") as fh:
        expected = json.load(fh)
    try:
        with open(argv[1], encoding="utf-8") as fh:
            answer = json.load(fh)
    except (OSError, ValueError) as exc:
        print(json.dumps({"passed": False, "error": "cannot read answer: %s" % exc}))
        return 2
    if not isinstance(answer, dict):
        print(json.dumps({"passed": False, "error": "the answer must be a JSON object"}))
        return 2
    report = grade(answer, expected)
    print(json.dumps(report, sort_keys=True))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
