"""Typed schemas for every config group; one model per folder in ``conf/``.

Every model forbids unknown keys, so a typo in a recipe fails at composition time
instead of being silently ignored by a stage.
"""
from __future__ import annotations

import math

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RepoEntry(_Strict):
    """One repository named in a recipe: a local folder or a git URL."""

    path: str | None = None
    url: str | None = None
    name: str | None = None
    ref: str | None = Field(None, description="git ref to check out (branch, tag or commit)")

    def model_post_init(self, __context) -> None:
        if (self.path is None) == (self.url is None):
            raise ValueError("each repository needs exactly one of 'path' or 'url'")


class LocalSourceConfig(_Strict):
    """Repositories the user lists. Each is labelled with a discipline (``unknown`` when the vocabulary finds
    none) and goes on whatever it is; ``domain.allowed`` and ``domain.filters`` apply to search candidates only."""

    kind: Literal["local"] = "local"
    repos: list[RepoEntry] = Field(default_factory=list)
    folders: list[str] = Field(default_factory=list, description="folders whose every subfolder is one repository "
                               "(local clones), listed after 'repos' in name order")

    def model_post_init(self, __context) -> None:
        if not self.repos and not self.folders:
            raise ValueError("source needs at least one repository: list some under 'repos' or a folder of "
                             "clones under 'folders'")


class GitHubSourceConfig(_Strict):
    """Repositories found through the GitHub search API from the domain's keyword pools. These candidates, and
    only these, must pass ``min_stars``, have a discipline in ``domain.allowed`` and pass ``domain.filters``."""

    kind: Literal["github"] = "github"
    api_url: str = "https://api.github.com"
    token_env: str | None = Field("GITHUB_TOKEN", description="environment variable holding the token")
    min_stars: int = Field(20, ge=0)
    min_keyword_hits: int = Field(5, ge=0, description="fewer repositories than this: the keyword is too rare")
    max_keyword_hits: int = Field(50_000, ge=1, description="more than this: the keyword is too generic")
    keywords_per_discipline: int = Field(20, ge=1)
    repos_per_keyword: int = Field(30, ge=1)
    expand_keywords: bool = Field(False, description="a model adds software, formats, databases, pipelines")
    max_rate_limit_wait_s: float = Field(60.0, ge=0)


class RepoFilters(_Strict):
    """What a search candidate (``source=github``) must hold to be kept; repositories listed by the user skip them."""

    require_data: bool = True
    require_paper: bool = False
    min_python_files: int = Field(1, ge=0)


class DomainConfig(_Strict):
    """Disciplines and the vocabulary that places a repository in one of them.

    For a listed repository the discipline is a label only; ``allowed`` and ``filters`` select among search
    candidates (``source=github``)."""

    name: str
    disciplines: dict[str, list[str]] = Field(min_length=1)
    allowed: list[str] | Literal["all"] = "all"
    filters: RepoFilters = RepoFilters()

    def model_post_init(self, __context) -> None:
        if self.allowed != "all":
            unknown = sorted(set(self.allowed) - set(self.disciplines))
            if unknown:
                raise ValueError(
                    f"allowed names unknown disciplines {unknown}; known: {sorted(self.disciplines)}"
                )


_TIMEOUT_HELP = "seconds a program run gets unless its caller asks for more (tracing, evals, agent commands)"
_MAX_TIMEOUT_HELP = "the most seconds any one run may get, whatever it asks for"


class _Timeouts(_Strict):
    """The sandbox owns run time: a request's timeout applies, bounded by ``max_timeout_s``."""

    @model_validator(mode="after")
    def _timeout_within_ceiling(self):
        if self.timeout_s > self.max_timeout_s:
            raise ValueError(f"sandbox.timeout_s ({self.timeout_s:g}) exceeds sandbox.max_timeout_s "
                             f"({self.max_timeout_s:g}); raise max_timeout_s or lower timeout_s")
        return self


