"""Stage ideation: IdeaTrail trajectories, one case per research proposal, checked and serialized.

Writes ``trajectories.jsonl`` (one release record per kept trajectory), the rows with their checks,
the artifacts each trajectory wrote (``artifacts/<case>/``), rejects with reasons, and stats.
"""
import sys
from datetime import date
from pathlib import Path

from trailforge.cache import ContentCache, cache_dir_from_env
from trailforge.executor import build_executor
from trailforge.ideation.corpus import LiteratureIndex
from trailforge.ideation.pipeline import CaseRejected, run_case
from trailforge.ideation.record import serialize_record
from trailforge.ideation.tools import ArxivAPIBackend
from trailforge.io import IdeationRow, StageRecorder
from trailforge.io.stage import model_or_exit, params_or_exit, print_summary, stage_args, timed
from trailforge.llm import BudgetExhausted, LLMError


def main() -> None:
    args = stage_args(__doc__, inputs=[])
    cfg = params_or_exit(args.params)
    if cfg.harness.kind != "ideation":
        sys.exit("error: the ideation stage needs harness=ideation (recipe=ideatrail sets it)")
    cache = ContentCache(cache_dir_from_env())
    llm = model_or_exit(cfg, "ideation", cache)
    if cfg.tools.backend == "arxiv_api":
        index, unreadable = ArxivAPIBackend(min_interval_s=cfg.tools.min_request_interval_s), []
    else:
        index, unreadable = LiteratureIndex.from_files(cfg.tools.corpus, cfg.tools.format)
    recorder = StageRecorder("ideation")
    for where, reason, message in unreadable:
        recorder.reject(where, reason, message)
    cases = sorted(p.parent for p in Path(cfg.harness.proposals).glob("*/research_proposal.md"))
    if not cases:
        sys.exit(f"error: harness.proposals: no <case>/research_proposal.md under {cfg.harness.proposals}")
    out = Path(args.out)

    def one(case: Path) -> IdeationRow | None:
        cutoff_file = case / "cutoff.txt"
        cutoff = date.fromisoformat((cutoff_file.read_text().strip() if cutoff_file.is_file() else cfg.harness.cutoff))
        try:
            result = run_case(case / "research_proposal.md", llm, index, cfg.harness, cfg.tools,
                              out / "artifacts", cutoff)
        except CaseRejected as exc:
            recorder.reject(case.name, exc.reason, exc.message, **exc.detail)
        except (BudgetExhausted, LLMError) as exc:
            recorder.reject(case.name, getattr(exc, "reason", "model_error"), str(exc))
        else:
            recorder.count(result.endpoint)
            return IdeationRow(sample_id=result.case_id, endpoint=result.endpoint,
                               grade=result.record.get("_grade"), retries=result.retries,
                               turns=sum(m["role"] == "assistant" for m in result.record["messages"]),
                               convergence=result.convergence, qc=result.qc, record=result.record)
        return None

    with timed(recorder.figures):
        done = build_executor(cfg.executor).map(one, cases, label="ideation", cache_hits=lambda: cache.stats.hits,
                                                cost_usd=lambda: llm.usage.cost_usd, figures=recorder.figures)
    rows = [row for row in done if row is not None]
    recorder.figures["llm"] = llm.usage.as_dict()
    recorder.figures["retries"] = {code: sum(r.retries.get(code, 0) for r in rows)
                                   for code in sorted({c for r in rows for c in r.retries})}
    stats = recorder.write(rows, IdeationRow, out)
    with open(out / "trajectories.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(serialize_record(row.record))
    print_summary(stats)


if __name__ == "__main__":
    main()
