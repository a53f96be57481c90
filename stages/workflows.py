"""Stage workflows: trace each seed program's values and build its data-flow graph and informative targets."""
import json
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.workflow import trace_seed
from trailforge.executor import build_executor
from trailforge.io import SeedRow, StageRecorder, WorkflowRow, read_rows
from trailforge.io.stage import params_or_exit, print_summary, stage_args, timed
from trailforge.io.store import TIMINGS_FILE
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["seeds"])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("workflows")
    seeds = read_rows(Path(args.seeds) / "data", SeedRow)
    plain_s = _plain_durations(Path(args.seeds) / TIMINGS_FILE)
    sandbox, executor, cache = build_sandbox(cfg.sandbox), build_executor(cfg.executor), ContentCache(cache_dir_from_env())
    with timed(recorder.figures):
        rows = executor.map(
            lambda s: trace_seed(s, sandbox, cache, recorder, cfg.tasks.subflow.min_upstream_ops,
                                 cfg.budget.max_table_rows, plain_s.get(s.seed_id)),
            seeds, label="workflows", cache_hits=lambda: cache.stats.hits, figures=recorder.figures,
        )
    recorder.figures["cache"] = cache.stats.as_dict()
    print_summary(recorder.write([r for r in rows if r is not None], WorkflowRow, Path(args.out)))


def _plain_durations(timings: Path) -> dict[str, float]:
    """The seeds stage's measured run time per seed (for the slowdown figure only; absent is fine, which is
    why timings.json is no DVC dep of this stage)."""
    try:
        return {k: float(v) for k, v in json.loads(timings.read_text())["durations_s"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


if __name__ == "__main__":
    main()