class LocalSandboxConfig(_Timeouts):
    backend: Literal["local"] = "local"
    timeout_s: float = Field(120.0, gt=0, description=_TIMEOUT_HELP)
    max_timeout_s: float = Field(600.0, gt=0, description=_MAX_TIMEOUT_HELP)
    max_stdout_bytes: int = Field(200_000, gt=0)
    max_output_file_bytes: int = Field(5_000_000, gt=0)
    memory_mb: int = Field(2048, ge=64)
    max_processes: int = Field(256, ge=8)
    network: Literal["none", "host"] = "none"
    require_network_isolation: bool = False
    isolation: Literal["auto", "required", "off"] = Field(
        "auto", description="bubblewrap sandbox per run where the host allows it; required: fail at start "
                            "otherwise; off: plain subprocesses (see sandbox/local.py)")
    environments: Literal["host", "venv"] = Field(
        "host", description="host: the running interpreter; venv: one virtual environment per dependency set")
    venv_root: str | None = Field(None, description="where venvs live (default: $TRAILFORGE_CACHE_DIR/venvs)")
    max_output_total_bytes: int = Field(50_000_000, gt=0, description="all output files of one run together")
    max_output_files: int = Field(10_000, gt=0, description="output files one run may hand back")
    max_output_depth: int = Field(64, gt=0, description="folder depth collected below the scratch folder")
    max_scratch_mb: int = Field(1024, ge=16, description="size of a run's in-memory scratch folder")
    wheels_only: bool = Field(True, description="venv installs take wheels only: no source build runs any code")
    installer: Literal["uv", "pip"] = Field("uv", description="what installs venv dependencies (inside a sandbox)")
    index_url: str | None = Field(None, description="package index for venv installs (default: the installer's)")
    find_links: list[str] = Field(default_factory=list, description="local folders of wheels for venv installs")
    no_index: bool = Field(False, description="install only from find_links")


class DockerSandboxConfig(_Timeouts):
    backend: Literal["docker"] = "docker"
    base_image: str = Field("python:3.11-slim", description="FROM of every generated Dockerfile")
    timeout_s: float = Field(120.0, gt=0, description=_TIMEOUT_HELP)
    max_timeout_s: float = Field(600.0, gt=0, description=_MAX_TIMEOUT_HELP)
    max_stdout_bytes: int = Field(200_000, gt=0)
    max_output_file_bytes: int = Field(5_000_000, gt=0)
    memory_mb: int = Field(2048, ge=64)
    max_processes: int = Field(256, ge=8)
    cpus: float = Field(1.0, gt=0)
    ca_bundle: str | None = Field("/etc/ssl/certs/ca-certificates.crt",
                                  description="CA bundle copied into image builds (TLS-intercepting proxies)")
    index_url: str | None = Field(None, description="pip index for image builds (default: the host's PIP_INDEX_URL)")
    extra_index_urls: list[str] = Field(default_factory=list)
    build_network: str = Field("default", description="network mode of image builds (the proxy must be reachable)")
    max_output_total_bytes: int = Field(50_000_000, gt=0, description="all output files of one run together")
    max_output_files: int = Field(10_000, gt=0, description="output files one run may hand back")
    max_output_depth: int = Field(64, gt=0, description="folder depth collected below the scratch folder")
    wheels_only: bool = Field(True, description="image builds install wheels only: no source build runs any code")


class BudgetConfig(_Strict):
    max_llm_calls: int | None = Field(None, ge=0, description="model calls per stage (cached replies are free)")
    max_llm_tokens: int | None = Field(None, ge=0)
    max_llm_cost_usd: float | None = Field(None, ge=0)
    max_repos: int = Field(100, ge=1)
    max_seeds_per_repo: int = Field(10, ge=1, description="accepted seed programs per repository")
    starts_per_script: int = Field(3, ge=1, description="seeds one script may give: a script run once per data "
                                   "file gives one seed per start that names other data")
    seed_seconds_per_repo: float = Field(900.0, gt=0, description="run time the seeds stage may spend on one "
                                                                   "repository's candidates (recorded durations)")
    max_file_bytes: int = Field(5_000_000, ge=1)
    max_answer_fields: int = Field(24, ge=1)
    max_table_rows: int = Field(50, ge=1)


