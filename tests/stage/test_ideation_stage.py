"""Stage tier: the IdeaTrail loop end to end, with a local OpenAI-compatible server scripting the
Generator, the Advisor and the judge (each role its own model name), through litellm."""
from __future__ import annotations

import json

import pytest

from conftest import PROJECT_ROOT, run_stage, stats, timings
from trailforge.config import compose, validate, write_params
from trailforge.ideation.record import validate_record
from trailforge.release.corpus_audit import audit_corpus
from trailforge.testing.openai_server import FakeOpenAIServer

PAPERS = [
    ("p1", "Zero-shot variant effect scores from masked protein language models", "2021-03-01"),
    ("p2", "Attention maps of protein language models recover residue contacts", "2020-12-01"),
    ("p3", "Deep mutational scans of double mutants reveal widespread epistasis", "2019-06-01"),
    ("p4", "Additive models underestimate fitness of multi-mutant variants", "2022-05-01"),
    ("late", "Protein language model epistasis scores for multi-mutant fitness", "2026-01-01"),
]
TITLE = "Attention Priors for Multi-Mutant Fitness"
LOCKED = "attention prior"
PROPOSAL = f"""# {TITLE}

## Background

Protein language models score single mutations well but multi-mutant variants poorly.

## Research Question

Can pairwise signals inside protein language models predict epistasis between mutations without labels?

## Thesis

A learned {LOCKED} over residue pairs corrects additive scores for multi-mutant fitness.

## Method

Combine masked-marginal scores with a pairwise term read from attention maps.

## Evaluation

Spearman correlation on double-mutant deep mutational scans.

## Baselines

- additive masked-marginal scores

## Risks

- attention may reflect structure, not fitness

## Novelty

First zero-shot epistasis estimate from attention.
"""


def _project(tmp_path, overrides=()):
    project = tmp_path / "project"
    (project / "cases" / "plm").mkdir(parents=True)
    (project / "cases" / "plm" / "research_proposal.md").write_text(PROPOSAL)
    corpus = project / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({
        "id": pid, "title": title, "abstract": f"{title}. We study protein language model fitness and epistasis.",
        "authors": ["A. Author"], "date": day, "url": f"https://example.org/papers/{pid}"}) + "\n"
        for pid, title, day in PAPERS))
    return project, corpus


def _params(project, corpus, server, overrides=()):
    data = compose("ideatrail", [
        "llm=openai", "llm.model=openai/generator", f"llm.api_base={server.url}/v1", "llm.api_key_env=FAKE_KEY",
        "+llm.roles.validator.model=openai/advisor", "+llm.roles.judge.model=openai/judge",
        f"harness.proposals={project / 'cases'}", "harness.cutoff=2025-06-30", "harness.max_turns=10",
        f"tools.corpus=[{corpus}]", *overrides], root=PROJECT_ROOT)
    validate(data)
    write_params(data, project / "params.yaml")


def _call(name, arguments):
    return {"name": name, "arguments": arguments}


def _last_result_url(messages):
    for message in reversed(messages):
        if message["role"] == "tool" and '"results"' in message["content"]:
            return json.loads(message["content"])["results"][0]["url"]
    return None


