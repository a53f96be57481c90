"""The pickle perturber: floats inside pickled data move, structure stays, and only the sandbox unpickles."""
from __future__ import annotations

import json
import os
import pickle
import shutil

import numpy as np
import pandas as pd
import pytest

from trailforge.envs.dependence import is_pickle
from trailforge.sandbox import PICKLE_PERTURBER, PICKLE_PERTURBER_SCRIPT, LocalSandbox, RunRequest


class _Touch:
    """Unpickling this runs a shell command: what a hostile repository's pickle can do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    return LocalSandbox(timeout_s=60, max_stdout_bytes=100_000)


def _perturb(sandbox, files: dict[str, bytes], seed: int = 7):
    request = RunRequest(("python", PICKLE_PERTURBER_SCRIPT, str(seed), "0.1", *sorted(files)),
                         {**files, PICKLE_PERTURBER_SCRIPT: PICKLE_PERTURBER.read_bytes()}, timeout_s=60)
    result = sandbox.run(sandbox.prepare([]), request)
    assert result.ok, result.stderr
    return result, json.loads(result.stdout)


def test_floats_move_and_identifiers_structure_and_protocol_stay(sandbox):
    frame = pd.DataFrame({"flux": [1.25, 2.5, 3.75], "count": [10, 20, 30], "name": ["a", "b", "c"]})
    data = {"fits": frame, "spectrum": np.linspace(1.0, 2.0, 5), "level": 3, "label": "MS1",
            "pairs": [(0.5, 1), (1.5, 2)], "peak": np.float64(4.0)}
    original = pickle.dumps(data, protocol=3)
    assert is_pickle(original) and not is_pickle(b"mass,flux\n1,2\n")
    result, report = _perturb(sandbox, {"fits.dump": original})
    assert report == {"kept": {}, "rewritten": ["fits.dump"]}
    new_bytes = result.files["fits.dump"]
    assert new_bytes[:2] == b"\x80\x03", "written back in the protocol it had"
    new = pickle.loads(new_bytes)
    ratio = new["fits"]["flux"].to_numpy() / frame["flux"].to_numpy()
    assert np.all(np.abs(ratio - 1) <= 0.1) and np.any(ratio != 1)
    assert new["fits"]["count"].tolist() == [10, 20, 30] and new["fits"]["name"].tolist() == ["a", "b", "c"]
    assert new["fits"].columns.tolist() == frame.columns.tolist()
    assert not np.allclose(new["spectrum"], data["spectrum"], rtol=1e-9)
    assert new["level"] == 3 and new["label"] == "MS1" and [p[1] for p in new["pairs"]] == [1, 2]
    assert new["pairs"][0][0] != 0.5 and isinstance(new["peak"], np.float64) and new["peak"] != 4.0
    again, _ = _perturb(sandbox, {"fits.dump": original})
    assert again.files["fits.dump"] == new_bytes, "the same seed gives the same perturbation"


def test_a_pickle_without_floats_or_that_does_not_load_is_kept_with_its_reason(sandbox):
    result, report = _perturb(sandbox, {"ids.pkl": pickle.dumps({"ids": [1, 2, 3]}, protocol=4),
                                        "broken.pkl": b"\x80\x04not a pickle"})
    assert report["rewritten"] == [] and not result.files
    assert report["kept"]["ids.pkl"] == "holds no floating-point number"
    assert "Error" in report["kept"]["broken.pkl"]


@pytest.mark.skipif(not shutil.which("bwrap"), reason="without bubblewrap the sandbox is a plain subprocess")
def test_a_hostile_pickle_runs_its_code_only_inside_the_sandbox(sandbox, tmp_path):
    marker = tmp_path / "unpickled-on-the-host"
    _perturb(sandbox, {"evil.pkl": pickle.dumps({"x": 1.5, "payload": _Touch(marker)}, protocol=4)})
    assert not marker.exists()
