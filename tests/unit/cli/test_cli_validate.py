"""`trailforge validate` / `compose` run the model checks the stages run, from the same function."""
from __future__ import annotations

import pytest

from conftest import PROJECT_ROOT, run_stage
from trailforge.cli.main import main
from trailforge.config import compose, validate, write_params
from trailforge.config.requirements import model_settings, unmet_model_settings
from trailforge.io.pipeline import pipeline_stages

# (override, the key the error must name, the stage whose settings it is)
MODEL_SETTINGS = [
    ("verifier.review=true", "verifier.review=true", "verify"),
    ("tasks.statements=model", "tasks.statements=model", "statements"),
    ("tasks.seeds.judge=true", "tasks.seeds.judge=true", "seeds"),
    ("tasks.seeds.consolidate=true", "tasks.seeds.consolidate=true", "seeds"),
]


@pytest.fixture(autouse=True)
def _in_project(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)  # the CLI finds recipes and dvc.yaml from the working folder


@pytest.mark.parametrize("override, key, stage", MODEL_SETTINGS)
def test_validate_refuses_a_model_setting_without_a_model_and_names_the_key(override, key, stage, capsys):
    assert main(["validate", "recipe=tiny", override]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert key in err and f"stage {stage}" in err and "llm=none" in err and "llm=openai" in err


@pytest.mark.parametrize("override, key, stage", MODEL_SETTINGS)
def test_the_same_setting_validates_with_a_model(override, key, stage, capsys):
    assert main(["validate", "recipe=tiny", override, "llm=openai"]) == 0
    assert "is valid" in capsys.readouterr().out


def test_keyword_expansion_on_github_search_needs_a_model():
    cfg = validate(compose("tiny", ["source=github", "source.expand_keywords=true"], root=PROJECT_ROOT))
    assert unmet_model_settings(cfg, ["discover"]) == {"discover": ["source.expand_keywords=true"]}
    assert main(["validate", "recipe=tiny", "source=github", "source.expand_keywords=true"]) == 2


def test_validate_reports_every_unmet_setting_at_once(capsys):
    assert main(["validate", "recipe=tiny", "verifier.review=true", "tasks.statements=model"]) == 2
    err = capsys.readouterr().err
    assert "verifier.review=true (stage verify)" in err and "tasks.statements=model (stage statements)" in err
    assert " need a model" in err


def test_compose_refuses_too_and_writes_no_params(tmp_path, capsys):
    out = tmp_path / "params.yaml"
    assert main(["compose", "recipe=tiny", "verifier.review=true", "--output", str(out)]) == 2
    assert not out.exists()
    assert "verifier.review=true" in capsys.readouterr().err


def test_every_recipe_as_written_needs_no_model_for_dvc_repro():
    """The bundled recipes build with llm=none: what `trailforge validate recipe=NAME` checks passes for each."""
    stages = pipeline_stages(PROJECT_ROOT)
    assert {"seeds", "statements", "verify"} <= set(stages)
    for recipe in ("demo", "tiny", "curate", "ideatrail", "repos"):
        assert main(["validate", f"recipe={recipe}"]) == 0, recipe


def test_every_pipeline_stage_that_can_call_a_model_is_known_to_the_check():
    cfg = validate(compose("tiny", [], root=PROJECT_ROOT))
    known = set(model_settings(cfg))
    # The stages whose modules ask for a model client: the check must know each, or validate misses it.
    asking = {p.stem for p in (PROJECT_ROOT / "stages").glob("*.py") if "model_or_exit(" in p.read_text()}
    assert asking == known, (asking, known)


@pytest.mark.parametrize("override, key, stage", [MODEL_SETTINGS[0], MODEL_SETTINGS[2]])
def test_the_stage_stops_at_start_with_the_message_validate_gives(override, key, stage, project, capsys):
    main(["validate", "recipe=tiny", override])
    from_validate = capsys.readouterr().err.strip()
    write_params(compose("tiny", [override], root=PROJECT_ROOT), project / "params.yaml")
    inputs = {"verify": ["--tasks", "missing"], "seeds": ["--snapshots", "missing"]}[stage]
    done = run_stage(project, stage, *inputs, "--out", f"out/{stage}", check=False)
    assert done.returncode != 0
    # Stopped before reading its (missing) input, with the key the CLI named.
    assert f"error: {key} needs a model, but the recipe sets llm=none" in done.stderr
    assert "Traceback" not in done.stderr
    assert key in from_validate
