"""Does an answer depend on the data? Perturb the inputs, run again, keep what moves.

A task must be data-dependent: its answer moves when its data move. A value the program computes
from its own constants (the step of an ``np.arange``, a seed, a grid size) does not, and asking for
it tests recall of the code, not analysis. So every answer field is checked by running the reference
program again on perturbed copies of its data files and keeping only the fields whose value changes.

The perturbation keeps each file's schema so the program still reads it: in text files, every decimal
number is scaled by a random factor within ``jitter`` and printed with the same number of decimals
and the same notation; whole numbers of two or more digits are scaled and rounded too (counts move),
while one-digit integers (flags, categories, indices), zero-padded codes, a header line and numbers
inside words, dates, times and paths are left alone. Fields that did not move (or a program that
failed) get further tries (``VARIANTS``): only decimal numbers scaled, then some rows dropped, then
one-digit counts moved by one. ``.npy`` arrays of floats are scaled elementwise. A FASTA file (sequences
under ``>`` headers) has no numbers to scale: a fraction ``jitter / 2`` of its residues is substituted by
other letters of its own alphabet (nucleotides or amino acids, case kept), with headers and line lengths
as they were, so GC content, k-mer counts and alignments move. Binary pickles (pandas DataFrames, numpy
arrays, dicts of them: ``df.to_pickle``, ``pickle.dump``) are unpickled only inside the sandbox, in the
program's own environment, by ``sandbox/pickle_perturber.py``, which scales their floats (the
``pickles_scaled`` try); the host never loads one, since unpickling runs code the file names. Files in other formats
(MATLAB ``.mat``, Excel, images) cannot be edited without their library; when the program reads two or
more of them with the same extension, the last try resamples at the level of files: their contents are
rotated among their paths (each still a real file of the same format and schema, now the "wrong" one).
A seed none of whose files can be perturbed either way cannot be checked, and that is a counted reject
(``data_not_perturbable``), never a pass.
"""
from __future__ import annotations

import io
import random
import re
from typing import Any

# A number not glued to a word, a path, a date or a time: ``3.25``, ``-0.5``, ``1.2e-3``, ``1200``.
_NUMBER = re.compile(r"(?<![\w.:/\\-])(?P<sign>-?)(?P<int>\d+)(?P<frac>\.\d+)?(?P<exp>[eE][-+]?\d+)?(?![\w.:/\\]|-\d)")
MAX_TEXT_BYTES = 20_000_000  # larger files are kept as they are (reading them whole would cost too much)


def _scaled(match: re.Match, rng: random.Random, jitter: float, integers: bool | str) -> str:
    sign, whole, frac, exp = match.group("sign"), match.group("int"), match.group("frac"), match.group("exp")
    factor = 1.0 + rng.uniform(-jitter, jitter)
    if frac is None and exp is None:
        if integers == "all" and len(whole) == 1:
            return f"{sign}{max(int(whole) + rng.choice((-1, 1)), 0)}"  # small counts move by one
        if not integers or len(whole) < 2 or whole.startswith("0"):
            return match.group(0)  # a flag, category or index; a zero-padded code
        value = round(int(whole) * factor)
        return f"{sign}{max(value, 0)}"
    decimals = len(frac) - 1 if frac else 0
    if exp is not None:
        mantissa = float(whole + (frac or "")) * factor
        return f"{sign}{mantissa:.{decimals}f}{exp}"
    value = float(whole + frac) * factor
    text = f"{value:.{decimals}f}"
    return f"{sign}{text}"


def perturb_text(text: str, rng: random.Random, jitter: float, integers: bool | str = True) -> str:
    """``text`` with its free-standing numbers scaled, formats kept. A first line with letters is a header
    (column names such as ``2019`` are names, not values) and is kept."""
    head, newline, body = text.partition("\n")
    if newline and body and re.search(r"[A-Za-z]", head):
        return head + newline + _NUMBER.sub(lambda m: _scaled(m, rng, jitter, integers), body)
    return _NUMBER.sub(lambda m: _scaled(m, rng, jitter, integers), text)


def _perturb_npy(data: bytes, rng: random.Random, jitter: float) -> bytes | None:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency of the project
        return None
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception:  # not an array numpy can read without unpickling: keep the file as it is
        return None
    if not np.issubdtype(array.dtype, np.floating) or array.size == 0:
        return None
    noise = np.random.default_rng(rng.getrandbits(64)).uniform(1 - jitter, 1 + jitter, array.shape)
    out = io.BytesIO()
    np.save(out, (array * noise).astype(array.dtype), allow_pickle=False)
    return out.getvalue()


_RESIDUES = re.compile(r"[A-Za-z*-]+")
_NUCLEOTIDES = set("ACGTUN")
_AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"


