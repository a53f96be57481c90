"""The IdeaTrail recipe for one case: from a finished research proposal to a checked research trajectory.

Steps, in order (each a function below; the stage module only loops over cases):

- ``ingest``: the proposal is parsed conservatively into a ``ProposalSeed`` (deterministic).
- ``advise``: the Advisor (model role ``validator``) turns the seed into Advisor-only context: final
  atoms, what each artifact should end up finding, causal dependencies, and leakage locks (terms that
  may not appear before a stage). The proposal title is always locked until the proposal stage.
- ``direct``: the visible research direction, the only user message the Generator gets. It is
  checked for exact and fuzzy leaks of every lock and asked again, naming the leak, when it leaks.
- ``anchor``: Advisor-side target versions of the four artifacts (never shown to the Generator).
- ``plan``: milestones over the turn budget, by stage shares (deterministic).
- ``portrait`` (optional, ``harness.portraits``): a profile of the case's author (``author.txt``)
  distilled from their papers in the corpus up to the cutoff, given to the Generator as conditioning.
- ``generate``: the Generator (role ``generator``) acts through the seven tools one turn at a time,
  seeing only the direction, its own trajectory and the current stage's generic guidance. Before a
  turn's tool calls run, the one-vote checks of ``qc.py`` run on it (locked term too early, a title
  searched before it was seen, a Scraper URL never observed, an artifact before its stage, a
  citation of an unseen source) and, with ``advisor_check: turn``, the Advisor reviews it with the
  hidden context. A failed turn is asked again with the reason; past ``max_retries_per_turn`` the
  case is rejected with that reason. Nothing of a rejected attempt stays in the trajectory.
- ``judge``: after the idea stage, the judge (role ``judge``) compares the selected idea with the
  anchor. A converged idea continues to the proposal stage (proposal extension); otherwise the
  trajectory ends there (idea only).
- ``label``: a value tier (high, normal, low) for every assistant turn.
- ``qc``: the deterministic one-vote checks on the whole trajectory, grounding against
  ``min_grounding``, and the model rubric whose mean gives the grade.
- ``serialize``: one release record (``record.py``).

Every model call goes through ``LLMClient`` (cached by request), so a re-run resumes where it stopped.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .leakage import STAGES, LeakageLock, find_leaks
from .proposal import ProposalSeed, load_proposal
from .qc import CaseContext, check_trajectory
from .record import VALUE_KEY, build_record
from .tools import TOOL_SCHEMAS, ResearchSession, ToolLimits

ARTIFACTS = {"claim_audit": "claim_audit.md", "synthesis": "synthesis.md", "idea": "idea_candidates.md",
             "proposal": "research_proposal.md"}
STAGE_GUIDANCE = {
    "evidence": "Search the literature broadly, open the most relevant papers, and note what each one "
                "actually shows. Do not write any artifact yet.",
    "claim_audit": "Check the key claims of the papers you read against their sources and record them, "
                   "with the source's URL, in claim_audit.md.",
    "synthesis": "Compare the papers: where they agree, where they conflict, what nobody has tested. "
                 "Write synthesis.md, citing sources by URL.",
    "idea": "Propose a few candidate research ideas, weigh them against the evidence, reject the weak "
            "ones and select one, in idea_candidates.md.",
    "proposal": "Turn the selected idea into a research proposal (question, method, evaluation, "
                "baselines, risks) in research_proposal.md.",
}


class CaseRejected(Exception):
    def __init__(self, reason: str, message: str, **detail: Any):
        super().__init__(message)
        self.reason, self.message, self.detail = reason, message, detail


# -- model outputs ------------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Atom(_Out):
    kind: str
    text: str


class Lock(_Out):
    term: str = Field(min_length=2)
    not_before_stage: Literal["evidence", "claim_audit", "synthesis", "idea", "proposal"]


class AdvisorContext(_Out):
    final_atoms: list[Atom]
    artifact_atoms: dict[str, list[str]] = Field(default_factory=dict)
    causal_dependencies: list[str] = Field(default_factory=list)
    leakage_locks: list[Lock] = Field(default_factory=list)


class VisibleDirection(_Out):
    message: str = Field(min_length=20)


class Anchors(_Out):
    claim_audit: str
    synthesis: str
    idea_candidates: str
    research_proposal: str


class TurnReview(_Out):
    verdict: Literal["pass", "retry"]
    instructions: str = ""


class Convergence(_Out):
    converged: bool
    score: float = Field(ge=0, le=1)
    reason: str = ""


class TurnTiers(_Out):
    tiers: list[Literal["high", "normal", "low"]]


class Portrait(_Out):
    domain_knowledge: str
    research_approach: str
    novelty_style: str
    evidence_preferences: str
    signature_patterns: str


RUBRIC_DIMENSIONS = ("grounding", "process_realism", "staged_convergence", "leakage_control", "artifact_quality")


class Rubric(_Out):
    scores: dict[str, int]
    naturalness: float = Field(ge=1, le=5)

    @field_validator("scores")
    @classmethod
    def _all_dimensions(cls, scores: dict[str, int]) -> dict[str, int]:
        missing = [d for d in RUBRIC_DIMENSIONS if d not in scores]
        if missing or any(not 1 <= v <= 5 for v in scores.values()):
            raise ValueError(f"scores needs each of {list(RUBRIC_DIMENSIONS)} as an integer 1-5; missing {missing}")
        return scores


# -- settings and results -----------------------------------------------------------------------

@dataclass(frozen=True)
class Milestone:
    stage: str
    first_turn: int
    last_turn: int


@dataclass
class CaseResult:
    case_id: str
    record: dict[str, Any]
    endpoint: Literal["idea_only", "proposal_extension"]
    retries: dict[str, int]
    qc: dict[str, Any]
    convergence: dict[str, Any]
    artifacts: dict[str, str] = field(default_factory=dict)


def plan(max_turns: int, shares: dict[str, float]) -> list[Milestone]:
    """Milestones over ``max_turns``: each stage gets its share of the turns (at least one), in stage order."""
    weights = [max(0.0, shares.get(stage, 0.0)) for stage in STAGES]
    total = sum(weights) or 1.0
    counts = [max(1, round(max_turns * w / total)) for w in weights]
    while sum(counts) > max_turns and max(counts) > 1:
        counts[counts.index(max(counts))] -= 1
    milestones, turn = [], 0
    for stage, count in zip(STAGES, counts):
        milestones.append(Milestone(stage, turn, turn + count - 1))
        turn += count
    return milestones


def stage_of(turn: int, milestones: list[Milestone]) -> str:
    for milestone in milestones:
        if milestone.first_turn <= turn <= milestone.last_turn:
            return milestone.stage
    return milestones[-1].stage


# -- the Advisor side ---------------------------------------------------------------------------

def _seed_text(seed: ProposalSeed) -> str:
    return json.dumps(seed.model_dump(exclude={"parse_quality"}), ensure_ascii=False, indent=1)


def advise(seed: ProposalSeed, llm) -> AdvisorContext:
    messages = [
        {"role": "system", "content": (
            "You prepare hidden guidance for reconstructing how a research idea could have been found. You see a "
            "finished proposal. List its final atoms (thesis, method, evaluation, decision rule, novelty, risks), "
            "what each intermediate artifact (claim_audit, synthesis, idea, proposal) should eventually establish, "
            "the causal dependencies between findings, and leakage locks: specific terms from the proposal (method "
            "names, coined phrases, benchmark names) with the earliest stage at which a researcher could plausibly "
            "use them. Stages in order: evidence, claim_audit, synthesis, idea, proposal. Answer with JSON only.")},
        {"role": "user", "content": _seed_text(seed)},
    ]
    return llm.structured(messages, AdvisorContext, role="validator")


def locks_for(seed: ProposalSeed, context: AdvisorContext) -> list[LeakageLock]:
    locks = [LeakageLock(term=lock.term, not_before_stage=lock.not_before_stage) for lock in context.leakage_locks]
    if seed.title and len(seed.title) >= 6:
        locks.append(LeakageLock(term=seed.title, not_before_stage="proposal"))
    return locks


def direct(seed: ProposalSeed, locks: list[LeakageLock], llm, attempts: int, fuzzy_threshold: float) -> str:
    """The visible direction; every attempt that leaks a locked term is refused and asked again."""
    messages = [
        {"role": "system", "content": (
            "Write the opening message a research lead would send to a researcher: the broad question, why it "
            "matters, and any constraints, in two to five sentences. Leave out method names, proposal titles, "
            "benchmark names and anything that gives away the answer. Answer with JSON: {\"message\": \"...\"}.")},
        {"role": "user", "content": f"Research question: {seed.research_question or seed.thesis}\n"
                                    f"Background: {seed.background or ''}\n"
                                    f"Terms that must not appear: {[lock.term for lock in locks]}"},
    ]
    leaks = []
    for _ in range(attempts):
        direction = llm.structured(messages, VisibleDirection, role="validator").message
        leaks = find_leaks(direction, locks, "evidence", fuzzy_threshold=fuzzy_threshold)
        if not leaks:
            return direction
        named = sorted({leak.term for leak in leaks})
        messages = messages + [{"role": "assistant", "content": json.dumps({"message": direction})},
                               {"role": "user", "content": f"That message gives away {named}. Rewrite it without them."}]
    raise CaseRejected("direction_leaks", f"every visible direction leaked a locked term: {sorted({l.term for l in leaks})}")


def anchor(seed: ProposalSeed, context: AdvisorContext, llm) -> Anchors:
    messages = [
        {"role": "system", "content": (
            "Write target versions of four research artifacts that a researcher would have produced on the way to "
            "this proposal: claim_audit (claims checked against sources), synthesis (agreements, conflicts, gaps, "
            "mechanism hypotheses, candidate directions), idea_candidates (several ideas, the winning one marked) and "
            "research_proposal (the most faithful version of the proposal). Markdown text in a JSON object with "
            "keys claim_audit, synthesis, idea_candidates, research_proposal.")},
        {"role": "user", "content": _seed_text(seed) + "\n\nAdvisor context:\n" + context.model_dump_json(indent=1)},
    ]
    return llm.structured(messages, Anchors, role="validator")


def review_turn(context: AdvisorContext, anchors: Anchors, stage: str, prefix: list[dict], turn: dict, llm) -> TurnReview:
    messages = [
        {"role": "system", "content": (
            "You supervise a researcher's work without doing it for them. You know where the work should end up "
            "(hidden context below) but must never reveal it. Judge only the newest turn: is it a natural, grounded "
            f"step for the current stage ({stage}), free of knowledge the researcher could not yet have? Answer with "
            "JSON {\"verdict\": \"pass\"|\"retry\", \"instructions\": \"...\"}; instructions say what to do "
            "differently without naming hidden terms.\n\nHidden context:\n" + context.model_dump_json() +
            "\n\nTarget artifacts:\n" + anchors.model_dump_json())},
        {"role": "user", "content": "Trajectory so far:\n" + json.dumps(prefix[-12:], ensure_ascii=False) +
                                    "\n\nNewest turn:\n" + json.dumps(turn, ensure_ascii=False)},
    ]
    return llm.structured(messages, TurnReview, role="validator")


def judge_convergence(anchors: Anchors, idea_text: str, llm) -> Convergence:
    messages = [
        {"role": "system", "content": (
            "Compare a researcher's selected idea with a target idea. Do they address the same core problem with "
            "the same mechanism and research direction? Answer with JSON {\"converged\": true|false, "
            "\"score\": 0..1, \"reason\": \"...\"}.")},
        {"role": "user", "content": f"Target:\n{anchors.idea_candidates}\n\nResearcher's idea_candidates.md:\n{idea_text}"},
    ]
    return llm.structured(messages, Convergence, role="judge")


def label(messages: list[dict], llm) -> list[str]:
    turns = [m for m in messages if m["role"] == "assistant"]
    listing = [{"turn": i, "content": (m.get("content") or "")[:600],
                "tool_calls": [c["function"]["name"] for c in m.get("tool_calls", [])]} for i, m in enumerate(turns)]
    prompt = [
        {"role": "system", "content": (
            "Rate how much each assistant turn of a research trajectory is worth learning from. high: diagnoses a "
            "root cause, introduces a nontrivial mechanism, selects or revises the winning idea, formalises the "
            "method, or fixes the final proposal. normal: useful reading, claim checking, drafting, consolidating. "
            "low: mechanical, redundant, shallow or formatting work. Answer with JSON {\"tiers\": [...]} holding "
            f"exactly {len(turns)} labels, one per turn in order.")},
        {"role": "user", "content": json.dumps(listing, ensure_ascii=False)},
    ]
    tiers = llm.structured(prompt, TurnTiers, role="judge").tiers
    if len(tiers) != len(turns):
        raise CaseRejected("label_mismatch", f"the labeller gave {len(tiers)} tiers for {len(turns)} turns")
    return tiers


def rubric(messages: list[dict], artifacts: dict[str, str], llm) -> Rubric:
    prompt = [
        {"role": "system", "content": (
            "Score a research trajectory from 1 to 5 on each of: grounding (claims trace to sources it read), "
            "process_realism (searching, reading, doubting and revising as a researcher would), staged_convergence "
            "(the idea emerges from the evidence, not before it), leakage_control (no knowledge it could not yet "
            "have), artifact_quality (the written files are clear and useful). Also give naturalness from 1 to 5. "
            "Answer with JSON {\"scores\": {...}, \"naturalness\": n}.")},
        {"role": "user", "content": json.dumps({"messages": messages[-40:], "artifacts": artifacts}, ensure_ascii=False)[:60000]},
    ]
    return llm.structured(prompt, Rubric, role="judge")


def portrait(author: str, index, cutoff: date, llm) -> str | None:
    """A researcher profile distilled from the author's papers up to the cutoff (None when the corpus has none)."""
    papers = index.papers_by_author(author, cutoff)
    if not papers:
        return None
    listing = [{"title": p.title, "date": p.date.isoformat(), "abstract": p.abstract[:800]} for p in papers[-12:]]
    prompt = [
        {"role": "system", "content": (
            "Describe a researcher from their earlier papers: domain knowledge, research approach, the kind of "
            "novelty they aim for, the evidence they trust, and recurring patterns in their work. Answer with JSON "
            "with keys domain_knowledge, research_approach, novelty_style, evidence_preferences, signature_patterns.")},
        {"role": "user", "content": json.dumps(listing, ensure_ascii=False)},
    ]
    found = llm.structured(prompt, Portrait, role="judge")
    return "\n".join(f"- {k.replace('_', ' ')}: {v}" for k, v in found.model_dump().items())


