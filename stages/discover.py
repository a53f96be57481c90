"""Stage discover: list the recipe's repositories, or search GitHub and keep the candidates that fit the domain.

Listed repositories (source=local) are only labelled with a discipline; the domain's filters apply to search
candidates (source=github).
"""
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.envs.discover import discover, folder_entries
from trailforge.envs.github import GitHubClient, GitHubError, search_candidates
from trailforge.io import RepoRow, StageRecorder
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed


def main() -> None:
    args = stage_args(__doc__, inputs=[])
    cfg = params_or_exit(args.params)
    recorder = StageRecorder("discover")
    with timed(recorder.figures):
        if cfg.source.kind == "github":
            cache = ContentCache(cache_dir_from_env())
            llm = model_or_exit(cfg, "discover", cache)  # None unless source.expand_keywords=true
            client = GitHubClient(cfg.source.api_url, cache, cfg.source.token_env, cfg.source.max_rate_limit_wait_s)
            try:
                entries = search_candidates(cfg.source, cfg.domain, client, llm, cfg.budget.max_repos, recorder)
            except GitHubError as exc:
                raise SystemExit(f"error: GitHub search failed: {exc}") from None
        else:
            listed, problems = folder_entries(cfg.source.folders, Path.cwd())
            for item_id, reason, message in problems:
                recorder.reject(item_id, reason, message)
            entries = [*cfg.source.repos, *listed]
        rows = discover(entries, cfg.domain, Path.cwd(), cfg.budget.max_repos, recorder,
                        searched=cfg.source.kind == "github")
    print_summary(recorder.write(rows, RepoRow, Path(args.out)))


if __name__ == "__main__":
    main()
