"""The seed row of a clean run: the files it read and wrote, its outputs, its environment; and the seed's own tree
when the program was rewritten."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath

from ...io import SeedRow, WrittenFile
from ...sandbox import PLOTS_FILE, RUNNER_FILES, TRACE_FILE
from ...sandbox.base import NONZERO_EXIT, OK, OUTPUT_LIMIT, TIMEOUT
from ..answers import is_result_file, table_delimiter
from ..plots import read_plots
from ..printed import stdout_names
from ..protocol import RunProtocol
from .candidates import SeedCandidate
from .ladder import failing_line, portable_stderr


MAX_TEXT_OUTPUT = 200_000


# A written table is kept whole up to this size: answers summarise it (row count, column aggregates, end rows),
# and a results table of a genome-wide analysis (40,000 genes) is a few megabytes.
MAX_TABLE_TEXT_OUTPUT = 4_000_000


# argparse's and click's help texts start so; a script that prints one on a bare start did not compute anything.
USAGE_TEXT = re.compile(r"(usage|Usage|USAGE):\s")


def seed_from_run(candidate: SeedCandidate, protocol: RunProtocol, result, env,
                   ran: dict[str, str] | None = None) -> tuple[SeedRow | None, tuple]:
    """The seed a run makes, or (None, (reason, message, detail)) saying why it makes none. ``ran``: program
    texts the run had in place of the snapshot's (a rewritten script), by path."""
    snap = candidate.snapshot
    if result.reason != OK:
        reasons = {TIMEOUT: "timeout", NONZERO_EXIT: "nonzero_exit", OUTPUT_LIMIT: "output_limit"}
        stderr = portable_stderr(result.stderr)
        tail = stderr.strip().splitlines()[-1:] or [""]
        detail = {"stderr_tail": stderr[-2000:]}
        line = failing_line(stderr, candidate.script) if result.reason == NONZERO_EXIT else None
        if line is not None:
            detail["failed_at_line"] = line
        return None, (reasons.get(result.reason, result.reason),
                      f"{candidate.script} ended with {result.reason} (exit {result.exit_code}): {tail[0][:300]}",
                      detail)
    outputs = dict(result.files)
    trace = read_trace(outputs.pop(TRACE_FILE, None))
    plots = read_plots(outputs.pop(PLOTS_FILE, None))  # what the figures showed: results, not a written file
    by_path = {f.path: f for f in snap.files}
    changed = {p for p in outputs if p in by_path}  # inputs the program rewrote are results, not data
    data_files = [by_path[p] for p in trace["reads"] if p in by_path and by_path[p].kind != "python"
                  and p not in changed]
    if not data_files:
        why = f" (it rewrote {len(changed)} of its inputs)" if changed else ""
        return None, ("no_data_read", f"ran but read no unchanged data file of the repository{why}", {})
    written = [_written(path, data) for path, data in sorted(outputs.items()) if is_result_file(path)]
    if not result.stdout.strip() and not written and not plots:
        return None, ("no_output", "ran but printed nothing, wrote no file and drew no figure", {})
    local = [p for p in trace["local_modules"] if p in by_path and p != candidate.script and p not in RUNNER_FILES]
    sources = {}
    for path in (candidate.script, *local):
        try:  # the texts that ran: the print calls' lines are theirs
            sources[path] = (ran or {}).get(path) or (Path(snap.tree) / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    names = stdout_names(result.stdout, trace["prints"], sources)
    return SeedRow(
        seed_id=candidate.seed_id,
        repo_id=snap.repo_id,
        discipline=snap.discipline,
        script=candidate.script,
        tree=snap.tree,
        program_files=[candidate.script, *sorted(local)],
        data_files=sorted(data_files, key=lambda f: f.path),
        stdout=result.stdout,
        files_written=written,
        plots=plots,
        distributions=snap.distributions,
        sandbox_spec=env.spec,
        cwd=protocol.cwd,
        args=list(protocol.args),
        # Also the folders of files it wrote with the content they had (an export the repository ships):
        # no output for this run, but a run on other data writes there again.
        output_folders=output_folders(Path(snap.tree), [*(w.path for w in written),
                                                        *filter(is_result_file, trace["writes"])]),
        stdout_names={str(index): name for index, name in sorted(names.items())},
    ), ()


def write_seed_tree(trees: Path, seed: SeedRow, files: dict[str, bytes], kind: str = "parameters") -> Path:
    """A tree of the seed's own under ``trees`` (``<repo>/<kind>-<digest>``): its data files (the generated
    parameters file), the rewritten entry script (with parameters, or cut) and the repository modules it
    imports, as ``files`` has them. Named by its content, so a re-run writes the same folder."""
    paths = sorted({*(f.path for f in seed.data_files), *seed.program_files})
    digest = hashlib.sha256(json.dumps({p: hashlib.sha256(files[p]).hexdigest() for p in paths},
                                       sort_keys=True).encode()).hexdigest()[:12]
    folder = trees / seed.repo_id / f"{kind}-{digest}"
    for path in paths:
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[path])
    return folder


def output_folders(tree: Path, written: list[str]) -> list[str]:
    """The repository's folders the program wrote into (``figs/`` for ``figs/fit.png``): a later run on the
    seed's files alone lacks them. Only folders the tree has: one the program made, it makes again."""
    folders = set()
    for path in written:
        for parent in PurePosixPath(path).parents:
            if parent.as_posix() != "." and (tree / parent).is_dir():
                folders.add(parent.as_posix())
    return sorted(folders)


def read_trace(data: bytes | None) -> dict:
    empty = {"reads": [], "writes": [], "local_modules": [], "prints": []}
    if not data:
        return empty
    try:
        trace = json.loads(data)
    except ValueError:
        return empty
    if not isinstance(trace, dict):
        return empty
    read = {key: [str(p) for p in trace.get(key, []) if isinstance(p, str)]
            for key in ("reads", "writes", "local_modules")}
    prints = trace.get("prints")
    read["prints"] = [p for p in prints if isinstance(p, list)] if isinstance(prints, list) else []
    return read


def _written(path: str, data: bytes) -> WrittenFile:
    text = None
    if len(data) <= MAX_TABLE_TEXT_OUTPUT:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and len(data) > MAX_TEXT_OUTPUT and table_delimiter(path, text) is None:
            text = None
    return WrittenFile(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data), text=text)
