"""Config: Hydra composes recipes, pydantic validates them (see ``schema``)."""
from .compose import ConfigError, compose, load_params, validate, write_params
from .schema import TrailforgeConfig

__all__ = ["ConfigError", "TrailforgeConfig", "compose", "load_params", "validate", "write_params"]
