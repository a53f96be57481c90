"""Stage tier: seeds judged and consolidated by a model (a local OpenAI-compatible server), checked by runs."""
from __future__ import annotations

import json

from conftest import make_repo, run_stage, stats, write_params
from trailforge.io import SeedRow, read_rejects, read_rows
from trailforge.testing.openai_server import FakeOpenAIServer

HELPERS = "def shannon(counts):\n    import math\n    total = sum(counts)\n" \
          "    return -sum(c / total * math.log(c / total) for c in counts if c)\n"
ANALYSIS = ("import csv\nfrom helpers import shannon\n"
            "counts = [float(r['count']) for r in csv.DictReader(open('data/obs.csv'))]\n"
            "print(f'Shannon index: {shannon(counts):.6f}')\nprint(f'Total: {int(sum(counts))}')\n")
INLINED = ("import csv\nimport math\n\n\ndef shannon(counts):\n    total = sum(counts)\n"
           "    return -sum(c / total * math.log(c / total) for c in counts if c)\n\n\n"
           "counts = [float(r['count']) for r in csv.DictReader(open('data/obs.csv'))]\n"
           "print(f'Shannon index: {shannon(counts):.6f}')\nprint(f'Total: {int(sum(counts))}')\n")
PLOT = "import csv\nrows = list(csv.DictReader(open('data/obs.csv')))\nprint('Rows plotted:', len(rows))\n"


def _model(consolidated: str):
    def reply(request):
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        if system.startswith("You screen"):
            plotting = "Rows plotted" in user
            return json.dumps({"complete_analysis": not plotting, "reason": "plots only" if plotting else "ok"})
        return json.dumps({"script": consolidated})
    return reply


def _build(tmp_path, consolidated):
    project = tmp_path / "project"
    project.mkdir()
    repo = make_repo(tmp_path / "repos" / "meadow-shannon", {
        "README.md": "Species abundance survey of meadow habitat biodiversity.\n", "analysis.py": ANALYSIS,
        "helpers.py": HELPERS, "plot_rows.py": PLOT, "data/obs.csv": "species,count\na,5\nb,3\nc,4\n",
    })
    with FakeOpenAIServer(responder=_model(consolidated)) as server:
        write_params(project, [str(repo)], ["tasks.seeds.judge=true", "tasks.seeds.consolidate=true", "llm=vllm",
                                            f"llm.api_base={server.url}", "llm.model=openai/fake"])
        run_stage(project, "discover", "--out", "out/discover")
        run_stage(project, "snapshot", "--repos", "out/discover", "--out", "out/snapshot")
        run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds")
        calls = server.calls
        assert calls == 3  # two judgements and one consolidation
        run_stage(project, "seeds", "--snapshots", "out/snapshot", "--out", "out/seeds-again")
        assert server.calls == calls, "a second run makes no model call"
    return project


def test_the_judge_drops_a_non_analysis_and_a_faithful_consolidation_is_kept(tmp_path):
    project = _build(tmp_path, INLINED)
    seeds = read_rows(project / "out/seeds/data", SeedRow)
    assert [s.script for s in seeds] == ["analysis.py"]
    assert ("meadow-shannon:plot_rows.py", "not_an_analysis") in {
        (r.item_id, r.reason) for r in read_rejects(project / "out/seeds/rejects.parquet")}
    seed = seeds[0]
    assert seed.program_files == ["analysis.py"] and seed.tree.startswith("out/seeds/trees/")
    assert (project / seed.tree / "analysis.py").read_text() == INLINED
    assert stats(project / "out/seeds")["counters"]["seeds_consolidated"] == 1
    # the consolidated seed flows on: its workflow is traced from the new single file
    run_stage(project, "workflows", "--seeds", "out/seeds", "--out", "out/workflows")
    assert stats(project / "out/workflows")["accepted"] == 1


def test_a_consolidation_that_changes_a_result_is_refused_and_the_original_kept(tmp_path):
    project = _build(tmp_path, INLINED.replace("math.log(c / total)", "math.log2(c / total)"))
    seed = read_rows(project / "out/seeds/data", SeedRow)[0]
    assert seed.program_files == ["analysis.py", "helpers.py"] and seed.tree.startswith("out/snapshot/")
    rejects = {(r.item_id, r.reason) for r in read_rejects(project / "out/seeds/rejects.parquet")}
    assert ("meadow-shannon:analysis.py#consolidated", "consolidation_mismatch") in rejects