class VerifierConfig(_Strict):
    repeats: int = Field(2, ge=1, description="reference runs that must agree")
    stochastic_repeats: int = Field(5, ge=1, description="runs in all when repeat runs disagree (a stochastic program)")
    rtol: float = Field(1e-6, ge=0, description="floor of the relative tolerance")
    atol: float = Field(1e-9, ge=0, description="floor of the absolute tolerance")
    spread_factor: float = Field(10.0, ge=1, description="tolerance = factor x observed run-to-run spread")
    max_rel_spread: float = Field(0.05, ge=0, description="beyond this spread a field is not reproducible")
    kernel_probe_env: dict[str, str] = Field(
        default_factory=lambda: {"OPENBLAS_CORETYPE": "Prescott"},
        description="environment of one more reference run that makes the numerical libraries use other kernels "
        "(OpenBLAS's SSE3 code here), as another machine or another implementation would; fields it moves are "
        "graded with a tolerance that covers the move, and a move beyond max_rel_spread rejects the task "
        "(kernel_sensitive). {} skips the run")
    min_wrong_rejected: int = Field(2, ge=1)
    eval_timeout_s: float = Field(30.0, gt=0)
    review: bool = Field(False, description="a validator model reviews every task (needs llm != none)")
    min_review_score: int = Field(4, ge=1, le=5, description="accept iff the review scores at least this")
    max_repair_rounds: int = Field(3, ge=0, description="statement revisions after a repairable review")


class SubflowConfig(_Strict):
    max_per_seed: int = Field(5, ge=0, description="Subflow tasks per seed program")
    min_upstream_ops: int = Field(2, ge=1, description="operations an intermediate result must depend on")


class CompletionConfig(_Strict):
    max_per_seed: int = Field(4, ge=0, description="Completion tasks per seed program")
    max_body_statements: int = Field(30, ge=1, description="larger functions are workflows, not steps")
    max_undocumented_statements: int = Field(
        10, ge=1, description="a function without a docstring whose body holds more statements, nested ones "
        "counted, is no hole: from its signature alone a reader cannot tell which of its choices it makes")


class CorrectionConfig(_Strict):
    max_per_seed: int = Field(6, ge=0, description="Correction tasks per seed program")
    max_candidates_per_seed: int = Field(40, ge=1, description="mutants executed per seed program")
    operators: list[str] | Literal["all"] = "all"

    def model_post_init(self, __context) -> None:
        if self.operators != "all":
            from ..envs.mutations import OPERATORS

            unknown = sorted(set(self.operators) - set(OPERATORS))
            if unknown:
                raise ValueError(f"operators names unknown mutation operators {unknown}; known: {list(OPERATORS)}")


class SeedModelConfig(_Strict):
    judge: bool = Field(False, description="a model judges whether each seed is a complete analysis")
    consolidate: bool = Field(False, description="a model folds multi-file seeds into one script (checked by a run)")
    parameters: bool = Field(True, description="a script that reads no data file gets its module-level numeric "
                             "constants read from a generated parameters.json (checked by a run; no model)")


class DataDependenceConfig(_Strict):
    """Every answer field must move when the data move: the reference runs again on perturbed data."""

    enabled: bool = Field(True, description="off only to measure what the check removes")
    jitter: float = Field(0.1, gt=0, lt=1, description="numbers in the data are scaled by up to this fraction")


class RepositoryShareConfig(_Strict):
    """A repository with few seed programs gets higher per-seed caps, so that it is not held to a handful of
    tasks because its author wrote one script: every per-seed cap of Subflow, Completion and Correction (and
    Correction's candidate budget) is multiplied by ``target / (seeds x per-seed total)``, rounded up, between
    1 and ``max_scale``. The per-seed total is 1 (Reproduction) plus the three caps."""

    target: int = Field(48, ge=0, description="tasks a repository's seeds may give together before caps stop "
                        "growing; 0 keeps the per-seed caps for every repository")
    max_scale: float = Field(3.0, ge=1, description="the most a per-seed cap is multiplied by")


