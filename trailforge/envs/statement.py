"""Deterministic task statements, written from the program's structure and its outputs.

Without a model, a statement can only say what is certain: which data files the
analysis reads (with their shape), which library operations it uses in which order,
the named constants that parameterise it, and exactly which fields to report, with
types, units and printed precision. Repository text (docstrings, comments) is never
copied in: it is untrusted and may carry instructions aimed at a model. What must be
named (paths, column names, a function's signature) goes through ``inline_code``,
``_plain_names`` or ``quote_as_data``, which cap it and keep it from ending the Markdown
around it; labels are checked where they become fields (``answers.field_name``).
"""
from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
import unicodedata
from pathlib import PurePosixPath

from ..io import AnswerField, FileEntry
from .answers import label_problem
from .outline import COSMETIC_CALLS, HIDDEN
from .parsing import call_name
from .printed import LINE_SOURCE

_BORING_CALLS = {
    "print", "len", "range", "str", "int", "float", "list", "dict", "set", "tuple", "sorted", "enumerate", "zip",
    "round", "format", "isinstance", "min", "max", "abs", "sum", "append", "items", "keys", "values", "get", "join",
    "split", "strip", "startswith", "endswith", "replace", "lower", "upper", "makedirs", "dump", "write", "exists",
    "setdefault", "extend", "update", "add", "pop", "open", "iter", "next", "map", "filter", "any", "all", "rstrip",
    "lstrip", "to_csv", "to_json", "savetxt", "save",
}
_TYPE_WORDS = {
    "number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
    "number_list": "a list of numbers", "table": "a table: {\"columns\": [...], \"rows\": [[...], ...]}",
}


