"""Contract: every CLI command is listed in the module help and in the README."""
from __future__ import annotations

import argparse

from conftest import PROJECT_ROOT
from trailforge.cli.main import __doc__ as cli_doc
from trailforge.cli.main import build_parser


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_every_command_is_documented():
    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = _commands()
    assert {"ls", "validate", "compose", "run", "report", "recheck", "graph"} <= set(commands)
    for command in commands:
        assert f"trailforge {command}" in cli_doc, command
        assert f"trailforge {command}" in readme, command