class Script:
    """Scripted roles. ``mode`` picks how the Generator misbehaves; the Advisor and judge are fixed."""

    def __init__(self, mode="pass", converge=True):
        self.mode, self.converge = mode, converge
        self.retried = 0

    def __call__(self, request):
        role = request["model"].split("/")[-1]
        return getattr(self, role)(request)

    # -- Generator
    def generator(self, request):
        messages = request["messages"]
        stage = next(m["content"] for m in reversed(messages) if m["role"] == "system"
                     and m["content"].startswith("Current stage:")).split(".")[0].split(": ")[1]
        retry = messages[-1]["role"] == "user" and "not accepted" in messages[-1]["content"]
        turn = sum(m["role"] == "assistant" for m in messages)
        url = _last_result_url(messages)
        if stage == "evidence" and turn == 0:
            if self.mode == "leak" and not retry:
                return {"tool_calls": [_call("WebSearch", {"query": f"{LOCKED} multi-mutant fitness"})]}
            if self.mode == "title":
                return {"tool_calls": [_call("WebSearch", {"query": PAPERS[3][1]})]}
            return {"content": "Start broad.", "tool_calls": [
                _call("WebSearch", {"query": "protein language model fitness epistasis"}),
                _call("WebSearch", {"query": "double mutant deep mutational scan"})]}  # parallel calls
        if stage == "evidence":
            if self.mode == "fake_url":
                return {"tool_calls": [_call("Scraper", {"url": "https://example.org/papers/never-seen"})]}
            return {"tool_calls": [_call("Scraper", {"url": url})]}
        source = _source(messages)
        first = turn in (2, 4, 6, 8)
        name = {"claim_audit": "claim_audit.md", "synthesis": "synthesis.md", "idea": "idea_candidates.md",
                "proposal": "research_proposal.md"}[stage]
        if first:
            return {"tool_calls": [_call("Write", {"path": name, "content": f"# {stage}\n\n- (to fill)\n"})]}
        body = f"- Multi-mutant scores fall short of additive predictions ({source}).\n"
        if stage == "idea":
            body += f"- Selected: an {LOCKED} from attention maps ({source}).\n"
        return {"tool_calls": [_call("Edit", {"path": name, "old_string": "- (to fill)\n", "new_string": body})]}

    # -- Advisor
    def advisor(self, request):
        system = request["messages"][0]["content"]
        if system.startswith("You prepare hidden guidance"):
            return json.dumps({"final_atoms": [{"kind": "thesis", "text": f"an {LOCKED}"}],
                               "artifact_atoms": {"idea": ["attention-derived pairwise term"]},
                               "causal_dependencies": ["contacts -> epistasis"],
                               "leakage_locks": [{"term": LOCKED, "not_before_stage": "idea"}]})
        if system.startswith("Write the opening message"):
            if self.mode == "direction_leak" and len(request["messages"]) == 2:  # the first attempt gives it away
                return json.dumps({"message": f"Build an {LOCKED} for multi-mutant fitness and test it on scans."})
            return json.dumps({"message": "Multi-mutant protein variants are hard to score without labels. Find out "
                                          "what is known and propose a direction worth testing."})
        if system.startswith("Write target versions"):
            return json.dumps({"claim_audit": "-", "synthesis": "-", "idea_candidates": f"- {LOCKED}",
                               "research_proposal": TITLE})
        return json.dumps({"verdict": "pass"})

    # -- judge
    def judge(self, request):
        system = request["messages"][0]["content"]
        if system.startswith("Describe a researcher"):
            return json.dumps({"domain_knowledge": "protein fitness", "research_approach": "zero-shot scoring",
                               "novelty_style": "reuse model internals", "evidence_preferences": "deep mutational scans",
                               "signature_patterns": "careful baselines"})
        if system.startswith("Compare a researcher"):
            return json.dumps({"converged": self.converge, "score": 0.9 if self.converge else 0.2, "reason": "-"})
        if system.startswith("Rate how much"):
            turns = json.loads(request["messages"][1]["content"])
            return json.dumps({"tiers": ["normal"] * (len(turns) - 1) + ["high"]})
        return json.dumps({"scores": {d: 4 for d in ("grounding", "process_realism", "staged_convergence",
                                                      "leakage_control", "artifact_quality")}, "naturalness": 4})


def _source(messages):
    for message in messages:
        if message["role"] == "tool" and "URL:" in message["content"]:
            for line in message["content"].splitlines():
                if line.startswith("URL:"):
                    return line.split("URL:", 1)[1].strip()
    return _last_result_url(messages)


