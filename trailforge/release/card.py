"""The dataset card of a release: Hugging Face YAML metadata plus a Markdown body.

The card and the HTML report (:mod:`trailforge.release.report`) render one context built here by
:func:`report_context`, so they always show the same figures. Every text that comes from a source
repository (ids, origins, reject messages) is untrusted: the Markdown template escapes it with
:func:`markdown_cell`, the HTML template through Jinja's autoescaping.

Reproducibility: the card holds no timing, no dirty-tree flag and no git commit, so a fresh clone
rebuilds it byte for byte. A commit cannot be part of it: the commit that records a build's dvc.lock is
always newer than the one the build ran at, so a card naming its commit could never be rebuilt from the
commit that ships it. The commit the stage ran at goes to the release's ``timings.json`` (not cached) and
into the card of a published copy (:mod:`trailforge.release.publish`); the cached card names the package
version, and the exact code is each stage's code deps in the build's dvc.lock.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ..io import TASK_TYPES

TEMPLATES = Path(__file__).parent / "templates"
TASK_TYPE_MEANINGS = {
    "reproduction": "reproduce a whole analysis from its data",
    "subflow": "compute one intermediate result of the analysis",
    "completion": "fill in a removed function body or statement",
    "correction": "find and fix one injected scientific defect",
}
# Hugging Face size buckets, upper bounds exclusive.
_SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]


def size_category(count: int) -> str:
    for bound, label in _SIZE_CATEGORIES:
        if count < bound:
            return label
    return "n>1B"


def params_sha256(params_path: Path) -> str:
    return hashlib.sha256(Path(params_path).read_bytes()).hexdigest()


def code_version(project: Path) -> dict[str, Any]:
    """The git commit of ``project`` and whether the code under it has uncommitted changes.

    Falls back to the installed package version outside a git checkout (or one with no commit yet).
    ``dirty`` looks only at the code (``trailforge/``, ``stages/``, ``dvc.yaml``, ``pyproject.toml``):
    ``dvc repro`` itself rewrites ``dvc.lock`` and ``compose`` rewrites ``params.yaml``, which would
    otherwise mark every pipeline run dirty. It belongs in the release's ``timings.json`` (not cached),
    never in the card.
    """
    try:
        package = importlib.metadata.version("trailforge")
    except importlib.metadata.PackageNotFoundError:  # imported from a source tree that was never installed
        package = "unknown"
    commit = _git(project, "rev-parse", "--verify", "HEAD")
    if commit is None:
        return {"commit": None, "package_version": package, "dirty": None}
    status = _git(project, "status", "--porcelain", "--", "trailforge", "stages", "dvc.yaml", "pyproject.toml")
    return {"commit": commit, "package_version": package, "dirty": bool(status) if status is not None else None}


def _git(project: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe_code_version(version: dict[str, Any]) -> str:
    """The code version as the cached card states it: the package version only (see the module docstring)."""
    return f"trailforge {version['package_version']} (the code of each stage: its code deps in dvc.lock)"


def describe_build_commit(version: dict[str, Any]) -> str:
    """The commit a build ran at, for a published copy's card (from the release's timings.json)."""
    if not version.get("commit"):
        return f"built by trailforge {version.get('package_version', 'unknown')} outside a git checkout"
    dirty = " with uncommitted code changes" if version.get("dirty") else ""
    return f"built by trailforge {version.get('package_version', 'unknown')} at git commit {version['commit']}{dirty}"


DATA_DIR = "data"


def card_configs(task_types: list[str]) -> list[dict[str, Any]]:
    """The ``configs:`` of the card: a default config with one split per task type, then one config per type.

    The default config (``load_dataset(repo)``) gives the same DatasetDict ``load_from_disk`` gives for the
    local release; ``load_dataset(repo, "completion")`` gives one type as a ``train`` split. The paths are
    the parquet files the publisher uploads as ``data/<task_type>-00000-of-00001.parquet`` (the glob also
    covers more shards).
    """
    kinds = sorted(task_types, key=lambda k: (TASK_TYPES.index(k) if k in TASK_TYPES else len(TASK_TYPES), k))
    default = {"config_name": "default", "default": True,
               "data_files": [{"split": kind, "path": f"{DATA_DIR}/{kind}-*.parquet"} for kind in kinds]}
    return [default] + [{"config_name": kind, "data_files": [{"split": "train", "path": f"{DATA_DIR}/{kind}-*.parquet"}]}
                        for kind in kinds]


def hub_metadata(name: str, stats: dict[str, Any], *, recipe: str, params_hash: str) -> dict[str, Any]:
    """YAML front matter for the Hub, with what ``trailforge publish`` checks under ``trailforge:``.

    ``trailforge.params_sha256`` is the sha256 of the params.yaml the release was built from: publish
    refuses to upload a release whose hash is not that of the params.yaml it uploads next to it.
    ``set`` says which set of environments the card describes (publish rewrites it for the set it uploads).
    """
    counts = stats["counts"]
    return {
        "pretty_name": name,
        "license": "other",
        "license_name": "per-source-repository",
        "task_categories": ["text-generation", "question-answering"],
        "tags": ["agents", "scientific-computing", "code", "reproducibility", "trailforge"],
        "language": ["en"],
        "size_categories": [size_category(counts["environments"])],
        "configs": card_configs(list(counts["by_task_type"])),
        "trailforge": {"recipe": recipe, "params_sha256": params_hash, "set": "release",
                       "environments": counts["environments"], "release_environments": counts["environments"]},
    }


def _table(table_id: str, title: str, columns: list[str], rows: list[list[Any]], note: str = "") -> dict[str, Any]:
    return {"id": table_id, "title": title, "columns": columns, "rows": rows, "note": note}


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def statistics_tables(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's and report's tables, as columns and rows of plain values."""
    counts, total = stats["counts"], stats["counts"]["environments"]
    types = list(counts["by_task_type"])
    cross = counts["task_type_by_discipline"]
    tables = [
        _table("by-task-type", "Environments by task type",
               ["task type", "what the agent does", "environments", "share"],
               [[kind, TASK_TYPE_MEANINGS.get(kind, ""), n, _percent(n, total)]
                for kind, n in counts["by_task_type"].items()]),
        _table("by-discipline", "Environments by discipline", ["discipline", "environments", "share"],
               [[d, n, _percent(n, total)] for d, n in counts["by_discipline"].items()]),
        _table("task-type-by-discipline", "Task type by discipline", ["task type", *cross["disciplines"]],
               [[kind, *cells] for kind, cells in zip(cross["task_types"], cross["cells"])]),
        _table("by-difficulty", "Environments by difficulty", ["difficulty", "environments", "share"],
               [[level, n, _percent(n, total)] for level, n in counts["by_difficulty"].items()],
               "Difficulty (1 routine to 4 hard) comes from the model review; 'unrated' means no review ran."),
        _table("repository-yield", "Yield per repository",
               ["repository", "seed programs", *types, "environments", "environments per seed"],
               [[r["repo_id"], r["seeds"], *[r["by_task_type"][k] for k in types], r["environments"],
                 r["environments_per_seed"]] for r in stats["repository_yield"]],
               "Seed programs are the runnable analysis scripts each repository contributed."),
    ]
    length_rows = []
    for group in stats["lengths"]["groups"]:
        for measure in stats["lengths"]["measures"]:
            s = group[measure]
            length_rows.append([group["group"], measure.replace("_", " "), s["min"], s["median"], s["mean"],
                                s["p90"], s["max"]])
    tables.append(_table("lengths", "Statement and solution lengths",
                         ["group", "measure", "min", "median", "mean", "p90", "max"], length_rows,
                         "Words are whitespace-separated; reference program lines count every file of the solution."))
    div = stats["diversity"]
    tables.append(_table(
        "diversity", "Diversity of task statements", ["group", "statements", "Vendi score", "centroid distance"],
        [[g["group"], g["items"], g["vendi"], g["centroid_distance"]] for g in div["groups"]],
        f"Each figure is the mean over {len(div['seeds'])} random samples of {div['sample_size']} statements "
        f"(seeds {', '.join(str(s) for s in div['seeds'])}), so groups of different sizes compare; '—' marks a group "
        "too small to sample. Embeddings are offline hashed word and character n-grams, so the figures measure "
        "wording, not meaning. A Vendi score is the effective number of distinct statements in a sample (1 to the "
        "sample size); centroid distance is the mean cosine distance to the sample's centre."))
    tables.append(_table(
        "funnel", "Verification funnel", ["stage", "rows in", "rejected", "accepted", "considered"],
        [[s["stage"], s["rows_in"], s["rejected"], s["accepted"], s["considered"]] for s in stats["funnel"]],
        "Rows in are the previous stage's accepted rows. What a stage rejects is not always what it received: "
        "snapshot rejects files inside a repository and tasks rejects candidate defects, so 'considered' "
        "(accepted plus rejected) is the number of decisions the stage made."))
    reasons = [[s["stage"], r["reason"], r["count"], r["item_id"], r["message"]]
               for s in stats["funnel"] for r in s["reject_reasons"]]
    tables.append(_table("reject-reasons", "Reject reasons",
                         ["stage", "reason", "count", "example item", "example message"],
                         reasons, "" if reasons else "No stage rejected anything."))
    tables.append(_table(
        "repositories", "Source repositories",
        ["repository", "discipline", "origin", "pinned version", "license files"],
        [[r["repo_id"], r["discipline"], r["origin"], r["version"], _license_cell(r["license_files"])]
         for r in stats["repositories"]]))
    return tables


