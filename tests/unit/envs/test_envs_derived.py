"""Pieces of derived-task construction that need no sandbox."""
from __future__ import annotations

import ast

from trailforge.envs.derived import _zero_fill


def test_zero_fill_of_a_function_hole_returns_zero_and_keeps_the_header():
    hole = {"kind": "function", "stub": 'def rate(x, y):\n    """Slope."""\n    raise NotImplementedError("implement rate")\n'}
    filled = _zero_fill(hole)
    assert filled == 'def rate(x, y):\n    """Slope."""\n    return 0\n'
    ast.parse(filled)


def test_zero_fill_of_a_block_hole_binds_every_defined_name():
    hole = {"kind": "block", "defines": {"rarest": None, "count": None},
            "stub": '    raise NotImplementedError("missing step: compute rarest, count")\n'}
    assert _zero_fill(hole) == "    rarest = count = 0\n"
