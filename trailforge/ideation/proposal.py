"""Proposal ingestion: a ``research_proposal.md`` (English or Chinese) read into a ``ProposalSeed``.

The seed is the factual base the rest of the recipe plans from, so the reader only copies what the
proposal says under recognisable headings and never fills a gap: a field without a heading stays
empty and is listed in ``parse_quality.missing``.

What counts as a heading:

- a Markdown heading (``#`` to ``######``), a line that is bold on its own (``**Method**``), or a bare
  line whose whole text, once numbering ("2.", "二、", "(3)") and a trailing colon are stripped, is one
  of the known names in ``SECTION_ALIASES`` (the Chinese style, where headings are plain lines);
- a bilingual heading ("方法 (Method)", "Risks / 风险") matches when either half does;
- ``Name: text`` on one line (not a list item) opens that section with ``text`` as its first line.

A known heading opens its section; so does a known heading of a part the seed does not keep (related
work, references, expected outcomes, ...), which ends the previous section. An unknown Markdown
heading at the same or a higher level than the open section ends it too; a deeper one is part of it.
Unknown bare lines are always content, which keeps sub-headings such as "当前问题" inside their section.

The title is the first Markdown heading that is not a section name; without one, the first non-empty
line that is not a quoted note (``> ...``), a section name or a generic label such as "研究提案 已修订"
or "Research proposal (draft)". "Research proposal: X" gives the title X.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Seed field -> the heading names that introduce it, compared after normalisation (lower case, single
# spaces, no numbering or trailing colon).
SECTION_ALIASES: dict[str, tuple[str, ...]] = {
    "research_question": (
        "research question", "research questions", "the research question", "question", "questions",
        "research problem", "problem", "problem statement", "the problem", "key question",
        "研究问题", "科学问题", "问题陈述", "拟解决的问题", "拟解决的关键问题", "核心问题"),
    "thesis": (
        "thesis", "core idea", "key idea", "main idea", "central idea", "core thesis", "hypothesis",
        "central hypothesis", "main hypothesis", "key insight",
        "核心思路", "核心思想", "核心观点", "核心假设", "研究假设", "假设", "主要思路", "基本思路"),
    "background": (
        "background", "motivation", "background and motivation", "motivation and background",
        "introduction", "context",
        "背景", "研究背景", "背景与动机", "动机", "研究动机", "引言", "研究意义", "背景与意义"),
    "method": (
        "method", "methods", "methodology", "approach", "proposed method", "proposed approach",
        "technical approach", "technical route", "method design", "research plan", "research design",
        "方法", "研究方法", "技术路线", "技术方案", "方法设计", "研究方案", "研究内容", "实施方案"),
    "evaluation": (
        "evaluation", "evaluation plan", "evaluation setup", "evaluation protocol", "experiments",
        "experiment", "experimental design", "experimental setup", "experimental plan", "validation",
        "experiments and evaluation", "evaluation and experiments",
        "评估", "评估方案", "评估方法", "评价", "评价指标", "实验", "实验设计", "实验方案", "验证",
        "实验与评估", "评估与实验", "实验验证"),
    "baselines": (
        "baselines", "baseline", "baseline methods", "comparison methods", "compared methods",
        "comparisons", "基线", "基线方法", "对比方法", "对比基线", "比较方法"),
    "risks": (
        "risks", "risk", "risks and mitigations", "risks and mitigation", "risks and limitations",
        "challenges", "key challenges", "technical challenges", "open challenges", "limitations",
        "风险", "风险与对策", "风险与应对", "风险分析", "关键技术挑战", "技术挑战", "挑战", "主要挑战",
        "局限性", "难点"),
    "novelty_claim": (
        "novelty", "novelty claim", "innovation", "innovations", "what is new", "key differences",
        "key differences from prior work", "difference from prior work", "differences from existing work",
        "comparison with prior work",
        "创新点", "创新性", "主要创新", "特色与创新", "与现有工作的关键区别", "与现有工作的区别",
        "与已有工作的区别"),
}

# Parts of a proposal the seed does not keep: their headings only end the section before them.
OTHER_SECTIONS: tuple[str, ...] = (
    "abstract", "summary", "overview", "expected outcomes", "expected results", "expected contributions",
    "contributions", "impact", "broader impact", "related work", "prior work", "references", "bibliography",
    "timeline", "schedule", "milestones", "resources", "budget", "appendix", "implementation",
    "implementation details", "keywords", "ethics", "acknowledgements", "open questions",
    "摘要", "概要", "概述", "预期成果", "预期结果", "预期贡献", "可能的影响", "影响", "相关工作", "参考文献",
    "时间安排", "时间规划", "进度安排", "研究计划", "资源需求", "预算", "附录", "实施细节", "关键词",
    "关联内容", "致谢", "伦理",
)

LIST_FIELDS = ("baselines", "risks")
# The fields parse_quality scores; background helps planning but a proposal is complete without one.
CORE_FIELDS = ("research_question", "thesis", "method", "evaluation", "baselines", "risks", "novelty_claim")
QUALITY_LEVELS = ((6 / 7, "high"), (4 / 7, "medium"))

_ALIAS_TO_FIELD = {alias: name for name, aliases in SECTION_ALIASES.items() for alias in aliases}
_OTHER = "_other"
_KNOWN = {**_ALIAS_TO_FIELD, **{alias: _OTHER for alias in OTHER_SECTIONS}}

_MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^(\*\*|__)(.+?)\1\s*[:：]?\s*$")
_NUMBERING = re.compile(
    r"^\s*(?:(?:第[一二三四五六七八九十\d]+[部分章节]?[、.．:：]?)"
    r"|(?:[一二三四五六七八九十]+[、.．])"
    r"|(?:[(（][一二三四五六七八九十\d]+[)）])"
    r"|(?:\d+(?:\.\d+)*[.)、．]?(?=\s|[^\d.]))"
    r"|(?:[IVX]+\.(?=\s)))\s*")
_INLINE_LABEL = re.compile(r"^(?:\*\*|__)?([^:：*_]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(\S.*)$")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+•·●▪]|\d+[.)、]|[(（]\d+[)）]|[a-zA-Z][.)])\s+(.*)$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_GENERIC_LABELS = ("research proposal", "proposal", "研究提案", "研究计划书", "提案")
_STATUS_WORDS = re.compile(r"^[\s\-–—()（）\[\]【】]*(已修订|修订版|草稿|初稿|终稿|定稿|draft|revised|final|v\d+(\.\d+)*)?"
                           r"[\s\-–—()（）\[\]【】]*$", re.IGNORECASE)


class ParseQuality(BaseModel):
    """How much of the proposal the reader found: the fields present, those missing, and a score."""
    model_config = ConfigDict(extra="forbid")

    found: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    score: float = 0.0                        # share of CORE_FIELDS found
    level: Literal["high", "medium", "low"] = "low"
    title_found: bool = False
    problems: list[str] = Field(default_factory=list)


class ProposalSeed(BaseModel):
    """The structured content of one proposal, copied from it and nothing more."""
    model_config = ConfigDict(extra="forbid")

    proposal_id: str | None = None
    title: str | None = None
    language: Literal["en", "zh"] = "en"
    research_question: str | None = None
    thesis: str | None = None
    background: str | None = None
    method: str | None = None
    evaluation: str | None = None
    baselines: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    novelty_claim: str | None = None
    parse_quality: ParseQuality = Field(default_factory=ParseQuality)


class ProposalReadError(ValueError):
    """A proposal file that cannot be read at all; the message names the file and why."""


def _normalise_heading(text: str) -> str:
    text = text.strip().strip("*_`").strip()
    text = _NUMBERING.sub("", text, count=1)
    text = text.strip().rstrip(":：").strip().strip("*_`").strip()
    return " ".join(text.lower().split())


def heading_kind(text: str) -> str | None:
    """The seed field a heading introduces, ``"_other"`` for a known part the seed skips, else None."""
    name = _normalise_heading(text)
    if name in _KNOWN:
        return _KNOWN[name]
    # Bilingual headings: "方法 (Method)", "Risks / 风险", "评估 Evaluation".
    halves = [h for h in re.split(r"\s*[/|()（）]\s*", name) if h]
    for half in halves:
        if half in _KNOWN:
            return _KNOWN[half]
    cjk_then_latin = re.match(r"^([^\x00-\x7f]+)\s+([a-z][a-z ]*)$", name)
    if cjk_then_latin:
        for half in cjk_then_latin.groups():
            if half.strip() in _KNOWN:
                return _KNOWN[half.strip()]
    return None


def detect_language(text: str) -> Literal["en", "zh"]:
    """``zh`` when Han characters make up at least a fifth of the letters, else ``en``."""
    han = sum(1 for c in text if "\u4e00" <= c <= "\u9fff")
    latin = sum(1 for c in text if c.isascii() and c.isalpha())
    return "zh" if han and han >= 0.2 * (han + latin) else "en"


def _title_from_label(line: str) -> tuple[bool, str | None]:
    """Whether a line is a generic "research proposal" label, and the title it carries after a colon."""
    stripped = line.strip().strip("#*_ ").strip()
    lowered = stripped.lower()
    for label in _GENERIC_LABELS:
        if lowered.startswith(label):
            rest = stripped[len(label):]
            if _STATUS_WORDS.match(rest):
                return True, None
            carried = re.match(r"^\s*[:：\-–—]\s*(\S.*)$", rest)
            if carried:
                return True, carried.group(1).strip()
    return False, None


class _Section:
    def __init__(self, kind: str, level: int):
        self.kind, self.level, self.lines = kind, level, []


def _split_sections(lines: list[str]) -> tuple[list[_Section], str | None]:
    """Walk the lines once: the sections in order and the first Markdown heading usable as a title."""
    sections: list[_Section] = []
    current: _Section | None = None
    markdown_title: str | None = None
    for line in lines:
        markdown = _MARKDOWN_HEADING.match(line)
        bold = _BOLD_LINE.match(line.strip())
        if markdown:
            level, text = len(markdown.group(1)), markdown.group(2)
            kind = heading_kind(text)
            if kind is None:
                if markdown_title is None and text.strip():
                    markdown_title = text.strip().strip("*_").strip()
                if current is not None and level <= current.level:
                    current = None
                elif current is not None:
                    current.lines.append(line)
                continue
            current = _Section(kind, level)
            sections.append(current)
            continue
        bare = bold.group(2) if bold else line
        kind = heading_kind(bare) if len(bare.strip()) <= 60 and not _LIST_ITEM.match(line) else None
        if kind is not None:
            # A bare or bold heading has no level; it sits below any Markdown heading around it.
            current = _Section(kind, 7)
            sections.append(current)
            continue
        inline = _INLINE_LABEL.match(line.strip()) if not _LIST_ITEM.match(line) else None
        inline_kind = heading_kind(inline.group(1)) if inline else None
        if inline_kind is not None and inline_kind != _OTHER:
            current = _Section(inline_kind, 7)
            current.lines.append(inline.group(2))
            sections.append(current)
            continue
        if current is not None:
            current.lines.append(line)
    return sections, markdown_title


def _clean_block(lines: list[str]) -> str | None:
    """Section lines as text: outer blank lines dropped, inner runs of blank lines folded to one."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if not line.strip():
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    # Indentation shared by every line is layout of the source document, not content.
    return textwrap.dedent("\n".join(out)) if out else None