def grade_of(scores: dict[str, int]) -> str:
    mean = sum(scores.values()) / len(scores)
    return "A" if mean >= 4 else "B" if mean >= 3 else "C"


# -- the Generator side -------------------------------------------------------------------------

GENERATOR_SYSTEM = (
    "You are a researcher exploring an open question with a literature search tool, a page reader, and a "
    "workspace of markdown files. Work step by step: search, read, check claims against their sources, compare "
    "papers, then develop and select an idea. Cite sources by the URLs you have seen. Use the tools; several "
    "calls in one turn are fine. Today is {cutoff}: nothing published later exists for you.")


def _assistant_message(reply: dict) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]
                                               if isinstance(c["arguments"], str) else json.dumps(c["arguments"])}}
                                 for c in calls]
    return message


def _turn_failures(messages: list[dict], turn_stages: list[str], candidate: dict, stage: str,
                   case: CaseContext) -> list[str]:
    """Reasons the candidate turn fails a one-vote check, judged on the trajectory it would extend."""
    probe = case.model_copy(update={"turn_stages": turn_stages + [stage]})
    report = check_trajectory(messages + [candidate], probe)
    index = len(messages)
    return [f"{f.code}: {f.reason}" for f in report.failures if f.message_index == index]


def generate(direction: str, milestones: list[Milestone], session: ResearchSession, case: CaseContext,
             llm, settings, context: AdvisorContext, anchors: Anchors, cutoff: date,
             stop_after: str, profile: str | None = None) -> tuple[list[dict], list[str], dict[str, int]]:
    """Turns up to the end of ``stop_after``'s milestone; returns messages, turn stages and retry counts."""
    system = GENERATOR_SYSTEM.format(cutoff=cutoff.isoformat())
    if profile:
        system += "\n\nYour research profile (let it shape how you work, not what you conclude):\n" + profile
    messages = [{"role": "system", "content": system}, {"role": "user", "content": direction}]
    return continue_generation(messages, [], milestones, session, case, llm, settings, context, anchors, stop_after)


