"""Proposal ingestion: English and Chinese heading styles, conservative fields, titles, bad input."""
from __future__ import annotations

from pathlib import Path

import pytest

from trailforge.ideation.proposal import (CORE_FIELDS, ProposalReadError, ProposalSeed, heading_kind,
                                          load_proposal, parse_proposal)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = PROJECT_ROOT / "examples" / "ideation" / "proposals"
REAL_CHINESE_SEED = PROJECT_ROOT.parent / "shared" / "seeds" / "001_ed28dc77333cc076.txt"


def test_english_demo_proposal_fills_every_field():
    seed = load_proposal(EXAMPLES / "en" / "research_proposal.md")
    assert seed.proposal_id == "en"
    assert seed.language == "en"
    assert seed.title == "Epistasis-Aware Fitness Prediction with Protein Language Models"
    assert seed.research_question.startswith("Can the pairwise interactions")
    assert "attention" in seed.thesis.lower()
    assert seed.method.startswith("1. Score every single mutant")
    assert "Spearman" in seed.evaluation
    assert seed.baselines == ["Additive masked-marginal scores from the same model",
                              "A site-independent profile model fitted on the multiple sequence alignment",
                              "A pairwise Potts model fitted on the same alignment"]
    assert len(seed.risks) == 3 and seed.risks[0].startswith("Attention may reflect contacts")
    assert "alignment-free" in seed.novelty_claim
    # The Timeline section ends Novelty instead of running into it.
    assert "Three months" not in seed.novelty_claim
    assert seed.parse_quality.missing == [] and seed.parse_quality.level == "high"


def test_chinese_demo_proposal_with_plain_numbered_headings():
    seed = load_proposal(EXAMPLES / "zh" / "research_proposal.md")
    assert seed.language == "zh"
    # The quoted demo note and the generic "研究提案 草稿" label are skipped for the title.
    assert seed.title == "基于剖面浮标资料的海洋混合层热吸收季节变化机制"
    assert seed.research_question.startswith("冬季混合层快速加深期间")
    assert seed.method.startswith("1. 从剖面浮标资料中筛选")   # shared indentation removed
    assert seed.baselines == ["再分析产品直接给出的混合层热含量变化", "仅考虑海表通量、不含夹卷项的一维模型"]
    assert len(seed.risks) == 3
    assert "预期成果" not in seed.novelty_claim and "数据集" not in seed.novelty_claim
    assert seed.parse_quality.score == 1.0


@pytest.mark.skipif(not REAL_CHINESE_SEED.is_file(), reason="the shared seed folder is not next to the project")
def test_real_chinese_proposal_is_read_conservatively():
    seed = load_proposal(REAL_CHINESE_SEED)
    assert seed.language == "zh"
    assert seed.title == "面向自主科学智能体的沿袭感知轨迹数据工程：从经验累积到自进化训练"
    assert seed.thesis.startswith("提出的方法：Lineage-Aware Trajectory Data Engineering")
    assert seed.method.startswith("阶段一")
    assert seed.background.startswith("当前问题")        # a sub-heading stays inside its section
    assert [r.split("：")[0] for r in seed.risks] == ["沿袭信号噪声", "增量图构建的计算开销", "评估器的可靠性", "沿袭距离的定义"]
    assert seed.novelty_claim is not None
    # No research-question, evaluation or baseline heading: those stay empty instead of being guessed.
    assert seed.research_question is None and seed.evaluation is None and seed.baselines == []
    assert seed.parse_quality.missing == ["research_question", "evaluation", "baselines"]
    assert seed.parse_quality.level == "medium"
    # 预期成果 and 相关工作 are known sections the seed skips; they must not leak into 关键技术挑战.
    assert not any("数据效率" in r or "EvoMaster:" in r for r in seed.risks)


def test_missing_fields_stay_empty_and_are_listed():
    seed = parse_proposal("# A title\n\n## Method\n\nDo the thing.\n")
    assert seed.title == "A title" and seed.method == "Do the thing."
    assert seed.research_question is None and seed.evaluation is None and seed.risks == []
    assert set(seed.parse_quality.missing) == set(CORE_FIELDS) - {"method"} | {"background"}
    assert seed.parse_quality.found == ["method"]
    assert seed.parse_quality.level == "low"


def test_heading_variants():
    for text, kind in [("3. Evaluation plan", "evaluation"), ("**Baselines**", "baselines"), ("方法 (Method)", "method"),
                       ("Risks / 风险", "risks"), ("二、研究问题", "research_question"), ("（3）实验设计", "evaluation"),
                       ("与现有工作的关键区别", "novelty_claim"), ("Related Work", "_other"), ("当前问题", None)]:
        assert heading_kind(text) == kind, text


def test_inline_labels_nesting_and_unknown_headings():
    text = "\n".join([
        "# Sparse probes",
        "Research question: Do sparse probes transfer across layers?",
        "## Method",
        "Train probes.",
        "### Data",
        "Layer activations.",
        "## Appendix notes",       # unknown, same level as Method: ends it
        "Not part of the method.",
        "**Evaluation:**",
        "Held-out accuracy.",
        "- Risks: this list item is content, not a heading",
    ])
    seed = parse_proposal(text)
    assert seed.research_question == "Do sparse probes transfer across layers?"
    assert seed.method == "Train probes.\n### Data\nLayer activations."
    assert seed.evaluation.startswith("Held-out accuracy.")
    assert seed.risks == []


def test_repeated_and_empty_sections_are_reported():
    seed = parse_proposal("# T\n## Risks\n- a\n## Method\n## Risks\n- b\n")
    assert seed.risks == ["a", "b"]
    assert seed.method is None
    assert any("method heading has no text" in p for p in seed.parse_quality.problems)
    assert any("risks appears under more than one heading" in p for p in seed.parse_quality.problems)


def test_title_from_label_line():
    assert parse_proposal("Research proposal: Tidal mixing budgets\n\nMethod\n\nx").title == "Tidal mixing budgets"
    assert parse_proposal("研究提案 已修订\n\n潮汐混合\n").title == "潮汐混合"


def test_bad_input_becomes_a_problem_not_an_error(tmp_path):
    empty = parse_proposal("")
    assert isinstance(empty, ProposalSeed) and empty.title is None
    assert "the proposal is empty" in empty.parse_quality.problems
    assert "not a string" in parse_proposal(None).parse_quality.problems[0]  # type: ignore[arg-type]
    with pytest.raises(ProposalReadError, match="no such proposal file"):
        load_proposal(tmp_path / "missing.md")
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ProposalReadError, match="not UTF-8"):
        load_proposal(tmp_path / "latin1.md")


def test_seed_model_forbids_unknown_keys():
    with pytest.raises(ValueError):
        ProposalSeed(title="x", surprise=1)
