"""Seeds from scripts whose only data are their own constants: the constants move to a generated parameters file,
and the rewrite is a seed only when it reproduces the original's outputs exactly."""
from __future__ import annotations

import hashlib

from ...cache import ContentCache
from ...io import FileEntry, SeedRow, StageRecorder
from ...sandbox import PLOTS_FILE, TRACE_FILE, Sandbox, run_cached
from ..answers import is_result_file
from ..parameters import parameterize
from ..protocol import RunProtocol, recorded_request
from .candidates import SeedCandidate
from .ladder import portable_stderr
from .seed_rows import read_trace, seed_from_run


def parameter_seed(candidate: SeedCandidate, protocol: RunProtocol, result, env, files: dict[str, bytes],
                    sandbox: Sandbox, cache: ContentCache, timeout_s: float, recorder: StageRecorder,
                    no_data: tuple) -> tuple[SeedRow | None, tuple, float, dict[str, bytes]]:
    """The seed of a script that read no data, with its numeric constants read from a generated parameters file
    (``parameters.parameterize``): (seed or None, why not, seconds run, the generated files by path). The rewritten
    program runs in the sandbox and must give exactly the original run's outputs: stdout, written files and figures
    (else ``parameters_unreproduced``). The seed's ``tree`` is still the snapshot's; the caller gives it its own."""
    try:
        rewritten = parameterize(files[candidate.script].decode("utf-8"), candidate.script, protocol.cwd, set(files))
    except (SyntaxError, ValueError, RecursionError, UnicodeDecodeError, MemoryError):
        rewritten = None
    if rewritten is None:
        reason, message, detail = no_data
        return None, (reason, message + "; and it sets no numeric constant at module level to read as a parameter",
                      detail), 0.0, {}
    recorder.count("parameter_rewrites_tried")
    program = rewritten.program.encode("utf-8")
    parameters = rewritten.text.encode("utf-8")
    request = recorded_request(protocol, candidate.script, {**files, candidate.script: program,
                                                            rewritten.path: parameters}, timeout_s, trace=())
    again, hit = run_cached(cache, sandbox, env, request)
    recorder.count("executions_cached" if hit else "executions_run")
    problem = reproduction_problem(result, again, rewritten.path)
    if problem:
        return None, ("parameters_unreproduced", f"{candidate.script} with its constants "
                      f"({', '.join(rewritten.names[:8])}) read from {rewritten.path}: {problem}",
                      {"parameters": list(rewritten.names)}), again.duration_s, {}
    snap = candidate.snapshot
    entry = FileEntry(path=rewritten.path, sha256=hashlib.sha256(parameters).hexdigest(), size=len(parameters),
                      kind="data")
    with_file = SeedCandidate(snap.model_copy(update={"files": [*snap.files, entry]}), candidate.script,
                              candidate.protocols, candidate.promise, candidate.imports)
    row, failure = seed_from_run(with_file, protocol, again, env, ran={candidate.script: rewritten.program})
    if row is None:
        return None, failure, again.duration_s, {}
    recorder.count("seeds_from_parameters")
    recorder.count("parameters_in_files", len(rewritten.names))
    return row.model_copy(update={"parameters_file": rewritten.path}), (), again.duration_s, \
        {candidate.script: program, rewritten.path: parameters}


def reproduction_problem(original, rewritten, parameters_path: str) -> str | None:
    """Why the run of the rewritten program is not the original's, or None: it must exit cleanly, read the
    parameters file, print the same bytes, write the same result files with the same bytes and draw the same
    figures."""
    if not rewritten.ok:
        tail = (portable_stderr(rewritten.stderr).strip().splitlines() or [""])[-1]
        return f"the rewritten program ended with {rewritten.reason}: {tail[:300]}"
    if parameters_path not in read_trace(rewritten.files.get(TRACE_FILE))["reads"]:
        return "the rewritten program did not read the parameters file"
    if rewritten.stdout != original.stdout or rewritten.stdout_truncated != original.stdout_truncated:
        return "it prints something else than the original"
    # Library caches and config under the scratch HOME (a fontconfig cache the first run of an environment
    # writes, the second finds) are no outputs of the analysis; the figures are (the plots file is hidden).
    def compared(files):
        return {p: d for p, d in files.items() if p != TRACE_FILE and (p == PLOTS_FILE or is_result_file(p))}

    outputs, again = compared(original.files), compared(rewritten.files)
    if set(outputs) != set(again):
        return f"it writes other files ({sorted(set(outputs) ^ set(again))[:5]})"
    differ = sorted(p for p in outputs if outputs[p] != again[p])
    if differ:
        return f"its outputs differ from the original's ({differ[:5]})"
    return None