class TasksConfig(_Strict):
    """Which task types to derive from each seed program, how many of each, and how."""

    seeds: SeedModelConfig = SeedModelConfig()
    types: list[Literal["reproduction", "subflow", "completion", "correction"]] = Field(
        ["reproduction", "subflow", "completion", "correction"], min_length=1)
    statements: Literal["deterministic", "model"] = Field(
        "deterministic", description="model: a model rewrites each statement (checked; needs llm != none)")
    subflow: SubflowConfig = SubflowConfig()
    completion: CompletionConfig = CompletionConfig()
    correction: CorrectionConfig = CorrectionConfig()
    data_dependence: DataDependenceConfig = DataDependenceConfig()
    repository: RepositoryShareConfig = RepositoryShareConfig()

    def for_repository(self, seeds: int) -> "TasksConfig":
        """This config with the per-seed caps a repository of ``seeds`` seed programs gets (see
        ``RepositoryShareConfig``); itself when the caps stay as they are."""
        per_seed = 1 + self.subflow.max_per_seed + self.completion.max_per_seed + self.correction.max_per_seed
        if not self.repository.target or seeds <= 0 or per_seed <= 1:
            return self
        scale = min(self.repository.max_scale, self.repository.target / (seeds * per_seed))
        if scale <= 1:
            return self

        def grown(cap: int) -> int:
            return math.ceil(cap * scale)

        return self.model_copy(update={
            "subflow": self.subflow.model_copy(update={"max_per_seed": grown(self.subflow.max_per_seed)}),
            "completion": self.completion.model_copy(update={"max_per_seed": grown(self.completion.max_per_seed)}),
            "correction": self.correction.model_copy(update={
                "max_per_seed": grown(self.correction.max_per_seed),
                "max_candidates_per_seed": grown(self.correction.max_candidates_per_seed)}),
        })


class HarnessConfig(_Strict):
    """The agent loop of the rollout stage: limits, attempts and what to keep."""

    kind: Literal["rollout"] = "rollout"
    max_steps: int = Field(30, ge=1)
    wall_clock_s: float = Field(900.0, gt=0)
    command_timeout_s: float = Field(60.0, gt=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_observation_chars: int = Field(4000, ge=200)
    max_format_errors: int = Field(3, ge=1, description="consecutive malformed replies before giving up")
    attempts: int = Field(1, ge=1, description="episodes per environment (rejection sampling)")
    keep_failures: bool = Field(False, description="keep failed trajectories too, labelled")
    max_context_tokens: int = Field(32768, ge=1, description="longer successful trajectories stay out of the SFT file")
    system_prompt: str | None = Field(None, description="replaces the built-in system prompt")
    task_template: str = Field("{statement}", description="the first user message; {statement} is the task")


class IdeationHarnessConfig(_Strict):
    """The IdeaTrail loop: cases, turn budget, stage shares, retries and the thresholds a trajectory must meet."""

    kind: Literal["ideation"] = "ideation"
    proposals: str = Field("examples/ideation/proposals", description="a folder of cases, each with research_proposal.md")
    cutoff: str = Field(description="information cutoff (YYYY-MM-DD) for every case; a case's cutoff.txt overrides it")
    max_turns: int = Field(20, ge=5, description="turn budget of a proposal-extension trajectory")
    stage_shares: dict[Literal["evidence", "claim_audit", "synthesis", "idea", "proposal"], float] = Field(
        default_factory=lambda: {"evidence": 0.3, "claim_audit": 0.2, "synthesis": 0.2, "idea": 0.15,
                                 "proposal": 0.15})
    max_retries_per_turn: int = Field(2, ge=0, description="asks again after a failed turn before rejecting the case")
    advisor_check: Literal["turn", "none"] = Field("turn", description="the Advisor model reviews every turn")
    direction_attempts: int = Field(3, ge=1, description="visible directions tried before the case is rejected")
    fuzzy_threshold: float = Field(90.0, ge=50, le=100, description="rapidfuzz score that counts as a fuzzy leak")
    convergence_threshold: float = Field(0.6, ge=0, le=1, description="gamma: judge score to extend to a proposal")
    min_grounding: float = Field(0.5, ge=0, le=1, description="eta: share of citations pointing at observed sources")
    min_naturalness: float = Field(3.0, ge=1, le=5, description="nu: rubric naturalness to keep a trajectory")
    portraits: bool = Field(False, description="condition the Generator on a profile of the case's author "
                            "(author.txt in the case folder) distilled from their earlier papers in the corpus")

    @field_validator("cutoff")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        from datetime import date

        try:
            date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"'{value}' is not a date like 2025-06-30") from None
        return value


