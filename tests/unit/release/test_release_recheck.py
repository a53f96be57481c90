"""An exported environment re-checks from its folder alone: positive controls accepted, negatives rejected."""
from __future__ import annotations

import json

from trailforge.cache import ContentCache
from trailforge.config.schema import VerifierConfig
from trailforge.envs.answers import extract_answer
from trailforge.envs.verify import verify_task
from trailforge.io import StageRecorder
from trailforge.release.export import write_environment
from trailforge.executor.local import LocalExecutor
from trailforge.release.recheck import recheck_environment, recheck_release
from trailforge.sandbox import LocalSandbox
from trailforge.envs.analysis import parameters
from tests.unit.envs.test_envs_verify import DATA, STATEMENT, make_task

PROGRAM = (
    "import json, os\n"
    "rows = open('data/temps.csv').read().splitlines()\n"
    "print('Rate (1/s): %.4e' % 0.0028144)\n"
    "print('Count: %d' % (len(rows) + 0))\n"
    "print('Total: %.1f' % 12.0)\n"
    "os.makedirs('out', exist_ok=True)\n"
    "json.dump({'jaccard': [0.3, 0.4567, 0.1234]}, open('out/sim.json', 'w'))\n"
    "open('summary.csv', 'w').write('site,mean\\nA,1.5\\nB,2.5312\\n')\n"
)
STDOUT = "Rate (1/s): 2.8144e-03\nCount: 3\nTotal: 12.0\n"
FILES = {"out/sim.json": '{"jaccard": [0.3, 0.4567, 0.1234]}', "summary.csv": "site,mean\nA,1.5\nB,2.5312\n"}


def test_positive_controls_are_verified_exported_and_rechecked(tmp_path):
    (tmp_path / "tree" / "data").mkdir(parents=True)
    (tmp_path / "tree" / "data" / "temps.csv").write_bytes(DATA)
    schema, reference, _ = extract_answer(STDOUT, FILES)
    # The program's numbers are stated (as a real statement lists them), so the task is not underspecified.
    given = "\n## Parameters of the original analysis\n" + "".join(f"- `{p}`\n" for p in parameters(PROGRAM))
    task = make_task(schema=schema, reference=reference, program={"analysis.py": PROGRAM}, statement=STATEMENT + given)
    task = task.model_copy(update={"tree": str(tmp_path / "tree")})
    sandbox, recorder = LocalSandbox(timeout_s=30), StageRecorder("verify")
    row = verify_task(task, VerifierConfig(), sandbox, ContentCache(tmp_path / "cache"), recorder, 24, 50)
    assert row is not None, recorder.rejects
    allowed = row.checks["positive_answer_controls"]
    assert {"integers_as_floats", "whole_numbers_as_integers", "key_order_reversed",
            "rounded_as_stated"} <= set(allowed)
    assert {"list_value_off_10pct", "table_cell_off_10pct"} <= set(row.checks["negative_controls"])
    assert row.tolerances["summary"]["atols"][1][1] < row.tolerances["summary"]["atol"], "its own 4 decimals"

    folder = write_environment(row, tmp_path / "release")
    index = json.loads((folder / "eval" / "controls" / "controls.json").read_text(encoding="utf-8"))
    assert sorted(index["positives"]) == sorted(allowed)
    reordered = folder / "eval" / "controls" / "positives" / "key_order_reversed.json"
    assert reordered.read_bytes().startswith(b'{"summary"')
    report = recheck_environment(folder, sandbox, 24, 50)
    assert report["ok"], report["problems"]
    assert set(report["positives_accepted"]) == {f"answer:{n}" for n in allowed}

    # a positive control the eval does not accept is a problem of the release
    positive = folder / "eval" / "controls" / "positives" / "integers_as_floats.json"
    kept = positive.read_bytes()
    positive.write_text('{"count": 3.5}')
    report = recheck_environment(folder, sandbox, 24, 50)
    assert not report["ok"]
    assert report["problems"] == ["answer:integers_as_floats (allowed) was not accepted"]

    # the release's summary says, per repository, how many of its environments passed
    summary = recheck_release(tmp_path / "release", sandbox, LocalExecutor(), 24, 50)
    assert summary["by_repository"] == {task.repo_id: {"environments": 1, "passed": 0}}
    assert summary["failures"][0]["problems"] == ["answer:integers_as_floats (allowed) was not accepted"]

    # a reference that no longer gives its answer is reported with how the run ended and what the eval said
    positive.write_bytes(kept)
    solution = folder / "solution" / "analysis.py"
    solution.write_text(PROGRAM.replace("len(rows) + 0", "len(rows) + 1"))
    report = recheck_environment(folder, sandbox, 24, 50)
    (problem,) = report["problems"]
    assert problem.startswith("eval exit 1 on a fresh reference run (the run ended exit 0): ")
    assert '"count": "mismatch"' in problem and '"total": "match"' in problem

    # a reference that times out is run once more before it counts against the release
    solution.write_text("import time\ntime.sleep(30)\n" + PROGRAM)
    report = recheck_environment(folder, LocalSandbox(timeout_s=3), 24, 50)
    assert report["reference_retried"] == "timeout"
    assert "the run ended timeout" in report["problems"][0]
