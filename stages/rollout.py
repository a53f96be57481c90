"""Stage rollout: agent episodes in every exported environment, rejection-sampled into trajectories and an SFT file."""
import sys
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.executor import build_executor
from trailforge.io import StageRecorder, TrajectoryRow
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed
from trailforge.rollout.harness import EpisodeLog, load_environment, run_episode
from trailforge.rollout.sampling import select, solvability, write_sft
from trailforge.sandbox import build_sandbox


def main() -> None:
    args = stage_args(__doc__, inputs=["environments"])
    cfg = params_or_exit(args.params)
    if cfg.harness.kind != "rollout":
        sys.exit(f"error: the rollout stage needs harness=default (a rollout harness), not harness.kind={cfg.harness.kind}")
    recorder = StageRecorder("rollout")
    cache = ContentCache(cache_dir_from_env())
    llm = model_or_exit(cfg, "rollout", cache)
    sandbox = build_sandbox(cfg.sandbox)
    if hasattr(sandbox, "hidden_paths"):
        # The agent must not find solutions, graders or cached reference runs by absolute path.
        sandbox.hidden_paths = (str(Path.cwd().resolve()), str(Path(args.environments).resolve()))
    out = Path(args.out)
    folders = sorted(p for p in Path(args.environments).iterdir() if (p / "metadata.json").is_file())
    work = [(folder, attempt) for folder in folders for attempt in range(cfg.harness.attempts)]

    def one(item):
        folder, attempt = item
        env = load_environment(folder)
        log = EpisodeLog(out / "episodes" / env.env_id / f"attempt-{attempt}.jsonl")
        return run_episode(env, attempt, llm, sandbox, cache, cfg.harness, log, cfg.llm.model)

    with timed(recorder.figures):
        trajectories = build_executor(cfg.executor).map(one, work, label="rollout", cache_hits=lambda: cache.stats.hits,
                                                         cost_usd=lambda: llm.usage.cost_usd, figures=recorder.figures)
    rows = select(trajectories, cfg.harness.keep_failures, recorder)
    recorder.figures["solvability"] = solvability(trajectories)
    recorder.figures["llm"] = llm.usage.as_dict()
    recorder.figures["exit_status"] = {s: sum(t["exit_status"] == s for t in trajectories)
                                       for s in sorted({t["exit_status"] for t in trajectories})}
    out.mkdir(parents=True, exist_ok=True)
    recorder.figures["sft_records"] = write_sft(rows, out / "sft.jsonl", cfg.harness.max_context_tokens, recorder)
    print_summary(recorder.write(rows, TrajectoryRow, out))


if __name__ == "__main__":
    main()
