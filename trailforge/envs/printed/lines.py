"""Numbers in lines that are neither in a block nor ``Label: value`` lines, named by the words before them,
and ``read_printed``, which puts blocks and lines together in stdout order."""
from __future__ import annotations

import re

from .blocks import _Block
from .values import Reading, _NUMBER_TEXT, _Number, _number, is_noise


# ---------------------------------------------------------------------------------------------------- lines

_TOKEN = re.compile(
    r"(?P<num>(?<![\w.^/\-,])[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?![\w^/\-]|[.,:]\d))"
    r"|(?P<word>[A-Za-z][\w^'/+-]*(?:\.\w+)*)"
    r"|(?P<other>\S)"
)
# Words between a label and its number ("slope is 2.3", "R^2 = 0.9").
_LINKS = frozenset({"is", "are", "was", "were", "be", "equals", "equal", "of", "to", "at", "approximately",
                    "about", "around", "roughly", "~", "=", ":", "\u2248", "reached", "becomes", "gives"})
# Words that end a label on its left ("with R^2", "and the slope").
_STOPS = frozenset({
    "a", "an", "and", "or", "but", "with", "without", "we", "i", "it", "its", "this", "that", "these", "those",
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "which", "where", "when", "then", "so",
    "after", "before", "from", "to", "at", "by", "on", "using", "gives", "gave", "yields", "yielded", "found",
    "got", "get", "estimated", "computed", "obtained", "equals", "while", "whereas", "than", "as", "vs",
    "versus", "over", "under", "between", "into", "total", "there", "here", "our", "their", "his", "her",
    "if", "not", "no", "all", "each", "every", "per", "out",
})
# Words allowed inside a label but not at its ends ("depth of the lake").
_EDGES = frozenset({"the", "of", "in", "for", "on", "at", "a", "an"})
_UNITS = frozenset({
    "s", "ms", "us", "ns", "min", "h", "hr", "hrs", "d", "yr", "m", "cm", "mm", "km", "nm", "um", "g", "kg", "mg",
    "ug", "K", "C", "degC", "degF", "Pa", "kPa", "MPa", "GPa", "hPa", "bar", "mbar", "atm", "J", "kJ", "MJ", "eV",
    "keV", "MeV", "W", "kW", "MW", "V", "mV", "A", "mA", "Hz", "kHz", "MHz", "GHz", "L", "mL", "uL", "mol",
    "mmol", "umol", "nmol", "M", "mM", "uM", "nM", "pM", "N", "kN", "ppm", "ppb", "dB", "rad", "deg", "sr", "T",
    "Ohm", "ohm", "nt", "bp", "kb", "kbp", "Mb", "Da", "kDa", "px", "AU", "au", "cal", "kcal", "Bq", "Gy", "Sv",
    "ha", "mph", "kt", "pc", "kpc", "Mpc", "ly", "sigma", "dex", "mag", "ka", "Ma", "Ga", "kyr", "Myr", "Gyr",
})
# One factor of a unit: a known unit with an optional power (s, s^-1, m2); factors join with / * or .
_UNIT_FACTOR = re.compile(r"(?P<name>[A-Za-z]{1,5})(?:\^?-?\d)?")


def _is_unit(token: str) -> bool:
    if token in _UNITS:
        return True
    factors = re.split(r"[/*.]", token)
    return len(factors) <= 4 and all(
        f.isdigit() and len(factors) > 1 or bool((m := _UNIT_FACTOR.fullmatch(f)) and m.group("name") in _UNITS)
        for f in factors)


def _is_year(number: _Number) -> bool:
    return number.integer and 1800 <= number.value <= 2100


def line_readings(line: str) -> list[Reading]:
    """Every number in one printed line that words just before it name."""
    if is_noise(line):
        return []
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(_PLUS_MINUS.sub(" \u00b1 ", line))]
    out = []
    for k, (kind, text) in enumerate(tokens):
        if kind != "num":
            continue
        number = _number(text)
        before = tokens[k - 1] if k else None
        if before and before[1] == "\u00b1":
            continue  # the uncertainty of the number before it: read with that number
        uncertainty = None
        if k + 2 < len(tokens) and tokens[k + 1][1] == "\u00b1" and tokens[k + 2][0] == "num":
            uncertainty, tokens_after = _number(tokens[k + 2][1]), k + 3  # "9.98 +- 0.83 ms^-2"
        else:
            tokens_after = k + 1
        after = tokens[tokens_after] if tokens_after < len(tokens) else None
        if number is None or _is_year(number):
            continue
        if (before and before[0] == "num") or (after and after[0] == "num"):
            continue  # "x 1 2": which number the label names is not certain
        if after and after[1] == "," and k + 2 < len(tokens) and tokens[k + 2][0] == "num":
            continue  # "1, 2, 3": a list
        unit, j = None, k - 1
        if after and after[0] == "word" and after[1].lower() not in _STOPS and after[1].lower() not in _LINKS:
            if not _is_unit(after[1]):
                continue  # "5721 rows", "3 species": a count of things, not a named result
            unit = after[1]
        elif after and after[1] == "%":
            unit = "%"
        while j >= 0 and (tokens[j][1].lower() in _LINKS):
            j -= 1
        j = _before_aside(tokens, j)
        if j >= 2 and tokens[j][1] == ")" and tokens[j - 2][1] == "(" and tokens[j - 1][0] == "word" and unit is None:
            unit, j = tokens[j - 1][1], j - 3
            while j >= 0 and tokens[j][1].lower() in _LINKS:
                j -= 1
        words = []
        while j >= 0 and tokens[j][0] == "word" and tokens[j][1].lower() not in _STOPS:
            words.insert(0, tokens[j][1])
            j -= 1
        while words and words[0].lower() in _EDGES:
            words.pop(0)
        while words and words[-1].lower() in _EDGES:
            words.pop()
        if not words:
            continue
        if j >= 0 and tokens[j][0] == "num":
            continue  # "3 mean 2.5": the words may belong to the number before them
        label = " ".join(words)
        kind_, value = ("integer", int(text)) if number.integer else ("number", number.value)
        out.append(Reading((label,), kind_, value, label, checked=(unit,) if unit else (), unit=unit,
                           decimals=number.decimals, resolution=None if number.integer else number.resolution))
        if uncertainty is not None:
            value = int(uncertainty.value) if uncertainty.integer else uncertainty.value
            out.append(Reading((label, "uncertainty"), "integer" if uncertainty.integer else "number", value,
                               f"uncertainty of {label}", checked=(unit,) if unit else (), unit=unit,
                               decimals=uncertainty.decimals,
                               resolution=None if uncertainty.integer else uncertainty.resolution))
    return out


