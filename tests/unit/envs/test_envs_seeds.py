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


def test_the_failing_line_is_the_scripts_outermost_module_frame():
    from trailforge.envs.seeds import failing_line

    stderr = ('Traceback (most recent call last):\n  File "/sandbox/repo/code/run.py", line 12, in <module>\n'
              '    main()\n  File "/sandbox/repo/code/helpers.py", line 3, in <module>\n'
              '  File "<python>/site-packages/pandas/io.py", line 88, in read\nKeyError: 0\n')
    assert failing_line(stderr, "code/run.py") == 12
    assert failing_line(stderr, "run.py") == 12
    started_in_its_folder = '  File "main.py", line 84, in <module>\n    growth_rate(t, s)\nValueError: skipna\n'
    assert failing_line(started_in_its_folder, "tools/main.py") == 84
    assert failing_line("  File \"<string>\", line 1\nSyntaxError: invalid syntax\n", "code/run.py") is None


def test_a_script_is_cut_before_the_top_level_statement_that_failed():
    from trailforge.envs.seeds import cut_before

    source = ("import csv\n\n\n@decorate\ndef f(x):\n    return x\n\n"
              "rows = load()\nfor r in rows:\n    print(r)\n    plot(r)\n"
              "if __name__ == '__main__':\n    total = f(rows)\n    print(total)\n    ax.set_xscale('symlog', linthreshx=1)\n")
    assert cut_before(source, 11).endswith("rows = load()\n"), "a loop that failed is cut whole"
    guarded = cut_before(source, 15)
    assert guarded.endswith("    print(total)\n") and "linthreshx" not in guarded
    assert cut_before(source, 13).endswith("    print(r)\n    plot(r)\n"), "nothing of the guard is left: cut before it"
    assert cut_before(source, 5) is None, "only imports would be left"
    assert cut_before(source, 8) is None, "the first statement that runs failed"


def test_a_removed_matplotlib_style_sends_the_script_to_an_older_era():
    from trailforge.envs.seeds import ERA_ERRORS

    assert ERA_ERRORS.search("OSError: 'seaborn-ticks' is not a valid package style, path of style file, URL")
    assert not ERA_ERRORS.search("FileNotFoundError: [Errno 2] No such file or directory: 'blanks.csv'")