class ResearchToolsConfig(_Strict):
    """The literature corpus and limits of the seven research tools (WebSearch, Scraper, View, Write, ...)."""

    corpus: list[str] = Field(default_factory=lambda: ["examples/ideation/corpus.jsonl"], min_length=1,
                              description="JSONL papers or arXiv metadata snapshot files")
    format: Literal["auto", "jsonl", "arxiv"] = "auto"
    backend: Literal["offline", "arxiv_api"] = Field(
        "offline", description="offline: BM25 over `corpus`; arxiv_api: the live arXiv API (network, rate-limited)")
    min_request_interval_s: float = Field(3.0, ge=0, description="arxiv_api: seconds between requests")
    max_results: int = Field(10, ge=1, le=20)
    max_observation_chars: int = Field(12000, ge=500)


class LocalExecutorConfig(_Strict):
    kind: Literal["local"] = "local"
    max_workers: int = Field(2, ge=1)


class RayResources(_Strict):
    """What one item of an operation asks the Ray scheduler for."""

    num_cpus: float = Field(1.0, ge=0)
    memory_mb: int | None = Field(None, ge=1)


class RayExecutorConfig(_Strict):
    """Per-item work as Ray tasks on a cluster; the project folder and the cache must be on every node."""

    kind: Literal["ray"] = "ray"
    address: str | None = Field(None, description="a running cluster (host:port or ray://...); empty: a local one")
    max_in_flight: int = Field(64, ge=1, description="items submitted and not yet finished, at most")
    num_cpus_per_item: float = Field(1.0, ge=0)
    memory_mb_per_item: int | None = Field(None, ge=1)
    operations: dict[str, RayResources] = Field(
        default_factory=dict, description="per map label (seeds, verify, rollout, ...): replaces the per-item hints")
    max_retries: int = Field(2, ge=0, description="re-runs of an item whose worker or node died")
    runtime_env: dict = Field(default_factory=dict, description="Ray runtime_env for this job's workers (pip, env_vars, ...)")


class PublishConfig(_Strict):
    """Where ``trailforge publish`` pushes the release on the Hugging Face Hub.

    The token is read from the environment only (``token_env``), like the llm group's keys.
    """

    name: str = "trailforge-demo"
    repo_id: str | None = Field(None, pattern=r"^[\w.-]+/[\w.-]+$",
                                description="Hub dataset repository as 'namespace/name'")
    revision: str = Field("main", min_length=1, description="branch to commit to (created when missing)")
    private: bool = Field(True, description="visibility when the repository is created; an existing one keeps its own")
    push: bool = False
    token_env: str = Field("HF_TOKEN", min_length=1, description="environment variable holding the Hub token")
    set: Literal["release", "decontaminate", "sample"] = Field(
        "release", description="which environments go up: the whole release, those decontaminate kept, or the "
                               "budgeted sample (the card says which)")

    @model_validator(mode="before")
    @classmethod
    def _no_keys_in_config(cls, data):
        if isinstance(data, dict) and any(k in data for k in ("token", "hf_token", "api_key", "key")):
            raise ValueError("Hub tokens never go in a config file: put the token in an environment variable and "
                             "name it in publish.token_env")
        return data

    @model_validator(mode="after")
    def _push_needs_repo(self):
        if self.push and self.repo_id is None:
            raise ValueError("publish.repo_id must be set when publish.push is true, "
                             "e.g. publish.repo_id=your-name/trailforge-demo")
        return self


