"""Grade an answer file against the expected answer of one trailforge environment.

Usage: python eval.py ANSWER_JSON EXPECTED_JSON

ANSWER_JSON is the agent's answer: a JSON object mapping field names to values.
EXPECTED_JSON holds the fields, their types, expected values and tolerances.
Prints a JSON report; exits 0 when every field matches, 1 when any field is wrong,
2 when the answer cannot be read. Standard library only, so it runs anywhere.
"""
import json
import math
import sys


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _close(got, want, rtol, atol):
    return _is_number(got) and abs(got - want) <= atol + rtol * abs(want)


def _cell_match(got, want, rtol, atol):
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if isinstance(got, str):
            try:
                got = float(got)
            except ValueError:
                return False
        return _close(got, want, rtol, atol)
    return str(got).strip() == str(want).strip()


def _rows_match(got_rows, want_rows, rtol, atol):
    return len(got_rows) == len(want_rows) and all(
        len(g) == len(w) and all(_cell_match(a, b, rtol, atol) for a, b in zip(g, w))
        for g, w in zip(got_rows, want_rows)
    )


def _row_key(row):
    return tuple(("%.6g" % c) if isinstance(c, (int, float)) and not isinstance(c, bool) else str(c) for c in row)


def check_field(spec, got):
    kind, want = spec["type"], spec["value"]
    rtol, atol = spec.get("rtol", 0.0), spec.get("atol", 0.0)
    if kind == "number":
        return _close(got, want, rtol, atol)
    if kind == "integer":
        return _is_number(got) and float(got).is_integer() and int(got) == want
    if kind == "boolean":
        return isinstance(got, bool) and got == want
    if kind == "string":
        return isinstance(got, str) and got.strip() == want.strip()
    if kind == "number_list":
        return isinstance(got, list) and len(got) == len(want) and all(
            _close(g, w, rtol, atol) for g, w in zip(got, want)
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
        if _rows_match(rows, want["rows"], rtol, atol):
            return True
        return _rows_match(sorted(rows, key=_row_key), sorted(want["rows"], key=_row_key), rtol, atol)
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