def _run(tmp_path, script, overrides=()):
    project, corpus = _project(tmp_path)
    with FakeOpenAIServer(responder=script) as server:
        _params(project, corpus, server, overrides)
        done = run_stage(project, "ideation", "--out", "out", cache=tmp_path / "cache",
                         check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return project, stats(project / "out")


def _records(project):
    return [json.loads(line) for line in (project / "out/trajectories.jsonl").read_text().splitlines()]


def test_a_clean_trajectory_passes_and_extends_to_a_proposal(tmp_path):
    project, figures = _run(tmp_path, Script())
    assert figures["accepted"] == 1 and figures["counters"] == {"proposal_extension": 1}, figures
    record = _records(project)[0]
    assert validate_record(record) == []
    assert record["_proposal_synth"] is True and record["_grade"] == "A"
    assistant = [m for m in record["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 10 and all(m["_value"] in ("high", "normal", "low") for m in assistant)
    assert len(assistant[0]["tool_calls"]) == 2  # parallel calls in one message
    seen = " ".join(m["content"] for m in record["messages"] if m["role"] == "tool")
    assert "papers/late" not in seen, "a paper after the cutoff was served"
    assert (project / "out/artifacts/plm/research_proposal.md").is_file()
    audit = audit_corpus(project / "out/trajectories.jsonl", threads=1)  # the corpus audit reads the release
    assert audit["rejects"]["total"] == 0 and audit["scale"]["trajectories"] == 1
    assert audit["format"]["unmatched_tool_observations"] == 0 and audit["format"]["calls_without_observation"] == 0
    assert {k: v["count"] for k, v in audit["metadata"]["grades"].items()} == {"A": 1}


def test_a_locked_term_used_too_early_is_retried_and_then_passes(tmp_path):
    project, figures = _run(tmp_path, Script(mode="leak"))
    assert figures["accepted"] == 1 and figures["retries"] == {"oracle_leakage": 1}
    messages = _records(project)[0]["messages"]
    first_turn = next(m for m in messages if m["role"] == "assistant")
    assert LOCKED not in json.dumps(first_turn)


def test_a_visible_direction_that_leaks_is_asked_again(tmp_path):
    project, figures = _run(tmp_path, Script(mode="direction_leak"))
    assert figures["accepted"] == 1
    user = next(m for m in _records(project)[0]["messages"] if m["role"] == "user")
    assert LOCKED not in user["content"].lower() and "multi-mutant" in user["content"].lower()


def test_a_scraped_url_never_observed_is_caught(tmp_path):
    _, figures = _run(tmp_path, Script(mode="fake_url"))
    assert figures["accepted"] == 0 and figures["reject_reasons"] == {"fake_url": 1}


def test_a_title_searched_before_it_was_seen_is_caught(tmp_path):
    _, figures = _run(tmp_path, Script(mode="title"))
    assert figures["accepted"] == 0 and figures["reject_reasons"] == {"title_pre_knowledge": 1}


def test_an_idea_that_does_not_converge_ends_after_idea_selection(tmp_path):
    project, figures = _run(tmp_path, Script(converge=False))
    assert figures["counters"] == {"idea_only": 1}
    record = _records(project)[0]
    assert "_proposal_synth" not in record and "_proposal_path" not in record
    assert sum(m["role"] == "assistant" for m in record["messages"]) == 8
    assert not (project / "out/artifacts/plm/research_proposal.md").exists()
    assert validate_record(record) == []


def test_without_a_model_the_stage_says_which_config_to_set(tmp_path):
    project, corpus = _project(tmp_path)
    data = compose("ideatrail", [f"harness.proposals={project / 'cases'}"], root=PROJECT_ROOT)
    write_params(data, project / "params.yaml")
    done = run_stage(project, "ideation", "--out", "out", check=False)
    assert done.returncode != 0 and "llm=openai" in done.stderr


def test_a_researcher_portrait_conditions_the_generator(tmp_path):
    script = Script()
    seen = []
    original = script.generator

    def generator(request):
        seen.append(request["messages"][0]["content"])
        return original(request)

    script.generator = generator
    project, corpus = _project(tmp_path)
    (project / "cases/plm/author.txt").write_text("A. Author\n")
    with FakeOpenAIServer(responder=script) as server:
        _params(project, corpus, server, ["harness.portraits=true"])
        run_stage(project, "ideation", "--out", "out", cache=tmp_path / "cache")
    assert stats(project / "out")["accepted"] == 1
    assert "research profile" in seen[0] and "deep mutational scans" in seen[0]
    record = _records(project)[0]
    assert "deep mutational scans" in record["messages"][0]["content"]


def test_cases_run_as_ray_tasks_give_the_same_records_as_local(tmp_path):
    pytest.importorskip("ray")
    from trailforge.executor.ray_cluster import LoopbackCluster

    local, _ = _run(tmp_path / "local", Script())
    with LoopbackCluster(workers=1, env={"PYTHONPATH": str(PROJECT_ROOT)}) as cluster:
        remote, figures = _run(tmp_path / "ray", Script(), ["executor=ray", f"executor.address={cluster.address}"])
    assert figures["accepted"] == 1 and figures["counters"] == {"proposal_extension": 1}
    measured = timings(remote / "out")
    assert sum(n["items"] for n in measured["executor"]["ideation"]["nodes"].values()) == 1
    assert measured["llm"]["calls"] == timings(local / "out")["llm"]["calls"] > 0  # usage came back from the worker
    assert _records(remote) == _records(local)
    assert (remote / "out/artifacts/plm/research_proposal.md").read_text() == \
        (local / "out/artifacts/plm/research_proposal.md").read_text()