class NoLLMConfig(_Strict):
    provider: Literal["none"] = "none"


class LLMRoleConfig(_Strict):
    """Overrides for one role (generator, validator, judge); unset keys inherit from the group."""

    model: str | None = None
    temperature: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=1)


class LLMConfig(_Strict):
    """A model endpoint reached through litellm. Keys come from the environment only (``api_key_env``)."""

    provider: Literal["openai", "deepseek", "vllm", "ollama"]
    model: str = Field(description="litellm model name, e.g. openai/gpt-4o-mini or openai/Qwen2.5-7B on vllm")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL (vllm, ollama, a proxy)")
    api_key_env: str | None = Field(None, description="name of the environment variable that holds the key")
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(1024, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(1.0, ge=0)
    max_reasks: int = Field(2, ge=0, description="re-asks with the validation error when structured output is invalid")
    max_concurrency: int = Field(4, ge=1)
    roles: dict[Literal["generator", "validator", "judge"], LLMRoleConfig] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _no_keys_in_config(cls, data):
        if isinstance(data, dict) and any(k in data for k in ("api_key", "key", "token")):
            raise ValueError("API keys never go in a config file: put the key in an environment variable and "
                             "name it in llm.api_key_env")
        return data


# The names a lineage item reads from a record (trailforge.lineage.items.item_from_record), each mappable.
LINEAGE_FIELDS = ("id", "text", "code", "outputs", "parents", "time", "passed", "score", "kind")


class LineageInputConfig(_Strict):
    path: str = Field("outputs/release/environments", description="a release's environments folder, a JSONL file, "
                      "or parquet (a file or a folder of shards, e.g. rollout trajectories)")
    format: Literal["environments", "jsonl", "parquet"] = "environments"
    fields: dict[str, str] = Field(default_factory=lambda: {name: name for name in LINEAGE_FIELDS},
                                   description="our field name -> the dataset's: " + ", ".join(LINEAGE_FIELDS))

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, fields: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(fields) - set(LINEAGE_FIELDS))
        if unknown:
            raise ValueError(f"unknown field name(s) {', '.join(unknown)}; the names are {', '.join(LINEAGE_FIELDS)}")
        return fields


class LineageEdgesConfig(_Strict):
    shingle: int = Field(3, ge=1, le=5, description="words per text shingle")
    num_perm: int = Field(128, ge=8, description="MinHash permutations")
    bands: int = Field(64, ge=1, description="LSH bands (num_perm / bands rows each)")
    max_bucket: int = Field(200, ge=1, description="an LSH bucket larger than this yields only its newest items")
    min_similarity: float = Field(0.15, ge=0, le=1, description="least Jaccard for a content edge")
    min_containment: float = Field(0.3, ge=0, le=1, description="or least share of the parent carried into the child")
    refine_similarity: float = Field(0.42, ge=0, le=1, description="a single parent this similar is a refinement")
    merge_min_gain: float = Field(0.15, ge=0, le=1, description="share of the child only a second parent explains")
    diverge_max_position: float = Field(0.5, ge=0, le=1, description="shared text centred before this point of the "
                                        "parent: diverge; after: derive")
    code_weight: float = Field(0.5, ge=0, le=1, description="weight of normalised-AST similarity when both have code")
    max_parents: int = Field(3, ge=1)
    infer_when_parents_known: bool = Field(False, description="also infer content edges for items with explicit or "
                                           "recorded parents")
    back_references: bool = Field(True, description="an id named in the text is a parent")
    edge_weights: dict[Literal["derive", "refine", "merge", "diverge"], float] = Field(
        default_factory=lambda: {"refine": 0.25, "derive": 1.0, "merge": 1.0, "diverge": 1.5},
        description="lineage distance of one edge of each type (sampling)")


