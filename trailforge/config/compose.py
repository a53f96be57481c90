"""Compose a recipe with Hydra, validate it with pydantic, write ``params.yaml``.

DVC's own Hydra integration (``dvc exp run -S``) composes the same files; ``compose``
also points ``.dvc/config`` at the chosen recipe so both paths agree.
"""
from __future__ import annotations

import configparser
import os
import re
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .schema import GROUPS, TrailforgeConfig


class ConfigError(ValueError):
    """A recipe or params file that cannot be used; the message names the key."""


def project_root(start: Path | None = None) -> Path:
    """The nearest folder above ``start`` holding ``recipe/`` and ``conf/``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "recipe").is_dir() and (folder / "conf").is_dir():
            return folder
    raise ConfigError(f"no trailforge project (a folder with recipe/ and conf/) at or above {here}")


def list_recipes(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "recipe").glob("*.yaml"))


def list_groups(root: Path) -> dict[str, list[str]]:
    return {
        group.name: sorted(p.stem for p in group.glob("*.yaml"))
        for group in sorted((root / "conf").iterdir())
        if group.is_dir()
    }


def compose(recipe: str, overrides: list[str] | None = None, root: Path | None = None) -> dict[str, Any]:
    """Resolve ``recipe/<recipe>.yaml`` plus Hydra overrides into a plain dict."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    root = root or project_root()
    recipes = list_recipes(root)
    if recipe not in recipes:
        raise ConfigError(f"unknown recipe '{recipe}'; available recipes: {', '.join(recipes)}")
    cwd = os.getcwd()
    os.chdir(root)  # the recipes' searchpath (file://conf) is relative to the project root
    try:
        with initialize_config_dir(str(root / "recipe"), version_base=None):
            cfg = hydra_compose(config_name=recipe, overrides=list(overrides or []))
        OmegaConf.resolve(cfg)
        data = OmegaConf.to_container(cfg)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_hydra_message(exc)) from None
    finally:
        os.chdir(cwd)
    return data


def _hydra_message(exc: Exception) -> str:
    text = str(exc).split("\nConfig search path:")[0].strip()
    match = re.search(r"Could not override '([^']+)'", text)
    if match:
        parts = tuple(match.group(1).split("."))
        allowed = _allowed_keys(parts[:-1])
        if allowed:
            text += f"\nallowed keys under '{'.'.join(parts[:-1]) or '<root>'}': {', '.join(allowed)}"
    return f"cannot compose recipe: {text}"


def validate(data: dict[str, Any]) -> TrailforgeConfig:
    """Validate a composed config; every problem is reported with its key path."""
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping of group names to settings")
    missing = [g for g in GROUPS if g not in data]
    if missing:
        raise ConfigError(
            f"config is missing group(s) {', '.join(missing)}; a recipe must pick one option for each of: "
            + ", ".join(GROUPS)
        )
    try:
        return TrailforgeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None


def format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        # A discriminated union (sandbox: local | docker) adds the chosen option to the path; users never write it.
        union = err["loc"][:1] and err["loc"][0] in _DISCRIMINATORS and len(err["loc"]) > 1
        raw = tuple(p for i, p in enumerate(err["loc"]) if not (union and i == 1))
        loc = [str(p) for p in raw]
        key = ".".join(loc) or "<root>"
        if err["type"] == "extra_forbidden":
            allowed = _allowed_keys(raw[:-1], err["loc"][1] if union else None)
            lines.append(f"{key}: unknown key; allowed keys here: {', '.join(allowed)}")
        else:
            # A whole mapping may hold a secret someone put in by mistake: show only scalars.
            shown = repr(err.get("input")) if not isinstance(err.get("input"), dict) else "a mapping"
            if len(shown) > 80:
                shown = shown[:77] + "..."
            lines.append(f"{key}: {err['msg']} (got {shown})")
    return "invalid config:\n  " + "\n  ".join(lines)


def _allowed_keys(loc: tuple, option: str | None = None) -> list[str]:
    model: Any = TrailforgeConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        if field is None:
            continue  # a key of a mapping (llm.roles.judge): the model stays the mapping's value type
        model = _model_in(field.annotation, option)
    return sorted(model.model_fields) if model else []


_DISCRIMINATORS = {"sandbox": "backend", "llm": "provider", "source": "kind", "harness": "kind", "executor": "kind"}


def _model_in(annotation: Any, option: str | None = None) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = [m for m in (_model_in(arg) for arg in typing.get_args(annotation)) if m]
    for model in models:
        tag = next((model.model_fields[f] for f in _DISCRIMINATORS.values() if f in model.model_fields), None)
        allowed = typing.get_args(tag.annotation) if tag is not None else ()
        if option is None or tag is None or option in allowed or tag.default == option:
            return model
    return None


def load_params(path: Path | str = "params.yaml") -> TrailforgeConfig:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} not found; run `trailforge compose recipe=demo` first")
    return validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def write_params(data: dict[str, Any], path: Path) -> None:
    """Write the composed config the way DVC's Hydra integration does (OmegaConf YAML)."""
    from omegaconf import OmegaConf

    path.write_text(OmegaConf.to_yaml(OmegaConf.create(data)), encoding="utf-8")


def point_dvc_at_recipe(root: Path, recipe: str) -> None:
    """Make ``dvc exp run -S`` compose the same recipe that ``compose`` wrote."""
    config_path = root / ".dvc" / "config"
    if not config_path.parent.is_dir():
        return
    parser = configparser.ConfigParser()
    parser.read(config_path)
    if not parser.has_section("hydra"):
        parser.add_section("hydra")
    parser.set("hydra", "enabled", "true")
    parser.set("hydra", "config_dir", "recipe")
    parser.set("hydra", "config_name", recipe)
    with config_path.open("w") as fh:
        parser.write(fh)
