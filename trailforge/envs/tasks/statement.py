"""Deterministic task statements, written from the program's structure and its outputs.

Without a model, a statement can only say what is certain: which data files the analysis reads (with their
shape, ``data_files``), which library operations it uses in which order and the numbers that parameterise it
(``analysis``), and exactly which fields to report, with types, units and printed precision. Repository text
(docstrings, comments) is never copied in: it is untrusted and may carry instructions aimed at a model. What
must be named (paths, column names, a function's signature) goes through ``untrusted_text``, which caps it and
keeps it from ending the Markdown around it; labels are checked where they become fields
(``answers.field_name``).
"""
from __future__ import annotations

import math
import re

from ...io import AnswerField
from ..analysis import MAX_PARAMETERS, operations, parameters
from ..outline import HIDDEN
from ..printed import LINE_SOURCE
from ..untrusted_text import QUOTE_LIMIT, cap, clean, inline_code, visible

_TYPE_WORDS = {
    "number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
    "number_list": "a list of numbers", "table": "a table: {\"columns\": [...], \"rows\": [[...], ...]}",
}


def field_needles(field: AnswerField, value, workspace_text: str) -> list[str]:
    """The printed forms of one field's value that would give it away (``verify`` looks for them in the
    statement and the workspace; ``tasks`` drops a field whose value its own statement states)."""
    if field.type == "number" and isinstance(value, float):
        if len(re.sub(r"[^0-9]", "", f"{abs(value):g}").lstrip("0")) < 3:
            return []
        needles = [repr(value)]
        if field.decimals:
            needles.append(f"{value:.{field.decimals}f}")
            needles.append(f"{value:.{field.decimals}e}")  # as printed in scientific notation
        return needles
    if field.type == "integer" and isinstance(value, int) and abs(value) >= 1000:
        return [str(value)]
    if field.type == "string" and isinstance(value, str) and len(value) >= 3 and value not in workspace_text:
        return [value]  # a category present in the data is a choice, not a leak
    return []


def contains_number(text: str, needle: str) -> bool:
    if not any(c.isdigit() for c in needle):
        return re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", text) is not None
    return re.search(rf"(?<![\w.]){re.escape(needle)}(?![\w])", text) is not None


def prose(statement: str) -> str:
    """What a statement says before its list of fields (field labels may name other values)."""
    return statement.split("\n## What to report", 1)[0]


def stated_fields(statement: str, schema: list[AnswerField], answer: dict, workspace_text: str = "") -> list[str]:
    """Fields whose value the statement's prose already gives: a count of points equal to the line count of
    the data file it describes, the size of a series a Completion hole must define. Asking for them tests
    nothing, and ``verify`` would reject the whole task as an answer leak."""
    text = prose(statement)
    return [f.name for f in schema
            if any(contains_number(text, n) for n in field_needles(f, answer.get(f.name), workspace_text))]


_PLOT_LABEL = re.compile(r"[^\w .,'%/()+|^-]")


def field_line(field: AnswerField, value=None) -> str:
    parts = [f"- `{field.name}`: {_TYPE_WORDS[field.type]}"]
    if field.type == "table" and isinstance(value, dict) and value.get("columns"):
        parts.append(f" with columns {', '.join(repr(clean(c)) for c in value['columns'])}")
    if field.type == "number_list" and isinstance(value, list):
        order = "in the order the figure draws them" if field.source.startswith("plot:") else \
            "in the order the analysis produces them"
        parts.append(f" of {len(value)} numbers, {order}")
    if field.source.startswith("plot:"):
        # Built by plots.py from fixed words and labels that passed label_problem; the quotes around them stay.
        parts.append(f"; read off the figure the analysis draws: the {_PLOT_LABEL.sub('', field.label)[:160]}")
    elif field.source == "result":
        if "[" in field.label:  # one entry of a mapping the analysis builds
            entry = re.sub(r"[^\w .%/()+|'\[\]-]", "", field.label)[:120]
            parts.append(f"; the entry `{entry}`")
    elif field.source.startswith(LINE_SOURCE):
        # The label is the printed expression (a safe label, printed/sites.py), and which of its values.
        repeated = re.fullmatch(r"(.*) \(value (\d+)\)", field.label)
        # Quoted as it is: it passed label_problem (no backtick, no control), and `max(a, b)` keeps its comma.
        expression = (repeated.group(1) if repeated else field.label)[:120]
        parts.append(f"; the number the analysis prints on a line of its own with `print({expression})`"
                     + (f" (the {_ordinal(int(repeated.group(2)))} number that call prints)" if repeated else ""))
    else:
        origin = "printed as" if field.source == "stdout" else "reported as"
        parts.append(f"; {origin} \"{clean(field.label, 120)}\"")
    if field.unit:
        parts.append(f"; unit: {clean(field.unit)}")
    stated = rounding(field, value)
    if stated:
        count, unit = stated
        parts.append(f"; the original analysis reports {count} {unit[:-1] if count == 1 else unit}")
    return "".join(parts)


