"""Read results from what a program printed beyond ``Label: value`` lines.

``answers.extract_answer`` reads ``Label: value`` lines itself and hands the rest of stdout here. This module
only parses text: it returns ``Reading`` objects whose raw labels the caller turns into field names with
``answers.field_name`` (so every label is checked there, refused ones counted, none rewritten).

What is read, in stdout order:

- **Blocks** (claimed before any line is read on its own):
  pandas DataFrame prints (header line, optional index-name line, index column, ``...`` elision rows and
  the ``[N rows x M columns]`` footer) and whitespace-aligned tables (header plus rows, columns found from
  the character positions that are blank on every line, each header aligned with its column's cells);
  pandas Series prints (ending in ``[Name: x, ][Length: n, ]dtype: t``);
  numpy array prints and Python lists of numbers (``[0.1 0.2\\n 0.3]``, ``[[1. 2.]\\n [3. 4.]]``,
  ``array([...])``), 1-D read as a ``number_list`` and 2-D as a ``table`` with columns ``"0"``, ``"1"``, ...;
  and comma-separated tables. A block is named by the line printed just before it when that line is a
  label (``print("Coefficients:")``), or by the label in front of an inline array (``Coefficients [1 2]``),
  else positionally: ``printed_table_1``, ``printed_list_1``, ... in stdout order.
- **Lines** not in a block and not a ``Label: value`` line: every standalone number is named by the words
  just before it (``RMSE 0.1234``, ``The fitted slope is 2.31 m/s with R^2 = 0.98`` gives ``fitted slope``
  = 2.31 with unit ``m/s`` and ``R^2`` = 0.98). A short unit token right after the number (or ``(unit)``
  right before it) becomes the field's unit.

- **Bare numbers** on a line of their own, only with ``line_names``: the name of the ``print()`` call that
  printed each (``sites.py``, from the tracer's record of the seed run), ``calc_gc(seq)``.

Conservative by design, because the same reader reads the reference runs in verify and a field that is
not a result makes a bad task: progress and log lines (tqdm bars, ``Epoch 3/10``, ``WARNING ...``,
``took 1.2 s``, lines naming files, versions, seeds or line numbers) give nothing; a number with no label
words before it, a number followed by a counted noun (``5721 rows``) or by another number, and a
whole number that reads as a year give nothing; numpy's ``...`` elision makes an array unreadable (its
length is not printed).

Large outputs are summarised, never pretended complete. A table or list with more rows than
``max_table_rows``, or a pandas print with elided rows, becomes at most ``3 + 3 * MAX_SUMMARY_COLUMNS``
fields: ``<name>_rows`` (the row count, from the footer when rows were elided), then for a completely
printed one ``<name>_<column>_mean``, ``_min`` and ``_max`` for its first ``MAX_SUMMARY_COLUMNS`` numeric
columns, then ``<name>_first_rows`` and ``<name>_last_rows`` (the first and last ``SELECTED_ROWS`` rows that
were printed), each only where the order of the printed columns settles which rows are there (a sort with
ties across the cut does not: ``values.rows_settled``). Aggregates are over the printed values; their
resolution is the column's coarsest printed resolution (min and max: that cell's). ``summarise_rows`` applies
the same rule to large CSV/TSV files.

Precision: every number keeps its printed resolution (half a unit in the last printed place). A list or
table field's ``resolution`` is the coarsest of its elements'; ``Reading.resolutions`` keeps each
element's (``None`` for text cells). numpy prints every element of an array with the same number of
decimals unless fewer digits represent it exactly (``floatmode="maxprec"``), so within a numpy print each
element's resolution follows the most decimals printed (``1.`` next to ``0.12345679`` is known to 8
places), not its own digits.
"""
from __future__ import annotations
from .blocks import find_blocks
from .lines import block_label, line_readings, read_printed
from .sites import LINE_SOURCE, line_names_of, stdout_names
from .values import MAX_SUMMARY_COLUMNS, SELECTED_ROWS, Reading, is_log_label, is_noise, summarise_rows

__all__ = ["LINE_SOURCE", "MAX_SUMMARY_COLUMNS", "SELECTED_ROWS", "Reading", "block_label", "find_blocks",
           "is_log_label", "is_noise", "line_names_of", "line_readings", "read_printed", "stdout_names",
           "summarise_rows"]