def _license_cell(license_files: list[str] | None) -> str | None:
    """``None`` (shown as a dash) when the snapshot stage was not given, so nothing is known."""
    if license_files is None:
        return None
    return ", ".join(license_files) if license_files else "none found"


def summary_paragraphs(name: str, stats: dict[str, Any]) -> list[str]:
    counts = stats["counts"]
    seeds = [r["seeds"] for r in stats["repository_yield"] if r["seeds"] is not None]
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts["by_task_type"].items())
    made_from = f" made from {sum(seeds)} seed programs" if seeds else ""
    first = (f"{name} holds {counts['environments']} verified, executable research environments ({kinds}){made_from} "
             f"in {len(counts['by_repository'])} scientific code repositories across {len(counts['by_discipline'])} "
             "disciplines.")
    second = ("Each environment gives an agent a task statement and the input data (plus the program, for completion "
              "and correction), and keeps a reference program, the reference answer with tolerances and a standalone "
              "grader apart from the agent's workspace. The verifier re-ran every reference program, checked that the "
              "grader accepts the reference answer and rejects perturbed answers and the output of defective or "
              "incomplete programs, and checked that no statement gives away its answer.")
    return [first, second]


def known_limitations(stats: dict[str, Any], recipe_facts: dict[str, Any]) -> list[str]:
    """Limitations a user of this release should know, each one read from the figures or the recipe."""
    counts, notes = stats["counts"], []
    unrated = counts["by_difficulty"].get("unrated", 0)
    if unrated:
        notes.append(f"{unrated} of {counts['environments']} environments have no difficulty rating: ratings come "
                     "only from the model review (verifier.review=true with a model endpoint), and this build "
                     f"{'ran without a model' if recipe_facts.get('llm_provider') == 'none' else 'left some unrated'}.")
    if recipe_facts.get("statements") == "deterministic":
        notes.append("Statements are filled-in templates, not model rewrites, so their wording repeats across "
                     "environments of one task type; the diversity table shows how much.")
    process_only = sum(n for kind, n in stats["isolation"].items() if kind == "process")
    if process_only:
        notes.append(f"{process_only} environments were verified in a plain subprocess, without a sandbox: "
                     "bubblewrap could not run on the build machine (sandbox.isolation=auto downgraded). Install "
                     "bubblewrap or use sandbox=docker to verify with isolation.")
    notes.append("The local sandbox (bubblewrap: an allow-list root, every namespace, an unprivileged user, seccomp) "
                 "shares the host's kernel, as containers do; a kernel exploit is outside what it can hold.")
    notes.append("Reference answers are what the source repository's own program computes. They are checked for "
                 "reproducibility and graded with tolerances, not checked against independent ground truth, so an "
                 "error in the original analysis carries into the answer.")
    if "correction" in counts["by_task_type"]:
        notes.append("Correction defects are synthetic mutations from a fixed operator registry "
                     "(trailforge/envs/mutations/); they are realistic slips but not a sample of real bugs.")
    missing = [r["repo_id"] for r in stats["repositories"] if r["license_files"] == []]
    if missing:
        notes.append(f"{len(missing)} of {len(stats['repositories'])} source repositories carry no license file "
                     f"({', '.join(missing)}); check their terms before redistributing environments built from them.")
    repos, disciplines = len(counts["by_repository"]), len(counts["by_discipline"])
    if repos < 20:
        notes.append(f"Only {repos} repositories in {disciplines} disciplines: the corpus covers few analyses, and "
                     "environments from one repository share data and code.")
    return notes