def _alike_order(schema: list[AnswerField], answer: dict) -> dict[str, tuple[int, int]]:
    """``(position, of how many)`` of each field whose line would read exactly like another's: a label printed
    twice (``Variance`` for two groups) gives ``variance`` and ``variance_2``, named in the order the analysis
    output them. Without the position, which value goes in which field is a guess."""
    groups: dict[str, list[AnswerField]] = {}
    for field in schema:
        groups.setdefault(field_line(field, answer.get(field.name)).split(": ", 1)[1], []).append(field)
    order: dict[str, tuple[int, int]] = {}
    for fields in groups.values():
        if len(fields) > 1:
            ranked = sorted(fields, key=lambda f: (_repeat_number(f.name), f.name))
            order.update({f.name: (i, len(fields)) for i, f in enumerate(ranked, start=1)})
    return order


def _repeat_number(name: str) -> int:
    """The number ``answers`` appends to a name already taken (``variance_2``); 1 for the first."""
    match = re.fullmatch(r".*_(\d+)", name)
    return int(match.group(1)) if match else 1


def _alike_note(place: tuple[int, int] | None) -> str:
    if place is None:
        return ""
    return (f"; the {_ordinal(place[0])} of the {place[1]} fields described alike here, in the order the analysis "
            "outputs them")


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def rounding(field: AnswerField, value=None) -> tuple[int, str] | None:
    """How precisely the original analysis printed a number: ``(4, "decimal places")`` for ``0.4312``,
    ``(5, "significant digits")`` for ``2.8144e-03``; None when it says nothing (an integer, a JSON value).

    ``answers.parse_scalar`` counts the decimals of the mantissa, and the resolution (half a unit in the last
    printed place) tells the two notations apart: for fixed-point it is half of 10^-decimals."""
    if field.type != "number" or field.decimals is None:
        return None
    if not field.resolution or math.isclose(field.resolution, 0.5 * 10.0 ** -field.decimals, rel_tol=1e-6):
        return (field.decimals, "decimal places") if field.decimals else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value and math.isfinite(value):
        # digits from the leading one down to the last printed place
        return math.floor(math.log10(abs(value))) - round(math.log10(2 * field.resolution)) + 1, "significant digits"
    return field.decimals + 1, "significant digits"


def _title(verb: str, repo_id: str, discipline: str) -> tuple[str, str, str]:
    field_name = discipline.replace("_", " ")
    article = "An" if field_name[:1].lower() in "aeiou" else "A"
    return f"# {verb} `{repo_id}` ({field_name})", field_name, article


def _data_section(data: list[str], heading: str = "Input data (in your working directory)") -> list[str]:
    return ["", f"## {heading}", *[f"- {d}" for d in data]]


def _operations_section(program_sources: list[str], heading: str) -> list[str]:
    ops: list[str] = []
    params: list[str] = []
    for source in program_sources:
        ops += [op for op in operations(source) if op not in ops]
        params += [p for p in parameters(source) if p not in params]
    lines = []
    if ops:
        lines += ["", f"## {heading}", "It uses these operations, in this order of first use:",
                  ", ".join(f"`{op}`" for op in ops) + "."]
    if params:
        lines += ["", "## Parameters of the original analysis", *[f"- `{p}`" for p in params[:MAX_PARAMETERS]]]
    return lines


def _report_section(schema: list[AnswerField], answer: dict | None = None, intro: str | None = None) -> list[str]:
    from ..answers import missing_places  # the eval's rule for missing values (kept here: one function's edit)

    answer = answer or {}
    # Said only where the answer has one, so that every other statement reads as before.
    missing = any(f.name in answer and missing_places(f.type, answer[f.name]) for f in schema)
    order = _alike_order(schema, answer)
    return [
        "",
        "## What to report",
        intro or "Write `answer.json` in your working directory: one JSON object with exactly these fields.",
        *[field_line(f, answer.get(f.name)) + _alike_note(order.get(f.name)) for f in schema],
        "",
        "Numbers are graded with a small relative tolerance: report them at full precision, without rounding further "
        "than the original analysis does. Strings must match exactly. Tables may list rows in any order."
        + (" Write a missing value (NaN) as null." if missing else "")
        + (" Figures are counted in the order the analysis creates them, and the axes of a figure in the order "
           "they are added to it." if any(f.source.startswith("plot:") for f in schema) else ""),
    ]


