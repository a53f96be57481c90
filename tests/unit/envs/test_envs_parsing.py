"""Parsing repository code: every way ast.parse fails on hostile text becomes UnparseableSource with a
reason code, at every parser of repository or program code, and trees just under the cap are analysed."""
from __future__ import annotations

import pytest

from trailforge.envs.deps import scan_imports_detailed
from trailforge.envs.mutations import find_mutations
from trailforge.envs.parsing import (MAX_AST_DEPTH, PYTHON2_ONLY, SYNTAX_ERROR, UNPARSEABLE_SOURCE, UnparseableSource,
                                     looks_like_python2, parse_python)
from trailforge.envs.seeds import find_candidates, unusable_files
from trailforge.envs.workflow import analyse_program
from trailforge.io import FileEntry, Reject, SnapshotRow, StageRecorder

DEEP_SUM = "X = " + "+".join(["1"] * 100_000) + "\n"  # ~200 KB; RecursionError inside ast.parse


@pytest.mark.parametrize("source, reason, words", [
    (DEEP_SUM, UNPARSEABLE_SOURCE, "RecursionError"),
    ("X = " + "+".join(["1"] * 400) + "\n", UNPARSEABLE_SOURCE, f"more than {MAX_AST_DEPTH} levels"),
    ("import numpy\x00\n", UNPARSEABLE_SOURCE, "null bytes"),
    ("def f(:\n    pass\n", SYNTAX_ERROR, "line 1"),
])
def test_each_failure_is_one_exception_with_a_reason_and_the_file_name(source, reason, words):
    with pytest.raises(UnparseableSource) as caught:
        parse_python(source, "pkg/mod.py")
    assert caught.value.reason == reason
    assert "pkg/mod.py" in str(caught.value) and words in str(caught.value)
    assert isinstance(caught.value, SyntaxError), "handlers written for SyntaxError keep working"


@pytest.mark.parametrize("parse", [
    lambda text: scan_imports_detailed(text, "deep.py"),
    lambda text: find_mutations(text, "deep.py"),
    lambda text: analyse_program({"deep.py": text}, "deep.py"),
], ids=["import scan", "mutations", "workflow analysis"])
def test_parsers_of_repository_code_raise_unparseable_source_not_recursion_error(parse):
    with pytest.raises(UnparseableSource) as caught:
        parse(DEEP_SUM)
    assert caught.value.reason == UNPARSEABLE_SOURCE


def test_a_tree_just_under_the_cap_goes_through_every_analysis():
    # Binary operations nest one level per term, under Module > Assign: depth = terms + 1.
    text = "import numpy\nX = " + "+".join(["1"] * (MAX_AST_DEPTH - 3)) + "\nprint(X)\n"
    parse_python(text)
    assert scan_imports_detailed(text)[0] == {"numpy"}
    assert find_mutations(text, "ok.py")
    assert analyse_program({"ok.py": text}, "ok.py").scopes


def _snapshot(tmp_path, files: dict[str, str]) -> SnapshotRow:
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    entries = [FileEntry(path=rel, sha256="0" * 64, size=len(text), kind="python" if rel.endswith(".py") else "data")
               for rel, text in files.items()]
    return SnapshotRow(repo_id="r", origin="r", discipline="ecology", commit=None, content_hash="0" * 64,
                       tree=str(tmp_path), files=entries, requirements=[], imports=[], distributions=[],
                       local_modules=[])


def test_seed_candidates_reject_an_unparseable_script_and_keep_the_others(tmp_path):
    snapshot = _snapshot(tmp_path, {"deep.py": DEEP_SUM, "run.py": "print(open('obs.csv').read())\n",
                                    "obs.csv": "a\n1\n"})
    recorder = StageRecorder("seeds")
    found = find_candidates(snapshot, set(), recorder)  # no snapshot reject to skip it by: the guard's case
    assert [c.script for c in found] == ["run.py"]
    assert [(r.item_id, r.reason) for r in recorder.rejects] == [("r:deep.py", UNPARSEABLE_SOURCE)]