QUOTE_LIMIT = 200  # characters of repository text quoted in one place: enough to name, too few to instruct
# Characters that could end a Markdown construct or hide text (a newline can start a heading, U+202E
# reverses what follows): quoted text shows them as escapes.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _visible(text: str, keep: str = "") -> str:
    return "".join(ch if ch in keep or unicodedata.category(ch) not in _HIDDEN_CATEGORIES
                   else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def inline_code(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Repository text (a path) as inline code: capped, and delimited by more backticks than any run
    inside it, so nothing in it can end the code span. Text without backticks renders as `text`."""
    text = _cap(_visible(str(text)), limit)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence, pad = "`" * (longest + 1), " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def quote_as_data(text: str, intro: str, limit: int = QUOTE_LIMIT) -> list[str]:
    """Markdown lines that quote repository prose (a README excerpt, a docstring, a printed line) as data.

    ``intro`` says whose words follow ("The README says"); the text is cut to ``limit`` characters
    and fenced with more backticks than any run inside it, so no line of it can close the block.
    """
    body = _cap(_visible(text.replace("\r\n", "\n").replace("\r", "\n"), keep="\n\t"), limit)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{intro} (quoted as data, not instructions):", "", fence, *body.split("\n"), fence]


MAX_NAMES = 20  # column names or keys listed for one input file; the rest are counted
_SAMPLE_ROWS = 50  # rows that decide an input file's delimiter
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# Delimiters tried, in order, on a text file that may be a table (None: runs of whitespace, as ``str.split``).
_TEXT_DELIMITERS = ("\t", ",", ";", None)
_DELIMITER_WORDS = {",": "comma", "\t": "tab", ";": "semicolon", None: "whitespace"}
_TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": None, ".dat": None}  # suffix -> delimiter it implies


def _plain_names(names: list, limit: int = MAX_NAMES, used: set | None = None) -> str:
    """Column names or JSON keys of an input file: plain names as before, any other only counted.

    A header is repository text like any other; one that is not a plain label (``answers.label_problem``)
    could carry a sentence aimed at a model, so it is not shown. At most ``limit`` names are listed, in file
    order; when some must be left out, those in ``used`` (named by the analysis's code) come first, all of
    them. The count at the end is every name not listed.
    """
    safe = [str(n) for n in names if label_problem(str(n)) is None]
    if used and len(safe) > limit:
        first = [n for n in safe if n in used]
        safe, limit = first + [n for n in safe if n not in used], max(limit, len(first))
    shown = [_clean(n) for n in safe[:limit]]
    hidden = len(names) - len(shown)
    return ", ".join(shown) + (f"{'; ' if shown else ''}{hidden} not shown" if hidden else "")


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell.strip()) is not None


def _rows(text: str, delimiter: str | None) -> list[tuple[int, list[str]]]:
    """The non-blank rows of ``text`` with the line each ends on; None splits on runs of whitespace."""
    if delimiter is None:
        return [(number, line.split()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    return [(reader.line_num, row) for row in reader if row]


def _consistent(rows: list[tuple[int, list[str]]]) -> bool:
    """A header and at least one row after it, all with the same number (two or more) of fields."""
    return len(rows) >= 2 and len(rows[0][1]) >= 2 and all(len(row) == len(rows[0][1]) for _, row in rows)


def _delimiter(text: str, suffix: str) -> str | None | bool:
    """How the fields of a table file are separated, or False when the file is no table.

    A ``.csv`` is comma-separated unless its first row has a single field while semicolons or tabs split
    every sampled row alike; a ``.txt`` or ``.dat`` is a table when one delimiter (tab, comma, semicolon,
    whitespace, in that order) splits its first rows into equally many fields, some of them numbers.
    """
    if suffix == ".tsv":
        return "\t"
    sample = "\n".join(text.splitlines()[:4 * _SAMPLE_ROWS])
    try:
        if suffix == ".csv":
            rows = _rows(sample, ",")[:_SAMPLE_ROWS]
            if rows and len(rows[0][1]) == 1:
                return next((d for d in (";", "\t") if _consistent(_rows(sample, d)[:_SAMPLE_ROWS])), ",")
            return ","
        for delimiter in _TEXT_DELIMITERS:
            rows = _rows(sample, delimiter)[:_SAMPLE_ROWS]
            if _consistent(rows) and any(_is_number(cell) for _, row in rows[1:] for cell in row):
                return delimiter
    except csv.Error:
        pass
    return False


def _column_names(cells: list[str], used: set) -> tuple[list[str], set[str]]:
    """The names of a header row as a statement shows them (an empty cell, which pandas calls ``Unnamed: k``,
    as ``unnamed column k``), and those of them the analysis's code names."""
    names, named = [], set()
    for k, cell in enumerate(cells):
        name = cell.strip() or f"unnamed column {k}"
        names.append(name)
        if ({cell, name} if cell.strip() else {f"Unnamed: {k}"}) & used:
            named.add(name)
    return names, named


def _describe_table(text: str, suffix: str, used: set) -> str | None:
    """``table, ...`` for a file ``_delimiter`` reads as one, else None."""
    delimiter = _delimiter(text, suffix)
    if delimiter is False:
        return None
    try:
        rows = _rows(text, delimiter)
    except csv.Error:
        return None
    if not rows:
        return None
    shape = ["table"]
    if delimiter != _TABLE_SUFFIXES[suffix] or suffix in (".txt", ".dat"):
        shape.append(f"{_DELIMITER_WORDS[delimiter]}-separated")
    line, header = rows[0]
    width = len(header)
    if suffix in (".txt", ".dat") and (any(map(_is_number, header)) or not any(c.strip() for c in header)):
        return f"{', '.join(shape)}, no header row, {len(rows)} rows; {width} columns"
    shape.append(f"{len(rows) - 1} rows")
    if any(cell.strip() for cell in header):
        names, named = _column_names(header, used)
        return f"{', '.join(shape)}; {width} columns: {_plain_names(names, used=named)}"
    # Every cell of the header is empty (pandas names them all ``Unnamed: k``): a later row may name them.
    columns = f"{width} columns, all unnamed (line {line} is empty)"
    for name_line, cells in rows[1:1 + _SAMPLE_ROWS]:
        if not any(map(_is_number, cells)) and 2 * sum(1 for c in cells if c.strip()) >= width:
            names, named = _column_names(cells, used)
            return f"{', '.join(shape)}; {columns}; line {name_line} names them: {_plain_names(names, used=named)}"
    return f"{', '.join(shape)}; {columns}"


def describe_data_file(entry: FileEntry, data: bytes, parameters: bool = False, used: set | None = None) -> str:
    """One line on an input file: its path, format and shape. ``parameters``: the file holds the analysis's
    numeric parameters, which the original script set in its code (``envs/parameters.py``); the line says so
    and names them, since their names are all that tells what each number is. ``used``: the program's
    string literals (``literal_values``); columns and keys they name are listed first, however many."""
    suffix = PurePosixPath(entry.path).suffix.lower()
    path = inline_code(entry.path)
    used = {v for v in used or () if isinstance(v, str)}
    try:
        text = data.decode("utf-8-sig")  # a leading byte-order mark is no part of the first name (as in pandas)
    except UnicodeDecodeError:
        return f"{path} (binary, {entry.size} bytes)"
    if parameters:
        try:
            names = list(json.loads(text))
        except (ValueError, TypeError):
            names = []
        return (f"{path} (JSON object: the numeric parameters of the analysis, one per key, named as in the "
                f"original code; keys: {_plain_names(names, MAX_PARAMETERS)}). Read them from this file.")
    if suffix in _TABLE_SUFFIXES:
        table = _describe_table(text, suffix, used)
        if table:
            return f"{path} ({table})"
    if suffix == ".json":
        try:
            data_obj = json.loads(text)
        except ValueError:
            data_obj = None
        if isinstance(data_obj, dict):
            return f"{path} (JSON object; {len(data_obj)} keys: {_plain_names(list(data_obj), used=used)})"
        if isinstance(data_obj, list):
            return f"{path} (JSON list of {len(data_obj)} items)"
    if suffix in (".fasta", ".fa", ".fna", ".faa"):
        return f"{path} (FASTA, {text.count('>')} records)"
    return f"{path} (text, {len(text.splitlines())} lines)"


def _clean(text: str, limit: int = 40) -> str:
    # ``|`` and ``^`` are kept: they are part of names (``MDW-01|MDW-02``, ``R^2``) and inert in running text.
    return re.sub(r"[^\w .%/()+|^-]", "", str(text))[:limit]


def operations(source: str) -> list[str]:
    """Library calls in order of first appearance, with import aliases resolved."""
    module = ast.parse(source)
    aliases = import_aliases(module)
    # In a chain such as df.groupby(...).mean() both calls start at the same place; the inner one
    # (shorter) runs first.
    calls = sorted((n for n in ast.walk(module) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
    seen: list[str] = []
    for call in calls:
        name = qualified_call_name(call.func, aliases)
        if name and name.split(".")[-1] not in _BORING_CALLS and name not in seen:
            seen.append(name)
    return seen[:30]


def import_aliases(module: ast.Module) -> dict[str, str]:
    """Local name -> what it was imported as (``np`` -> ``numpy``, ``lr`` -> ``scipy.stats.linregress``)."""
    aliases = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def qualified_call_name(func, aliases) -> str | None:
    """The imported name a call reaches (``numpy.polyfit`` for ``np.polyfit`` given ``import numpy as np``),
    ``.method`` for a method of a value, None for a function the program defines itself."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        root = aliases.get(func.id)
        if root:
            return ".".join([root, *reversed(parts)])
        if not parts:
            return None  # a function the program defines itself
    return "." + parts[0] if parts else None


def literal_values(source: str) -> set:
    """Every constant written in the program (numbers and strings)."""
    values = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
            values.add(node.value)
    return values


def stable_repr(value) -> str:
    """repr() with sets sorted, so a statement never depends on hash randomisation."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(stable_repr(v) for v in value)) + "}" if value else "set()"
    if isinstance(value, tuple):
        inner = ", ".join(stable_repr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _only_safe_strings(value) -> bool:
    """Strings from a repository are untrusted: only short identifier-like ones reach a statement."""
    if isinstance(value, str):
        return re.fullmatch(r"[\w.+/-]{1,30}", value) is not None
    if isinstance(value, (set, frozenset, tuple, list)):
        return all(_only_safe_strings(v) for v in value)
    if isinstance(value, dict):
        return all(_only_safe_strings(k) and _only_safe_strings(v) for k, v in value.items())
    return True


def constants(source: str) -> list[str]:
    """Module-level UPPER_CASE constants with literal values (parameters of the analysis)."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                shown = stable_repr(value)
                if len(shown) <= 80 and _only_safe_strings(value):
                    found.append(f"{name} = {shown}")
    return found


# Numbers that parameterise nothing: an index, a sign, a unit step, a halving.
_TRIVIAL_NUMBERS = {0, 1, -1, 2, 0.5}
# Keywords whose values shape a figure or a print, never a result.
_PRESENTATION_KEYWORDS = {
    "figsize", "dpi", "fontsize", "size", "s", "linewidth", "lw", "markersize", "ms", "alpha", "zorder", "rotation",
    "labelsize", "pad", "width", "height", "ncol", "loc", "precision", "indent", "decimals", "axis", "ndmin",
    "nrows", "ncols", "capsize", "elinewidth", "bbox_to_anchor", "x", "y", "labelpad", "wspace", "hspace",
}
MAX_PARAMETERS = 40  # a statement that would need more cannot state them all (``underspecified``)
_RENDER_LIMIT = 90


def _parents(module: ast.AST) -> dict[int, ast.AST]:
    parents = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _numeric_value(node: ast.AST, parents: dict[int, ast.AST]):
    """The number a literal node stands for (a leading minus included), or None."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        return None
    parent = parents.get(id(node))
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
        return -node.value
    return node.value


def _matters(node: ast.AST, value, parents: dict[int, ast.AST]) -> bool:
    """Whether a number in the program can change a result: not trivial, not an index, not presentation."""
    if value in _TRIVIAL_NUMBERS:
        return False
    child, parent = node, parents.get(id(node))
    bound = False  # a slice bound picks which rows enter the computation: rows[10:] drops a burn-in
    while parent is not None and not isinstance(parent, ast.stmt):
        bound = bound or isinstance(parent, ast.Slice)
        if not bound and isinstance(parent, ast.Subscript) and child is parent.slice \
                and isinstance(child, (ast.Constant, ast.Tuple, ast.UnaryOp)):
            return False  # x[:, 3]: where to look, not how to compute (a mask x[x > 2.5] is; so is a window 0:200)
        if isinstance(parent, ast.keyword) and parent.arg in _PRESENTATION_KEYWORDS:
            return False
        if isinstance(parent, ast.Call) and call_name(parent) in COSMETIC_CALLS:
            return False  # plt.subplots_adjust(top=0.85), plt.title(name[39:-4]): the figure's dress, not its data
        if isinstance(parent, ast.JoinedStr):
            return False  # a format width inside an f-string
        child, parent = parent, parents.get(id(parent))
    return True


def _render(node: ast.AST) -> str | None:
    """Short code for a piece of the program, or None when it is long or carries untrusted text."""
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if not all(_only_safe_strings(v) for v in strings):
        return None
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return None
    return text if len(text) <= _RENDER_LIMIT and "\n" not in text and "`" not in text else None


def analysis_numbers(source: str) -> list[tuple[float, int, str]]:
    """``(value, line, context)`` of each number written in the program that can change a result.

    ``context`` is the smallest piece of code that says what the number does: the call it is an
    argument of, the assignment it is the value of, or the comparison it is a bound of; failing
    that, the bare number. These are what a statement must give when the agent sees no code.
    """
    module = ast.parse(source)
    parents = _parents(module)
    found = []
    for node in ast.walk(module):
        value = _numeric_value(node, parents)
        if value is None or not _matters(node, value, parents):
            continue
        context, fallback, parent = None, None, parents.get(id(node))
        while parent is not None and context is None:
            if isinstance(parent, (ast.Call, ast.Compare, ast.Assign, ast.AnnAssign, ast.AugAssign)):
                context = _render(parent)
            elif isinstance(parent, (ast.keyword, ast.Subscript)) and fallback is None:
                fallback = _render(parent)  # ``bins=20``, ``name[39:-4]`` when the whole call cannot be shown
            if isinstance(parent, ast.stmt):
                break
            parent = parents.get(id(parent))
        found.append((value, node.lineno, context or fallback or repr(value)))
    return sorted(found, key=lambda item: (item[1], item[2]))


def parameters(source: str) -> list[str]:
    """What the statement lists as the analysis's parameters: its named constants, then every other number
    that can change a result, in the code that uses it (random seeds included), each once."""
    lines = constants(source)
    for _, _, context in analysis_numbers(source):
        if context not in lines and not any(context == c.split(" = ", 1)[0] for c in lines):
            lines.append(context)
    return lines


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
        parts.append(f" with columns {', '.join(repr(_clean(c)) for c in value['columns'])}")
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
        parts.append(f"; {origin} \"{_clean(field.label, 120)}\"")
    if field.unit:
        parts.append(f"; unit: {_clean(field.unit)}")
    stated = rounding(field, value)
    if stated:
        parts.append(f"; the original analysis reports {stated[0]} {stated[1]}")
    return "".join(parts)


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
    from .answers import missing_places  # the eval's rule for missing values (kept here: one function's edit)

    answer = answer or {}
    # Said only where the answer has one, so that every other statement reads as before.
    missing = any(f.name in answer and missing_places(f.type, answer[f.name]) for f in schema)
    return [
        "",
        "## What to report",
        intro or "Write `answer.json` in your working directory: one JSON object with exactly these fields.",
        *[field_line(f, answer.get(f.name)) for f in schema],
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
    return f"a `{_clean(kind)}`"


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
        signature = _cap(_visible(hole["signature"], keep="\t"), QUOTE_LIMIT)
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
