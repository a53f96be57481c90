"""Sandbox runs through the content-addressed cache.

The key covers everything that can change a run's result: the environment spec, the
command, every input file's hash, the timeout and extra variables, plus a ``salt`` for
deliberate repeats (run 1 and run 2 of a reproducibility check are distinct entries).
Output files are stored as blobs, so a cached result is rebuilt byte for byte.
"""
from __future__ import annotations

from dataclasses import asdict

from ..cache import ContentCache, sha256_bytes
from .base import PreparedEnv, RunRequest, RunResult, Sandbox

RUN_OP = "sandbox.run"
RUN_VERSION = 2  # 2: scratch paths masked in stdout/stderr


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

    def execute() -> dict:
        result = sandbox.run(env, request)
        record = asdict(result)
        record["files"] = {path: cache.put_blob(data) for path, data in result.files.items()}
        return record

    record, hit = cache.get_or_compute(RUN_OP, RUN_VERSION, inputs, execute)
    files = {path: cache.get_blob(digest) for path, digest in record["files"].items()}
    return RunResult(**{**record, "files": files}), hit