class LineageRedundancyConfig(_Strict):
    alpha: float = Field(0.7, ge=0, description="weight of output similarity in R(i, j)")
    beta: float = Field(0.3, ge=0, description="weight of path overlap in R(i, j)")
    min_output_similarity: float = Field(0.6, ge=0, le=1)
    threshold: float = Field(0.7, ge=0, description="R at least this on a shared path: lineage_duplicate")
    convergent_max_path_overlap: float = Field(0.2, ge=0, le=1, description="at most this: different paths")
    min_novelty: float = Field(0.1, ge=0, le=1, description="a refinement adding less new text is diminishing")


class LineageContaminationConfig(_Strict):
    benchmarks: list[str] = Field(default_factory=list, description="benchmark files or folders (repositories)")
    ngram: int = Field(8, ge=3, description="words per n-gram in the overlap check")
    min_ngram_hits: int = Field(3, ge=1)
    near_duplicate: float = Field(0.5, gt=0, le=1, description="shingle Jaccard with a benchmark text")
    failed_evaluation: bool = Field(True, description="items whose evaluation failed are seeds too")
    decay: float = Field(0.5, ge=0, le=1, description="weight kept per hop forward")
    backward: bool = False
    backward_decay: float = Field(0.25, ge=0, le=1)
    drop_threshold: float = Field(0.5, ge=0, le=1, description="decontaminate drops items at or above this weight")
    downweight_threshold: float = Field(0.1, ge=0, le=1, description="and down-weights those at or above this")

    def model_post_init(self, __context) -> None:
        if self.downweight_threshold > self.drop_threshold:
            raise ValueError("downweight_threshold must not exceed drop_threshold")


class LineageSamplingConfig(_Strict):
    method: Literal["farthest_point", "root_anchored", "adaptive", "uniform"] = "farthest_point"
    breadth: int = Field(4, ge=1, description="c: branches per root")
    depth: int = Field(3, ge=1, description="l: items down each branch")
    granularity: int = Field(10, ge=1, description="k: roots; budget B = c x l x k")
    rounds: int = Field(30, ge=1, description="adaptive: UCB rounds")
    exploration: float = Field(1.0, ge=0, description="adaptive: UCB exploration weight")
    disconnected: float = Field(6.0, gt=0, description="lineage distance of unrelated items")
    embedding: str = Field("hashing", description="hashing (offline) or sentence-transformers:<model>")

    @property
    def budget(self) -> int:
        return self.breadth * self.depth * self.granularity


class LineageConfig(_Strict):
    """Lineage curation: the graph, redundancy, contamination and sampling under a budget."""

    input: LineageInputConfig = LineageInputConfig()
    batch_size: int = Field(5000, ge=1, description="items inserted per incremental batch")
    edges: LineageEdgesConfig = LineageEdgesConfig()
    redundancy: LineageRedundancyConfig = LineageRedundancyConfig()
    contamination: LineageContaminationConfig = LineageContaminationConfig()
    sampling: LineageSamplingConfig = LineageSamplingConfig()


class TrailforgeConfig(_Strict):
    """The whole composed recipe, as written to ``params.yaml``."""

    recipe: str
    source: LocalSourceConfig | GitHubSourceConfig = Field(discriminator="kind")
    domain: DomainConfig
    sandbox: LocalSandboxConfig | DockerSandboxConfig = Field(discriminator="backend")
    budget: BudgetConfig
    tasks: TasksConfig
    verifier: VerifierConfig
    harness: HarnessConfig | IdeationHarnessConfig = Field(discriminator="kind")
    tools: ResearchToolsConfig = ResearchToolsConfig()
    executor: LocalExecutorConfig | RayExecutorConfig = Field(discriminator="kind")
    publish: PublishConfig
    llm: NoLLMConfig | LLMConfig = Field(discriminator="provider")
    lineage: LineageConfig = LineageConfig()
    seed: int = Field(0, description="seeds every deterministic choice (which targets, holes and mutants)")


GROUPS = ("source", "domain", "sandbox", "budget", "tasks", "verifier", "harness", "executor", "publish", "llm",
          "lineage", "tools")
