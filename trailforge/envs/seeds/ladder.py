"""The dependency ladder: the environments a candidate is tried in, from the repository's own pins to the
library versions of the script's era, and what a failed run's stderr says about the environment."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...io import SeedRow, StageRecorder
from ..deps import canonical, distribution_for, era_date, requirement_name, resolve_distributions
from .candidates import SeedCandidate


# Tracebacks through installed packages name the interpreter's install folder, which is wherever this
# checkout's venv happens to live; only the part from lib/pythonX.Y/ on says anything about the program.
_INSTALL_FOLDER = re.compile(r'File "[^"\n]*?(/lib/python3\.\d+/)')


def portable_stderr(stderr: str) -> str:
    """``stderr`` with interpreter install folders replaced by ``<python>``, so rejects match across machines."""
    return _INSTALL_FOLDER.sub(r'File "<python>\1', stderr)


# A failure these name may be the libraries' era, not the program: the next rung of the ladder may fix it.
ERA_ERRORS = re.compile(r"\b(AttributeError|ImportError|ModuleNotFoundError|TypeError)\b|has no attribute|deprecated|"
                         r"removed in|is not a valid package style")  # matplotlib 3.6 renamed the seaborn styles


@dataclass(frozen=True)
class Rung:
    """One environment to try a script in: which releases of its dependencies."""

    name: str  # declared, current, era or imports (see dependency_ladder)
    distributions: tuple[str, ...]
    as_of: str | None = None


def dependency_ladder(candidate: SeedCandidate, installs: bool, python_version: str) -> list[Rung]:
    """The environments to try, in order:

    - ``declared``: the repository's manifests (their pins kept) plus what the script imports that no manifest
      names. Manifests stay whole: they name what no import shows (``openpyxl`` behind ``read_excel``);
    - ``current``: the same distributions at their newest releases;
    - ``era``: the same distributions as of the repository's commit date;
    - ``imports``: only what the script itself imports, current, and only after a rung failed to install
      (a manifest naming a library without a wheel must not keep an analysis from running).

    A sandbox that cannot install (the host interpreter) has one rung."""
    snap = candidate.snapshot
    if candidate.imports is None:
        return [Rung("declared", tuple(snap.distributions))]
    declared, _ = resolve_distributions(list(snap.requirements), list(candidate.imports), set(), python_version)
    rungs = [Rung("declared", tuple(declared))]
    if installs:
        names = tuple(sorted({requirement_name(spec) for spec in declared}))
        if names != rungs[0].distributions:
            rungs.append(Rung("current", names))
        rungs.append(Rung("era", names, era_date(snap.commit_date, python_version)))
        own = tuple(sorted({canonical(distribution_for(name)) for name in candidate.imports}))
        if own != names:
            rungs.append(Rung("imports", own))
    return rungs


def environment_of(rows: list[SeedRow], rung: Rung, env, attempts: list[dict], cost: dict,
                    recorder: StageRecorder) -> list[SeedRow]:
    """The seeds with the environment they ran in (pinned when it was an era's) and every one tried."""
    cost["seeds"] += len(rows)
    attempts[-1].setdefault("outcome", "ran")
    for row in rows:
        row.distributions = list(rung.distributions)
        if len(attempts) > 1:
            recorder.count(f"seeds_by_{rung.name}_environment")
        if rung.as_of is not None:  # what ran, pinned: later stages rebuild exactly this environment
            row.distributions = [f"{name}=={version}" for name, version in sorted(env.spec["packages"].items())]
        row.environment_attempts = attempts
    return rows


_MODULE_FRAME = re.compile(r'File "([^"]+)", line (\d+), in <module>')


def failing_line(stderr: str, script: str) -> int | None:
    """The line of ``script`` whose top-level statement was running when the program died: the outermost
    ``<module>`` frame of the script in the traceback; None when there is none (a syntax error, a signal)."""
    for path, line in _MODULE_FRAME.findall(stderr):  # a path as the program was started: relative to its cwd
        if path == script or path.endswith("/" + script) or script.endswith("/" + path):
            return int(line)
    return None


def ladder_figure(recorder: StageRecorder, rung: str) -> dict:
    """What one rung of the dependency ladder cost in this stage: attempts, seeds it made, time preparing
    environments (installs; near zero once built) and running programs in them (recorded durations)."""
    ladder = recorder.figures.setdefault("environment_ladder", {})
    return ladder.setdefault(rung, {"attempts": 0, "seeds": 0, "prepare_s": 0.0, "run_s": 0.0})