def _list_items(text: str) -> list[str]:
    """Items of a section: its outermost list items (deeper lines joined to their item), else paragraphs."""
    lines = text.splitlines()
    items_found = [(len(m.group(1).expandtabs(4)), m.group(2)) for m in map(_LIST_ITEM.match, lines) if m]
    if not items_found:
        return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    top_indent = min(indent for indent, _ in items_found)
    items: list[str] = []
    for line in lines:
        if not line.strip() or _TABLE_SEPARATOR.match(line):
            continue
        match = _LIST_ITEM.match(line)
        if match and len(match.group(1).expandtabs(4)) == top_indent:
            items.append(match.group(2).strip())
        elif items:
            items[-1] += " " + (match.group(2) if match else line).strip()
        else:
            items.append(line.strip())  # text before the first item: an introduction, kept as said
    return [" ".join(item.split()) for item in items if item.strip()]


def _fallback_title(lines: list[str]) -> str | None:
    for line in lines:
        if line.lstrip().startswith(">"):
            continue  # a quoted note (often a label about the document) is not its title
        text = line.strip().strip("#*_").strip()
        if not text:
            continue
        is_label, carried = _title_from_label(text)
        if carried:
            return carried
        if is_label or heading_kind(text) is not None:
            continue
        return text
    return None


