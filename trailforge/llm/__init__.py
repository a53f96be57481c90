"""Model access through litellm: one client per stage, built from the recipe's `llm` and `budget` groups."""
from __future__ import annotations

from ..cache import ContentCache
from .client import BudgetExhausted, Endpoint, Limits, LLMClient, LLMError, ModelRequired, Usage

ROLES = ("generator", "validator", "judge")


def build_llm(cfg, cache: ContentCache) -> LLMClient | None:
    """The client for ``cfg.llm`` (None for ``llm=none``); each role may name its own model."""
    llm = cfg.llm
    if llm.provider == "none":
        return None
    roles = {}
    for role in ROLES:
        override = llm.roles.get(role)
        roles[role] = Endpoint(
            model=(override.model if override and override.model else llm.model),
            api_base=llm.api_base, api_key_env=llm.api_key_env,
            temperature=(override.temperature if override and override.temperature is not None else llm.temperature),
            max_tokens=(override.max_tokens if override and override.max_tokens else llm.max_tokens),
            timeout_s=llm.timeout_s,
        )
    limits = Limits(max_retries=llm.max_retries, backoff_s=llm.backoff_s, max_reasks=llm.max_reasks,
                    max_concurrency=llm.max_concurrency, max_calls=cfg.budget.max_llm_calls,
                    max_tokens=cfg.budget.max_llm_tokens, max_cost_usd=cfg.budget.max_llm_cost_usd)
    return LLMClient(roles, cache, limits)


def model_required_message(what: str, several: bool = False) -> str:
    """What to tell a user whose recipe asks for ``what`` (settings that call a model) with ``llm=none``."""
    return (f"{what} {'need' if several else 'needs'} a model, but the recipe sets llm=none; choose one with "
            "`trailforge compose recipe=<name> llm=openai` (or llm=deepseek, llm=vllm, llm=ollama)")


def require_model(cfg, what: str, several: bool = False) -> None:
    """Fail at start, naming the config to set, when ``what`` needs a model and the recipe has none."""
    if cfg.llm.provider == "none":
        raise ModelRequired(model_required_message(what, several))


__all__ = ["BudgetExhausted", "Endpoint", "LLMClient", "LLMError", "Limits", "ModelRequired", "ROLES", "Usage",
           "build_llm", "model_required_message", "require_model"]
