"""Unit tier: seed rejects carry tracebacks that do not depend on where the interpreter is installed."""
from __future__ import annotations

import subprocess
import sys

from trailforge.envs.seeds import portable_stderr


def test_install_folders_in_a_traceback_become_one_placeholder():
    done = subprocess.run([sys.executable, "-c", "import json; json.loads('not json')"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and sys.base_prefix in done.stderr  # the traceback goes through the stdlib
    cleaned = portable_stderr(done.stderr)
    assert sys.base_prefix not in cleaned and sys.prefix not in cleaned
    assert 'File "<python>/lib/python3.' in cleaned and "/json/" in cleaned
    assert cleaned.splitlines()[-1] == done.stderr.splitlines()[-1]  # the error itself is kept


def test_two_venvs_give_the_same_text_and_program_paths_are_left_alone():
    frame = '  File "{}/lib/python3.11/site-packages/pandas/core/frame.py", line 4330, in __getitem__\n'
    program = '  File "/sandbox/analysis.py", line 12, in <module>\n'
    one = portable_stderr(program + frame.format("/work/main/.venv"))
    other = portable_stderr(program + frame.format("/tmp/ci-check7/.venv"))
    assert one == other and one.startswith(program)