def continue_generation(messages: list[dict], turn_stages: list[str], milestones: list[Milestone],
                        session: ResearchSession, case: CaseContext, llm, settings, context: AdvisorContext,
                        anchors: Anchors, stop_after: str) -> tuple[list[dict], list[str], dict[str, int]]:
    retries: dict[str, int] = {}
    last_turn = next(m.last_turn for m in milestones if m.stage == stop_after)
    for turn in range(len(turn_stages), last_turn + 1):
        stage = stage_of(turn, milestones)
        guidance = {"role": "system", "content": f"Current stage: {stage}. {STAGE_GUIDANCE[stage]}"}
        feedback: list[str] = []
        for attempt in range(settings.max_retries_per_turn + 1):
            prompt = messages + [guidance] + ([{"role": "user", "content": "Your last attempt at this step was "
                                                "not accepted: " + " ".join(feedback) + " Try this step again."}]
                                              if feedback else [])
            candidate = _assistant_message(llm.chat(prompt, TOOL_SCHEMAS, role="generator"))
            failures = _turn_failures(messages, turn_stages, candidate, stage, case)
            if not failures and settings.advisor_check == "turn":
                review = review_turn(context, anchors, stage, messages, candidate, llm)
                if review.verdict == "retry":
                    failures = [f"advisor: {review.instructions or 'not a natural next step'}"]
            if not failures:
                break
            code = failures[0].split(":", 1)[0]
            retries[code] = retries.get(code, 0) + 1
            feedback = [f.split(": ", 1)[1] if ": " in f else f for f in failures]
            if attempt == settings.max_retries_per_turn:
                raise CaseRejected(code, f"turn {turn} ({stage}) still failed after {attempt} retries: {failures[0]}",
                                   turn=turn, retries=retries)
        messages.append(candidate)
        turn_stages.append(stage)
        for call in candidate.get("tool_calls", []):
            observation = session.call(call["function"]["name"], call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                             "content": observation})
    return messages, turn_stages, retries