def is_fasta(text: str) -> bool:
    """Whether ``text`` reads as FASTA: it starts with a ``>`` header and its other lines are residues."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    body = [line for line in lines if not line.startswith((">", ";"))]
    return bool(lines) and lines[0].startswith(">") and bool(body) and all(_RESIDUES.fullmatch(b) for b in body)


def perturb_fasta(text: str, rng: random.Random, fraction: float) -> str:
    """``text`` with about ``fraction`` of its residues replaced by another letter of the same alphabet."""
    lines = text.splitlines(keepends=True)
    letters = {c.upper() for line in lines if not line.startswith((">", ";")) for c in line.strip()}
    alphabet = ("ACGU" if "U" in letters and "T" not in letters else "ACGT") if letters <= _NUCLEOTIDES \
        else _AMINO_ACIDS
    out = []
    for line in lines:
        if line.startswith((">", ";")):
            out.append(line)
            continue
        chars = list(line)
        for i, c in enumerate(chars):
            if c.upper() in alphabet and rng.random() < fraction:
                new = rng.choice([a for a in alphabet if a != c.upper()])
                chars[i] = new if c.isupper() else new.lower()
        out.append("".join(chars))
    return "".join(out)


def drop_rows(text: str, rng: random.Random, fraction: float) -> str:
    """``text`` without a random ``fraction`` of its data lines (at least one, order kept); the header,
    comment lines and files of fewer than three data lines are kept whole."""
    lines = text.splitlines(keepends=True)
    start = 1 if lines and re.search(r"[A-Za-z]", lines[0]) else 0
    rows = [i for i in range(start, len(lines)) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    if len(rows) < 3:
        return text
    dropped = set(rng.sample(rows, max(1, int(len(rows) * fraction))))
    return "".join(line for i, line in enumerate(lines) if i not in dropped)


# The perturbations tried, in order, until every field has moved: numbers scaled; only decimal numbers
# scaled (whole numbers are often identifiers, years or keys the program joins on); rows dropped
# (moves counts, rankings and choices that scaling leaves in place); last, one-digit counts moved by one.
VARIANTS = (
    {"name": "scaled", "integers": True, "drop": 0.0},
    {"name": "scaled_decimals", "integers": False, "drop": 0.0},
    {"name": "rows_dropped", "integers": False, "drop": 0.15},
    {"name": "small_counts", "integers": "all", "drop": 0.0},
    {"name": "pickles_scaled", "integers": False, "drop": 0.0, "pickles": True},
    {"name": "files_rotated", "integers": False, "drop": 0.0, "rotate": True},
)


def is_pickle(content: bytes) -> bool:
    """A binary pickle (protocol 2 to 5 start with ``\\x80`` and the protocol number), by its first bytes."""
    return content[:1] == b"\x80" and content[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")


def rotate_files(data: dict[str, bytes]) -> dict[str, bytes]:
    """Each group of two or more files with one extension and differing contents, its contents moved one
    path along (in path order): the same formats at the same paths, the data of another file in each."""
    groups: dict[str, list[str]] = {}
    for path in sorted(data):
        suffix = path.rsplit("/", 1)[-1].rpartition(".")[2].lower() if "." in path.rsplit("/", 1)[-1] else ""
        groups.setdefault(suffix, []).append(path)
    out = dict(data)
    for paths in groups.values():
        if len(paths) >= 2 and len({data[p] for p in paths}) >= 2:
            for path, source in zip(paths, paths[1:] + paths[:1]):
                out[path] = data[source]
    return out


def perturb_files(data: dict[str, bytes], seed: int, jitter: float = 0.1, integers: bool | str = True,
                  drop: float = 0.0, rotate: bool = False) -> tuple[dict[str, bytes], list[str]]:
    """Perturbed copies of ``data`` (same paths) and the paths whose content changed. ``integers=False``
    leaves whole numbers alone and ``"all"`` moves one-digit ones too; ``drop`` also removes that fraction
    of each text file's data rows; ``rotate`` moves file contents among paths instead (``rotate_files``)."""
    if rotate:
        out = rotate_files(data)
        return out, [p for p in sorted(data) if out[p] != data[p]]
    rng = random.Random(seed)
    out, changed = {}, []
    for path in sorted(data):
        content = data[path]
        new = None
        if path.lower().endswith(".npy"):
            new = _perturb_npy(content, rng, jitter)
        elif len(content) <= MAX_TEXT_BYTES and b"\x00" not in content[:8192]:
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None and is_fasta(text):
                new = perturb_fasta(text, rng, jitter / 2).encode("utf-8")
            elif text is not None:
                if drop:
                    text = drop_rows(text, rng, drop)
                new = perturb_text(text, rng, jitter, integers).encode("utf-8")
        if new is not None and new != content:
            out[path] = new
            changed.append(path)
        else:
            out[path] = content
    return out, changed


def moved_fields(schema, reference: dict[str, Any], perturbed: dict[str, Any], differs) -> tuple[list, list]:
    """``(fields whose value moved, fields that stayed)``; a field the perturbed run does not report moved
    (its presence depends on the data). ``differs(field, ref, got)`` is the comparison tasks use for
    "changes the answer"."""
    moved, still = [], []
    for field in schema:
        if field.name not in perturbed or differs(field, reference[field.name], perturbed[field.name]) is not None:
            moved.append(field)
        else:
            still.append(field)
    return moved, still
