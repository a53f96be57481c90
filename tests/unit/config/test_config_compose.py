"""Composition (Hydra) and validation (pydantic) of recipes, params files and the DVC pointer."""
from __future__ import annotations

import configparser
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from conftest import PROJECT_ROOT
from trailforge.config.compose import (
    ConfigError,
    compose,
    list_recipes,
    load_params,
    point_dvc_at_recipe,
    project_root,
    validate,
    write_params,
)
from trailforge.config.schema import GROUPS, RepoEntry, TrailforgeConfig

ROOT = project_root(PROJECT_ROOT)  # this checkout, wherever it lives
RECIPES = list_recipes(ROOT)


def _error(recipe: str, overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as info:
        validate(compose(recipe, overrides, root=ROOT))
    return str(info.value)


def test_project_has_recipes_to_check():
    assert "demo" in RECIPES


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_composes_and_validates(recipe):
    cfg = validate(compose(recipe, root=ROOT))
    assert isinstance(cfg, TrailforgeConfig)
    assert cfg.recipe == recipe
    assert cfg.source.repos or cfg.source.folders, "a recipe must name at least one repository"


def test_the_repos_recipe_runs_each_program_in_its_own_venv_over_a_folder_of_clones():
    cfg = validate(compose("repos", root=ROOT))
    assert (cfg.sandbox.backend, cfg.sandbox.isolation, cfg.sandbox.environments) == ("local", "auto", "venv")
    assert cfg.source.kind == "local" and cfg.source.folders == ["../shared/realrepos"] and cfg.source.repos == []
    # sandbox=venv is sandbox=local with one change: every other setting is local's.
    local = compose("demo", root=ROOT)["sandbox"]
    venv = compose("demo", ["sandbox=venv"], root=ROOT)["sandbox"]
    assert {k for k in local if local[k] != venv[k]} == {"environments"}


def test_a_local_source_with_no_repository_and_no_folder_is_rejected_by_key():
    message = _error("demo", ["source.repos=[]"])
    assert "source" in message and "'folders'" in message


def test_compose_restores_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compose("demo", root=ROOT)
    assert Path.cwd() == tmp_path


def test_override_changes_value():
    cfg = validate(compose("demo", ["verifier.rtol=0.001"], root=ROOT))
    assert cfg.verifier.rtol == pytest.approx(0.001)


def test_unknown_key_override_names_key_and_allowed_keys():
    message = _error("demo", ["verifier.rtoll=1"])
    assert "verifier.rtoll" in message
    assert "rtol" in message.replace("rtoll", "")
    assert "spread_factor" in message


def test_wrong_type_override_names_key():
    message = _error("demo", ["verifier.rtol=abc"])
    assert "verifier.rtol" in message
    assert "abc" in message


def test_unknown_option_lists_available_option():
    message = _error("demo", ["sandbox=nope"])
    assert "nope" in message
    assert "local" in message


def test_unknown_recipe_lists_available_recipes():
    with pytest.raises(ConfigError) as info:
        compose("no_such_recipe", root=ROOT)
    message = str(info.value)
    assert "no_such_recipe" in message
    for recipe in RECIPES:
        assert recipe in message


def test_appended_unknown_root_key_is_rejected_as_unknown_key():
    message = _error("demo", ["+foo=1"])
    assert "foo" in message
    assert "unknown key" in message


def test_validate_empty_mapping_names_every_missing_group():
    with pytest.raises(ConfigError) as info:
        validate({})
    message = str(info.value)
    for group in GROUPS:
        assert group in message


def test_validate_names_only_the_missing_group():
    data = compose("demo", root=ROOT)
    del data["verifier"]
    with pytest.raises(ConfigError, match="missing group\\(s\\) verifier;"):
        validate(data)


def test_validate_rejects_non_mapping():
    with pytest.raises(ConfigError):
        validate(["not", "a", "mapping"])


def test_out_of_range_value_names_key():
    data = compose("demo", root=ROOT)
    data["verifier"]["repeats"] = 0
    with pytest.raises(ConfigError, match="verifier.repeats"):
        validate(data)


def test_repo_entry_accepts_path_or_url():
    assert RepoEntry(path="examples/a").path == "examples/a"
    assert RepoEntry(url="https://example.org/r.git").url.endswith("r.git")


@pytest.mark.parametrize("kwargs", [{}, {"path": "a", "url": "https://example.org/r.git"}])
def test_repo_entry_needs_exactly_one_of_path_and_url(kwargs):
    with pytest.raises(ValidationError, match="exactly one of 'path' or 'url'"):
        RepoEntry(**kwargs)


def test_repo_entry_problem_reported_through_validate():
    data = compose("demo", root=ROOT)
    data["source"]["repos"] = [{"name": "neither"}]
    with pytest.raises(ConfigError, match="source.repos.0"):
        validate(data)


def test_write_params_then_load_params_round_trips(tmp_path):
    data = compose("tiny", ["verifier.repeats=3", "seed=7"], root=ROOT)
    path = tmp_path / "params.yaml"
    write_params(data, path)
    loaded = load_params(path)
    assert loaded == validate(data)
    assert loaded.verifier.repeats == 3
    assert loaded.seed == 7
    assert loaded.recipe == "tiny"


def test_load_params_missing_file_raises_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_params(tmp_path / "params.yaml")


def test_load_params_reports_typo_in_file(tmp_path):
    data = compose("demo", root=ROOT)
    data["budget"]["max_repo"] = 3
    path = tmp_path / "params.yaml"
    write_params(data, path)
    with pytest.raises(ConfigError, match="budget.max_repo: unknown key"):
        load_params(path)


def test_point_dvc_at_recipe_writes_config_name(tmp_path):
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text("[core]\n    autostage = true\n")
    point_dvc_at_recipe(tmp_path, "tiny")
    parser = configparser.ConfigParser()
    parser.read(tmp_path / ".dvc" / "config")
    assert parser.get("hydra", "config_name") == "tiny"
    assert parser.get("hydra", "config_dir") == "recipe"
    assert parser.get("hydra", "enabled") == "true"
    assert parser.get("core", "autostage") == "true"


def test_point_dvc_at_recipe_replaces_previous_recipe(tmp_path):
    (tmp_path / ".dvc").mkdir()
    point_dvc_at_recipe(tmp_path, "demo")
    point_dvc_at_recipe(tmp_path, "tiny")
    parser = configparser.ConfigParser()
    parser.read(tmp_path / ".dvc" / "config")
    assert parser.get("hydra", "config_name") == "tiny"


def test_point_dvc_at_recipe_without_dvc_folder_writes_nothing(tmp_path):
    point_dvc_at_recipe(tmp_path, "demo")
    assert not (tmp_path / ".dvc").exists()


def _dotted(data, key):
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_params_key_dvc_yaml_names_is_in_every_recipe(recipe):
    """DVC reads params from the composed file, not from the schema's defaults: a key a stage names
    must be written by the recipe, or `dvc repro` stops with 'Parameters ... are missing'."""
    data = compose(recipe, root=PROJECT_ROOT)
    stages = yaml.safe_load((PROJECT_ROOT / "dvc.yaml").read_text())["stages"]
    missing = [(stage, key) for stage, spec in stages.items() for key in spec.get("params", [])
               if isinstance(key, str) and not _dotted(data, key)]
    assert not missing, missing


def test_a_lineage_field_is_mapped_with_a_plain_override(tmp_path):
    """The README's curate command: `lineage.input.fields.id=uid` needs no `+`, and the mapping is used."""
    from trailforge.config.schema import LINEAGE_FIELDS
    from trailforge.lineage.items import read_items

    cfg = validate(compose("curate", ["lineage.input.fields.id=uid"], root=PROJECT_ROOT)).lineage.input
    assert cfg.fields["id"] == "uid" and cfg.fields["text"] == "text"
    assert set(cfg.fields) == set(LINEAGE_FIELDS), "the schema and conf/lineage list the same names"
    corpus = tmp_path / "mine.jsonl"
    corpus.write_text('{"uid": "a1", "text": "one"}\n{"uid": "a2", "text": "two", "parents": ["a1"]}\n')
    items, unreadable = read_items(corpus, "jsonl", cfg.fields)
    assert [i.item_id for i in items] == ["a1", "a2"] and items[1].parents == ["a1"] and not unreadable


def test_an_unknown_lineage_field_name_is_refused_with_the_names():
    with pytest.raises(ConfigError, match="lineage.input.fields"):
        compose("curate", ["lineage.input.fields.uid=id"], root=PROJECT_ROOT)
    with pytest.raises(ConfigError, match="unknown field name.s. uid; the names are id, text, code"):
        validate(compose("curate", ["+lineage.input.fields.uid=id"], root=PROJECT_ROOT))