def _artifacts(workspace: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(workspace.glob("*.md")) if p.is_file()}


def run_case(proposal_path: Path, llm, index, settings, tools_settings, workspace_root: Path,
             cutoff: date) -> CaseResult:
    """One case through every step; raises ``CaseRejected`` with a reason code when it cannot be kept."""
    seed = load_proposal(proposal_path)
    case_id = seed.proposal_id
    context = advise(seed, llm)
    locks = locks_for(seed, context)
    direction = direct(seed, locks, llm, settings.direction_attempts, settings.fuzzy_threshold)
    anchors = anchor(seed, context, llm)
    milestones = plan(settings.max_turns, settings.stage_shares)
    workspace = workspace_root / case_id
    if workspace.exists():
        shutil.rmtree(workspace)  # a re-run starts the case afresh; the model replies come from the cache
    session = ResearchSession(index, cutoff, workspace,
                              ToolLimits(max_observation_chars=tools_settings.max_observation_chars,
                                         default_results=tools_settings.max_results))
    # A live backend has no full paper list: the title check then covers only what the trajectory saw.
    case = CaseContext(locks=locks, turn_stages=[], known_paper_titles=[p.title for p in getattr(index, "papers", [])],
                       fuzzy_threshold=settings.fuzzy_threshold)
    author_file = proposal_path.parent / "author.txt"
    profile = portrait(author_file.read_text(encoding="utf-8").strip(), index, cutoff, llm) \
        if settings.portraits and author_file.is_file() and hasattr(index, "papers_by_author") else None
    messages, turn_stages, retries = generate(direction, milestones, session, case, llm, settings, context,
                                              anchors, cutoff, stop_after="idea", profile=profile)
    idea_text = _artifacts(workspace).get(ARTIFACTS["idea"])
    if idea_text is None:
        raise CaseRejected("missing_artifact", f"no {ARTIFACTS['idea']} after the idea stage")
    convergence = judge_convergence(anchors, idea_text, llm)
    endpoint = "proposal_extension" if convergence.converged and convergence.score >= settings.convergence_threshold \
        else "idea_only"
    if endpoint == "proposal_extension":
        messages, turn_stages, more = continue_generation(messages, turn_stages, milestones, session, case, llm,
                                                          settings, context, anchors, stop_after="proposal")
        for code, count in more.items():
            retries[code] = retries.get(code, 0) + count
        if ARTIFACTS["proposal"] not in _artifacts(workspace):
            raise CaseRejected("missing_artifact", f"no {ARTIFACTS['proposal']} after the proposal stage")
    tiers = label(messages, llm)
    assistant = [m for m in messages if m["role"] == "assistant"]
    for message, tier in zip(assistant, tiers):
        message[VALUE_KEY] = tier
    report = check_trajectory(messages, case.model_copy(update={"turn_stages": turn_stages}))
    if report.failures or report.problems:
        first = report.failures[0].code if report.failures else "qc_problem"
        raise CaseRejected(first, "; ".join([f.reason for f in report.failures] + report.problems)[:1000])
    grounding = report.metrics.grounding_rate
    if grounding is None or grounding < settings.min_grounding:
        raise CaseRejected("low_grounding", f"grounding rate {grounding} below harness.min_grounding="
                                            f"{settings.min_grounding}")
    judged = rubric(messages, _artifacts(workspace), llm)
    if judged.naturalness < settings.min_naturalness:
        raise CaseRejected("low_naturalness", f"naturalness {judged.naturalness} below harness.min_naturalness="
                                              f"{settings.min_naturalness}")
    report.rubric = {k: float(v) for k, v in judged.scores.items()}
    record = build_record(case_id, messages, TOOL_SCHEMAS, parallel_tool_calls=True, src="trailforge/ideatrail",
                          grade=grade_of(judged.scores), naturalness=judged.naturalness,
                          proposal_path=f"{case_id}/{ARTIFACTS['proposal']}" if endpoint == "proposal_extension" else None)
    return CaseResult(case_id=case_id, record=record, endpoint=endpoint, retries=retries,
                      qc=json.loads(report.model_dump_json()), convergence=convergence.model_dump(),
                      artifacts=_artifacts(workspace))
