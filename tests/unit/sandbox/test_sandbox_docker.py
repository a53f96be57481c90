"""sandbox=docker against a real engine: image per dependency set, lock, install failures, same answers as local.

Skipped, with the reason, only when no Docker engine is reachable or the base image is missing
(.ci/docker-setup.sh provides both).
"""
from __future__ import annotations

import math
import time

import pytest

from conftest import DOCKER_BASE_IMAGE, PROJECT_ROOT, docker_client_or_skip
from trailforge.envs.answers import extract_answer
from trailforge.sandbox import DockerSandbox, LocalSandbox, RunRequest
from trailforge.sandbox.docker import render_dockerfile



@pytest.fixture(scope="module")
def docker_box():
    docker_client_or_skip()
    return DockerSandbox(base_image=DOCKER_BASE_IMAGE, timeout_s=60)


def test_dockerfile_pins_the_base_and_installs_into_a_venv_as_non_root():
    text = render_dockerfile("python:3.11-slim", ["numpy==2.0.1"])
    assert text.startswith("ARG BASE_IMAGE=python:3.11-slim\nFROM ${BASE_IMAGE}\n")
    assert "pip install --no-input --only-binary :all: -r /tmp/requirements.txt" in text
    # The install runs after the switch to nobody, so no package code runs as root in the build.
    assert text.index("USER 65534:65534") < text.index("pip install")
    assert "--only-binary" not in render_dockerfile("python:3.11-slim", ["numpy==2.0.1"], wheels_only=False)
    assert "PIP_CERT=" in text, "builds trust the host's CA bundle (TLS-intercepting proxies)"


def test_image_per_dependency_set_is_built_once_with_a_lock(docker_box):
    env = docker_box.prepare(["six==1.16.0"])
    assert env.ready, env.spec.get("error")
    assert env.spec["packages"]["six"] == "1.16.0"
    assert env.spec["python"].startswith("3.")
    again = DockerSandbox(base_image=DOCKER_BASE_IMAGE)  # a new process would start like this
    started = time.monotonic()
    same = again.prepare(["six==1.16.0"])
    assert same.spec_hash == env.spec_hash and time.monotonic() - started < 30
    result = docker_box.run(env, RunRequest(("python", "-c", "import six; print('six', six.__version__)"), {}, 30))
    assert result.ok and result.stdout.strip() == "six 1.16.0"


def test_an_install_failure_names_the_requirement(docker_box):
    env = docker_box.prepare(["tf-no-such-distribution-xyz==1.0"])
    assert not env.ready
    assert "tf-no-such-distribution-xyz" in env.missing[0] or "tf-no-such-distribution-xyz" in env.spec["error"]


def _answer(box, env, repo, script):
    root = PROJECT_ROOT / "examples" / "repos" / repo
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    result = box.run(env, RunRequest(("python", script), files, timeout_s=120))
    assert result.ok, result.stderr[-500:]
    texts = {p: d.decode("utf-8") for p, d in result.files.items()}
    return extract_answer(result.stdout, texts, 24, 50)[1]


def test_the_same_program_gives_the_same_answers_under_local_and_docker(docker_box):
    local = LocalSandbox(timeout_s=120)
    deps = ["numpy>=1.24", "pandas>=2.0"]
    docker_env, local_env = docker_box.prepare(deps), local.prepare(deps)
    assert docker_env.ready, docker_env.spec.get("error")
    for repo, script in [("meadow-quadrats", "beta_diversity.py"), ("griess-nitrite-kinetics", "calibration.py")]:
        in_docker, on_host = _answer(docker_box, docker_env, repo, script), _answer(local, local_env, repo, script)
        assert set(in_docker) == set(on_host) and len(on_host) >= 5
        for name, value in on_host.items():
            other = in_docker[name]
            if isinstance(value, float):
                assert math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-12), name
            else:
                assert value == other, name