def test_files_the_snapshot_could_not_parse_are_never_seed_candidates():
    rejects = [Reject(stage="snapshot", item_id=f"r:{name}.py", reason=reason, message="")
               for name, reason in (("a", SYNTAX_ERROR), ("b", UNPARSEABLE_SOURCE), ("c", "refused_requirement"),
                                    ("d", PYTHON2_ONLY))]
    assert unusable_files(rejects) == {"r:a.py", "r:b.py", "r:d.py"}


# ---------------------------------------------------------------- Python 2 leftovers are named, not "syntax errors"

PY2_SCRIPT = "import sys\ncounts = [3, 4]\nprint 'mean', sum(counts) / len(counts)\n"


@pytest.mark.parametrize("source, construct", [
    (PY2_SCRIPT, "print statement at line 3"),
    ("try:\n    import numpy\nexcept ImportError, e:\n    numpy = None\n", "except X, e clause at line 3"),
    ("x = 4\nlabel = `x` + ' units'\n", "backtick repr at line 2"),
    ("if 1 <> 2:\n    pass\n", "<> operator at line 1"),
    ("exec 'x = 1'\n", "exec statement at line 1"),
    ("import os\nos.chmod('out', 0755)\n", "old octal literal at line 2"),
    ("pattern = ur'\\d+'\n", "ur'' string at line 1"),
    ("raise ValueError, 'bad count'\n", "raise X, message statement at line 1"),
    ("n = 10L\n", "long integer literal (10L) at line 1"),
    ("def f():\n    if 1:\n        x = 1\n\ty = 2\n", "indentation mixing tabs and spaces at line 4"),
])
def test_python2_script_is_a_named_reject_naming_the_construct(source, construct):
    with pytest.raises(UnparseableSource) as caught:
        parse_python(source, "pkg/old.py")
    assert caught.value.reason == PYTHON2_ONLY
    assert str(caught.value) == f"pkg/old.py is Python 2 only ({construct}); it cannot run under Python 3"
    assert isinstance(caught.value, SyntaxError), "handlers written for SyntaxError keep working"
    with pytest.raises(UnparseableSource) as from_bytes:
        parse_python(source.encode(), "pkg/old.py")
    assert from_bytes.value.reason == PYTHON2_ONLY, "bytes go the same way"


@pytest.mark.parametrize("source", [
    "def f(:\n    pass\n",
    "x = (1,\n",
    "print(counts\n",
    "from numpy\n",
    "<<<<<<< HEAD\nx = 1\n=======\nx = 2\n>>>>>>> other\n",
    "label = '`' +\n",
    "s = 'a <> b' +\n",
    "y = 09\n",  # Python 2 refused this one too
])
def test_python3_syntax_errors_stay_syntax_errors(source):
    with pytest.raises(UnparseableSource) as caught:
        parse_python(source, "pkg/mod.py")
    assert caught.value.reason == SYNTAX_ERROR
    assert "Python 2" not in str(caught.value)


def test_the_python2_check_reads_one_line_and_is_pure():
    try:
        compile(PY2_SCRIPT, "old.py", "exec")
    except SyntaxError as exc:
        error = exc
    assert looks_like_python2(PY2_SCRIPT, error) == "print statement at line 3"
    assert looks_like_python2(PY2_SCRIPT, error) == "print statement at line 3"  # no state kept
    error.text = None  # some errors carry no line: it is found in the source by number
    assert looks_like_python2(PY2_SCRIPT, error) == "print statement at line 3"
    assert looks_like_python2("", SyntaxError("invalid syntax")) is None


def test_a_hostile_python2_file_is_still_bounded():
    # ~200 KB on one line, and ~200 KB of lines before the one the parser stops at.
    one_line = "x = " + "`1` + " * 35_000 + "1\n"
    with pytest.raises(UnparseableSource) as caught:
        parse_python(one_line, "wide.py")
    assert caught.value.reason == PYTHON2_ONLY and "backtick" in str(caught.value)
    many_lines = "x = 1\n" * 35_000 + "print x\n"
    with pytest.raises(UnparseableSource) as caught:
        parse_python(many_lines, "long.py")
    assert "print statement at line 35001" in str(caught.value)