def reproduction_statement(repo_id: str, discipline: str, script: str, data: list[str], program_sources: list[str],
                           schema: list[AnswerField], answer: dict | None = None,
                           outline: list[str] | None = None) -> str:
    """``outline``: the program's steps (``envs/outline.py``); given, they replace the list of operations and
    parameters, which they contain, so every choice that decides a result is stated."""
    title, field_name, article = _title("Reproduce an analysis from", repo_id, discipline)
    script = inline_code(script)  # a repository path, as the statement shows it
    if outline:
        procedure = ["", "## How the original analysis proceeds",
                     "Its steps, in order, as code (comments and text that does not affect a result left out; "
                     f"`{HIDDEN}` marks text not shown):", *outline]
    else:
        procedure = _operations_section(program_sources, "How the original analysis proceeds")
    lines = [
        title,
        "",
        f"{article} {field_name} analysis (originally the script {script}) reads the data below. "
        "Reproduce it from the data alone: write your own program that follows the steps below and report "
        "its results.",
        *_data_section(data),
        *procedure,
        *_report_section(schema, answer),
    ]
    return "\n".join(lines) + "\n"


def _describe_value(summary: dict | None) -> str:
    """Type and shape of an observed value, never the value itself."""
    if not summary:
        return "a value"
    kind = summary.get("type")
    if kind == "float":
        return "a number"
    if kind == "int":
        return "an integer"
    if kind == "bool":
        return "true or false"
    if kind == "str":
        return "a string"
    shape = summary.get("shape")
    if kind == "DataFrame" and shape:
        return f"a table of {shape[0]} rows and {shape[1]} columns"
    if kind == "Series" and shape:
        return f"a series of {shape[0]} values ({_dtype(summary)})"
    if kind == "ndarray" and shape:
        return f"an array of shape {' x '.join(str(s) for s in shape)} ({_dtype(summary)})"
    if kind in ("list", "tuple", "dict", "set") and "len" in summary:
        noun = {"dict": "mapping", "set": "set"}.get(kind, "list")
        return f"a {noun} of {summary['len']} items"
    if kind == "callable":
        return "a function"
    return f"a `{clean(kind)}`"


def _dtype(summary: dict) -> str:
    # The traced dtype is the program's text: a structured dtype carries field names it chose.
    dtype = str(summary.get("dtype", "?"))
    return dtype if re.fullmatch(r"[\w<>|\[\], ]{1,40}", dtype) else "?"


def subflow_statement(repo_id: str, discipline: str, script: str, data: list[str], target: str,
                      target_summary: dict | None, steps, program_sources: list[str], schema: list[AnswerField],
                      answer: dict, outline: list[str] | None = None) -> str:
    """``outline``: the slice's own steps (``envs/outline.py``); given, they replace the list of the names each
    step defines and the parameters, so every choice between the data and the target is stated."""
    title, field_name, article = _title("A focused question on an analysis from", repo_id, discipline)
    script = inline_code(script)  # a repository path, as the statement shows it
    lines = [
        title,
        "",
        f"{article} {field_name} analysis (originally the script {script}) turns the data below into several "
        f"results. This task asks for one intermediate result only: `{target}`, {_describe_value(target_summary)}. "
        "Compute it from the data; the rest of the analysis does not matter here.",
        *_data_section(data),
        "",
        f"## Steps of the original analysis that lead to `{target}`",
    ]
    if outline:
        lines += ["In order, as code (comments and text that does not affect a "
                  f"result left out; `{HIDDEN}` marks text not shown):", *outline, *_report_section(schema, answer)]
        return "\n".join(lines) + "\n"
    for number, (defined, read, ops) in enumerate(steps, start=1):
        line = f"{number}. `{', '.join(defined)}`"
        if read:
            line += f" from {', '.join(f'`{r}`' for r in read)}"
        if ops:
            line += f" using {', '.join(f'`{o}`' for o in ops[:6])}"
        lines.append(line)
    params = list(dict.fromkeys(p for source in program_sources for p in parameters(source)))
    if params:
        lines += ["", "## Parameters of the original analysis", *[f"- `{p}`" for p in params[:MAX_PARAMETERS]]]
    lines += _report_section(schema, answer)
    return "\n".join(lines) + "\n"