# "+-", "+/-", "±" and TeX's "\pm" between a value and its uncertainty, read as one token.
_PLUS_MINUS = re.compile(r"\s*(?:\+/-|\+-|\u00b1|\\pm)\s*")


def _before_aside(tokens: list[tuple[str, str]], j: int) -> int:
    """Skip an aside between commas just before a value ("g, calculated from the gradient, is 9.8"):
    the label is the words before it. Only an aside of a few plain words is skipped."""
    if j < 0 or tokens[j][1] != ",":
        return j
    i = j - 1
    while i >= 0 and tokens[i][0] == "word" and j - i <= 8:
        i -= 1
    if i >= 1 and i < j - 1 and tokens[i][1] == ",":
        return i - 1
    return j


_LABEL_LINE = re.compile(r"^\s*(?P<label>[A-Za-z][^\n]*?)\s*[:=]\s*$")
# A number standing on its own in a heading ("Results for run 2", "T = 300 K"): a value, not part of a name.
# Digits glued to letters are names ("MS1", "CO2", "log10", "MS2 - MS1").
_LOOSE_NUMBER = re.compile(rf"(?<![\w.]){_NUMBER_TEXT.pattern}(?![\w.])")


def block_label(line: str | None) -> str | None:
    """The label a line printed just before a block gives it (``Coefficients:``), or None."""
    if line is None or not line.strip() or is_noise(line) or _LOOSE_NUMBER.search(line):
        return None
    match = _LABEL_LINE.match(line)
    if match:
        return match.group("label").strip()
    text = line.strip()
    if len(text.split()) <= 6 and re.fullmatch(r"[A-Za-z][\w ()/%^'+-]*", text):
        return text
    return None


def read_printed(lines: list[str], blocks: list[_Block], taken: set[int], max_table_rows: int,
                 line_names: dict[int, str] | None = None) -> list[Reading]:
    """Readings of the blocks and of the lines in neither a block nor ``taken``, in stdout order. A line that
    is one number and has a name in ``line_names`` (its print call's expression, ``sites.stdout_names``) is read
    under that name."""
    line_names = line_names or {}
    out: list[tuple[int, list[Reading]]] = []
    in_block = {n for b in blocks for n in range(b.start, b.stop)}
    counters = {"table": 0, "list": 0}
    label_lines = set()  # lines read as a block's name, so not read again on their own
    for block in blocks:
        if block.kind == "unreadable":
            continue
        counters[block.kind] += 1
        previous = lines[block.start - 1] if block.start and block.start - 1 not in in_block | taken else None
        label = block.inline_label.strip() if block.inline_label else block_label(previous)
        if label and not block.inline_label:
            label_lines.add(block.start - 1)
        if label:
            parts, desc = (label,), f"{'list' if block.kind == 'list' else 'table'} printed after {label}"
        else:
            name = f"printed_{block.kind}_{counters[block.kind]}"
            parts, desc = (name,), f"{'list' if block.kind == 'list' else 'table'} number {counters[block.kind]} printed"
        out.append((block.start, block.readings_of(parts, desc)))
    for n, line in enumerate(lines):
        if n in in_block or n in taken or n in label_lines:
            continue
        named = _named_number(line, line_names.get(n), n)
        out.append((n, [named] if named else line_readings(line)))
    return [r for _, readings in sorted(out, key=lambda item: item[0]) for r in readings]


def _named_number(line: str, name: str | None, index: int) -> Reading | None:
    """The bare number on ``line`` under the name of the call that printed it."""
    number = _number(line) if name else None
    if number is None or is_noise(line):
        return None
    kind, value = ("integer", int(line.strip())) if number.integer else ("number", number.value)
    return Reading((name,), kind, value, name, decimals=number.decimals,
                   resolution=None if number.integer else number.resolution, line=index)