def parse_proposal(text: str, proposal_id: str | None = None) -> ProposalSeed:
    """Read a proposal's text into a ``ProposalSeed``; problems are recorded, never raised."""
    problems: list[str] = []
    if not isinstance(text, str):
        problems.append(f"proposal text is {type(text).__name__}, not a string")
        text = ""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    # HTML comments (labels, editor notes) are not proposal content.
    visible = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL).split("\n")
    if not text.strip():
        problems.append("the proposal is empty")
    sections, markdown_title = _split_sections(visible)

    blocks: dict[str, str] = {}
    for section in sections:
        if section.kind == _OTHER:
            continue
        block = _clean_block(section.lines)
        if block is None:
            problems.append(f"the {section.kind} heading has no text under it")
            continue
        if section.kind in blocks:
            problems.append(f"{section.kind} appears under more than one heading; the parts are joined in order")
            blocks[section.kind] += "\n\n" + block
        else:
            blocks[section.kind] = block

    fields: dict[str, object] = {}
    for name in SECTION_ALIASES:
        if name not in blocks:
            continue
        fields[name] = _list_items(blocks[name]) if name in LIST_FIELDS else blocks[name]

    title = markdown_title
    if title is not None:
        is_label, carried = _title_from_label(title)
        title = carried if is_label else title
    title = title or _fallback_title(visible)

    found = [name for name in CORE_FIELDS if fields.get(name)]
    missing = [name for name in CORE_FIELDS if not fields.get(name)]
    score = len(found) / len(CORE_FIELDS)
    level = next((name for threshold, name in QUALITY_LEVELS if score >= threshold - 1e-9), "low")
    quality = ParseQuality(found=found + (["background"] if fields.get("background") else []),
                           missing=missing + ([] if fields.get("background") else ["background"]),
                           score=round(score, 4), level=level, title_found=title is not None, problems=problems)
    return ProposalSeed(proposal_id=proposal_id, title=title, language=detect_language(text),
                        parse_quality=quality, **fields)


def load_proposal(path: str | Path, proposal_id: str | None = None) -> ProposalSeed:
    """Read a proposal file (UTF-8).

    The id defaults to the case folder's name for ``<case>/research_proposal.md``, else the file's stem.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProposalReadError(f"{path}: no such proposal file") from None
    except UnicodeDecodeError as exc:
        raise ProposalReadError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ProposalReadError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    default_id = path.parent.name if path.name == "research_proposal.md" and path.parent.name else path.stem
    return parse_proposal(text, proposal_id=proposal_id or default_id)