def completion_statement(repo_id: str, discipline: str, script: str, data: list[str], hole: dict,
                         program_files: list[str], schema: list[AnswerField], answer: dict) -> str:
    title, field_name, article = _title("Complete a missing step in an analysis from", repo_id, discipline)
    script = inline_code(script)  # a repository path, as the statement shows it
    files = ", ".join(inline_code(p) for p in program_files)
    lines = [
        title,
        "",
        f"{article} {field_name} analysis is in your working directory ({files}; run {script}), next to the data "
        "it reads. One step of its code was removed and replaced by a line that raises `NotImplementedError`.",
        "",
        "## The missing step",
    ]
    if hole["kind"] == "function":
        # Shown as an indented code block, which nothing within one line can end: the signature (it may
        # hold a string default the repository wrote) needs only its length capped and its controls shown.
        signature = cap(visible(hole["signature"], keep="\t"), QUOTE_LIMIT)
        lines += [
            f"The body of function `{hole['name']}` in {inline_code(hole['path'])} is missing. Its signature is kept:",
            "",
            f"    {signature}",
            "",
            f"While the original analysis ran, it was called {hole['calls']} time(s). On its first call it received "
            + (", ".join(f"`{a}`: {_describe_value(v)}" for a, v in hole["args"].items()) or "no arguments")
            + f", and it returned {_describe_value(hole['returns'])}.",
        ]
        if hole.get("docstring"):
            lines.append("Its docstring, kept in the code, says what it is for.")
        if hole.get("operations"):
            lines.append("The original body used " + ", ".join(f"`{o}`" for o in hole["operations"][:8]) + ".")
    else:
        lines += [
            f"In {inline_code(hole['path'])}, the statement that began at line {hole['line']} is missing"
            + (f" (inside function `{hole['scope']}`)" if hole["scope"] != "<module>" else "") + ".",
            "It must define " + ", ".join(f"`{n}` ({_describe_value(v)})" for n, v in hole["defines"].items())
            + (", from " + ", ".join(f"`{n}`" for n in hole["reads"]) if hole["reads"] else "")
            + ". Later statements use it.",
        ]
        if hole["operations"]:
            lines.append("The original used " + ", ".join(f"`{o}`" for o in hole["operations"][:6]) + ".")
    if hole.get("numbers"):
        lines.append("The removed code wrote these numbers: " + ", ".join(f"`{v!r}`" for v in hole["numbers"])
                     + ".")
    lines += [
        "",
        "Implement the missing step so that the analysis runs to the end and gives the results of the original "
        "analysis. Change nothing else.",
        *_data_section(data, "Input data"),
        *_report_section(schema, answer, "Run the completed analysis and write its results to `answer.json` in your "
                                         "working directory: one JSON object with exactly these fields."),
    ]
    return "\n".join(lines) + "\n"


def correction_statement(repo_id: str, discipline: str, script: str, data: list[str], symptoms: dict[str, str],
                         program_files: list[str], schema: list[AnswerField], answer: dict,
                         unclaimed: frozenset[str] | set[str] = frozenset()) -> str:
    """``unclaimed``: fields the defect moved too little to call wrong; the statement does not call them correct
    either (``verify`` checks every claim with tolerances that may be tighter than the bar for "wrong")."""
    title, field_name, article = _title("Find and fix a defect in an analysis from", repo_id, discipline)
    script = inline_code(script)  # a repository path, as the statement shows it
    files = ", ".join(inline_code(p) for p in program_files)
    wrong = [f"- `{name}` is wrong ({symptom})." if symptom else f"- `{name}` is wrong." for name, symptom in
             symptoms.items()]
    right = [f.name for f in schema if f.name not in symptoms and f.name not in unclaimed]
    lines = [
        title,
        "",
        f"{article} {field_name} analysis is in your working directory ({files}; run {script}), next to the data "
        "it reads. It runs to the end, but one line of its code contains a scientific or numerical error, so some "
        "of its results are wrong.",
        "",
        "## Symptom",
        "Compared with a correct analysis of the same data:",
        *wrong,
    ]
    if right:
        lines.append("These results are already correct: " + ", ".join(f"`{n}`" for n in right[:20])
                     + (" and others." if len(right) > 20 else "."))
    lines += [
        "",
        "Find the defect, fix it with the smallest change that makes the analysis scientifically correct, run the "
        "corrected analysis and report its results.",
        *_data_section(data, "Input data"),
        *_report_section(schema, answer, "Write the corrected analysis's results to `answer.json` in your working "
                                         "directory: one JSON object with exactly these fields."),
    ]
    return "\n".join(lines) + "\n"
