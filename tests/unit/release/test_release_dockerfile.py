"""Every exported environment carries a Dockerfile and a lock that rebuild its sandbox."""
from __future__ import annotations

import io
import os
import tarfile

from conftest import DOCKER_BASE_IMAGE, docker_client_or_skip
from trailforge.io import AnswerField, FileEntry, VerifiedTaskRow
from trailforge.release.export import environment_dockerfile, locked_requirements



def _task(packages: dict[str, str], python: str = "3.11.7") -> VerifiedTaskRow:
    return VerifiedTaskRow(
        task_id="org__repo__a.py__reproduction", task_type="reproduction", seed_id="org/repo:a.py",
        repo_id="org/repo", discipline="ecology", statement="s",
        answer_schema=[AnswerField(name="x", type="number", label="x", source="stdout")], reference_answer={"x": 1.0},
        entrypoint="a.py", reference_program={"a.py": "print('x: 1.0')\n"},
        workspace_files=[FileEntry(path="data/obs.csv", sha256="0", size=4, kind="data")], tree="/nonexistent",
        distributions=["six"], sandbox_spec={"backend": "local", "python": python, "packages": packages},
        tolerances={"x": {"rtol": 1e-6, "atol": 1e-9}}, checks={},
    )


def test_lock_pins_what_was_verified_and_leaves_out_tooling():
    task = _task({"six": "1.16.0", "pip": "23.2", "setuptools": "65", "Pandas": "2.2.0"})
    assert locked_requirements(task) == ["Pandas==2.2.0", "six==1.16.0"]


def test_dockerfile_uses_the_verified_python_and_ships_the_workspace():
    text = environment_dockerfile(_task({"six": "1.16.0"}, python="3.12.4"), ["six==1.16.0"])
    assert "ARG BASE_IMAGE=python:3.12-slim" in text
    assert "COPY requirements.lock.txt ca-bundle.cr[t]" in text and "COPY --chown=65534:65534 workspace/ /work/" in text
    assert "USER 65534:65534" in text


def test_exported_dockerfile_builds_and_runs(tmp_path):
    client = docker_client_or_skip()
    task = _task({"six": "1.16.0"})
    requirements = locked_requirements(task)
    files = {
        "Dockerfile": environment_dockerfile(task, requirements).encode(),
        "requirements.lock.txt": "".join(f"{r}\n" for r in requirements).encode(),
        "workspace/data/obs.csv": b"a,b\n",
    }
    ca = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(ca):  # this machine reaches PyPI through a TLS-intercepting proxy
        files["ca-bundle.crt"] = open(ca, "rb").read()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, tag="trailforge/test-export:latest",
                                   buildargs={"BASE_IMAGE": DOCKER_BASE_IMAGE}, rm=True, forcerm=True, network_mode="host")
    probe = "import six; print(six.__version__, open('data/obs.csv').read().strip())"
    output = client.containers.run(image.id, ["python", "-c", probe], remove=True, network_mode="none")
    assert output.decode().split() == ["1.16.0", "a,b"]