def provenance(name: str, recipe: str, params_hash: str, version: dict[str, Any]) -> list[list[str]]:
    return [["dataset", name], ["recipe", recipe], ["params hash (sha256 of params.yaml)", params_hash],
            ["code version", describe_code_version(version)]]


def report_context(*, name: str, recipe: str, params_hash: str, version: dict[str, Any], stats: dict[str, Any],
                   recipe_facts: dict[str, Any], plots: list[dict[str, str]]) -> dict[str, Any]:
    """Everything the card and the report show, in the order they show it."""
    return {
        "name": name,
        "metadata": hub_metadata(name, stats, recipe=recipe, params_hash=params_hash),
        "summary": summary_paragraphs(name, stats),
        "provenance": provenance(name, recipe, params_hash, version),
        "license": ("Each environment inherits the license of the source repository it was built from; there is no "
                    "single license for the whole collection. The repositories, their origins and the license files "
                    "found in them are listed under 'Source repositories'."),
        "task_types": [[kind, TASK_TYPE_MEANINGS[kind]] for kind in TASK_TYPES],
        "tables": statistics_tables(stats),
        "plots": plots,
        "limitations": known_limitations(stats, recipe_facts),
    }


def markdown_cell(value: Any) -> str:
    """A value as one Markdown table cell or inline text: no line breaks, pipes, HTML or link syntax."""
    if value is None:
        return "—"
    text = " ".join(str(value).split())
    for raw, escaped in (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"),
                         ("[", "\\["), ("]", "\\]"), ("`", "\\`"), ("*", "\\*")):
        text = text.replace(raw, escaped)
    return text


def template_environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = markdown_cell
    env.filters["cell"] = lambda value: "—" if value is None else value
    return env


def render_card(context: dict[str, Any], image_prefix: str) -> str:
    """``README.md`` text: YAML front matter, then the Markdown body; images under ``image_prefix``."""
    front = yaml.safe_dump(context["metadata"], sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = template_environment(autoescape=False).get_template("card.md.j2").render(**context, image_prefix=image_prefix)
    return f"---\n{front}---\n\n{body}"
