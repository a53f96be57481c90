"""Sandbox runs through the content-addressed cache.

The key covers everything that can change a run's result: the environment spec, the
command, every input file's hash, the timeout and extra variables, plus a ``salt`` for
deliberate repeats (run 1 and run 2 of a reproducibility check are distinct entries).
Output files are stored as blobs, so a cached result is rebuilt byte for byte.

A cached entry whose blobs are missing or damaged, or whose record is not a run record,
is a miss: the run is repeated and the entry rewritten (counted as ``healed`` in the cache
stats). A backend's ``SandboxInfrastructureError`` propagates and stores nothing.

A run that timed out is returned but not stored (``not_kept`` in the cache stats): whether a program
finishes within a wall-clock limit depends on what else the machine was doing, and a timeout kept
from a busy moment would reject that program in every later build.
"""
from __future__ import annotations

from dataclasses import asdict, fields

from ..cache import CacheCorruption, ContentCache, sha256_bytes
from .base import TIMEOUT, PreparedEnv, RunRequest, RunResult, Sandbox

RUN_OP = "sandbox.run"
# 2: scratch paths masked in stdout/stderr. 3: a run gets the timeout it asks for (up to sandbox.max_timeout_s)
# instead of min(request, sandbox.timeout_s), so an entry keyed on a request's timeout may have run shorter.
RUN_VERSION = 3
_RECORD_FIELDS = frozenset(f.name for f in fields(RunResult))


def run_cached(
    cache: ContentCache, sandbox: Sandbox, env: PreparedEnv, request: RunRequest, salt: str = ""
) -> tuple[RunResult, bool]:
    inputs = {
        "backend": sandbox.name,
        "env": env.spec_hash,
        "command": list(request.command),
        "files": {path: sha256_bytes(data) for path, data in sorted(request.files.items())},
        "timeout_s": request.timeout_s,
        "extra_env": dict(sorted(request.env.items())),
        "salt": salt,
    }
    if request.cwd != ".":  # only then, so every run started from the scratch root keeps its key
        inputs["cwd"] = request.cwd
    if request.folders:  # likewise: a run that needs no folder keeps its key
        inputs["folders"] = sorted(request.folders)

    def execute() -> dict:
        result = sandbox.run(env, request)
        record = asdict(result)
        record["files"] = {path: cache.put_blob(data) for path, data in result.files.items()}
        return record

    def load(record: object) -> RunResult:
        # Only a damaged or hand-edited entry fails this check; it must cost a re-run, not a crash.
        if not (isinstance(record, dict) and record.keys() == _RECORD_FIELDS and isinstance(record["files"], dict)):
            raise CacheCorruption(f"{RUN_OP} entry is not a run record")
        files = {path: cache.get_blob(digest) for path, digest in record["files"].items()}
        return RunResult(**{**record, "files": files})

    return cache.get_or_compute(RUN_OP, RUN_VERSION, inputs, execute, load=load,
                                keep=_kept)


def _kept(record: object) -> bool:
    """Everything but a timeout (a record that is not a run record is ``load``'s to reject)."""
    return not (isinstance(record, dict) and record.get("reason") == TIMEOUT)
