"""Dependency installs (environments=venv): sandboxed, unprivileged, wheels only unless asked otherwise.

The package under test is a source distribution whose build backend records the uid it ran as in the
wheel it builds, so the installed environment itself says who ran the package's code. It lives in a
local find-links folder and the installs use no index, so nothing here needs the network.
"""
from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from trailforge.sandbox import LocalSandbox
from trailforge.sandbox.local import INSTALL_UID, refused_requirement

BACKEND = '''
import base64, hashlib, os, zipfile

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "hook-0.1-py3-none-any.whl"
    files = {
        "hook_uid.py": f"UID = {os.getuid()}\\nEUID = {os.geteuid()}\\n",
        "hook-0.1.dist-info/METADATA": "Metadata-Version: 2.1\\nName: hook\\nVersion: 0.1\\n",
        "hook-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        for path, text in files.items():
            data = text.encode()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append("hook-0.1.dist-info/RECORD,,")
        wheel.writestr("hook-0.1.dist-info/RECORD", "\\n".join(record) + "\\n")
    return name
'''
PYPROJECT = '''[build-system]
requires = []
build-backend = "hookbackend"
backend-path = ["."]

[project]
name = "hook"
version = "0.1"
'''


@pytest.fixture(scope="module")
def sdist_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("links")
    with tarfile.open(folder / "hook-0.1.tar.gz", "w:gz") as tar:
        for name, text in (("pyproject.toml", PYPROJECT), ("hookbackend.py", BACKEND),
                           ("PKG-INFO", "Metadata-Version: 2.1\nName: hook\nVersion: 0.1\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"hook-0.1/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    folder.chmod(0o755)
    return folder


def _box(tmp_path: Path, links: Path, **extra) -> LocalSandbox:
    box = LocalSandbox(timeout_s=60, environments="venv", venv_root=str(tmp_path / "venvs"), find_links=(str(links),),
                       no_index=True, **extra)
    if box.isolation != "bwrap":
        pytest.skip("installs run in a bubblewrap sandbox only where bwrap works")
    return box


def test_a_source_distribution_is_refused_by_default_and_names_the_requirement(tmp_path, sdist_folder):
    env = _box(tmp_path, sdist_folder).prepare(["hook==0.1"])
    assert not env.ready
    message = " ".join(env.missing)
    assert "hook==0.1" in message and "refused" in message and "wheels_only" in message


def test_a_build_allowed_on_request_runs_unprivileged_inside_the_sandbox(tmp_path, sdist_folder):
    env = _box(tmp_path, sdist_folder, wheels_only=False).prepare(["hook==0.1"])
    assert env.ready, env.missing
    assert env.spec["packages"]["hook"] == "0.1"
    recorded = next(Path(env.spec["interpreter"]).parents[1].glob("lib/python*/site-packages/hook_uid.py")).read_text()
    uid = int(recorded.split("UID = ")[1].split()[0])
    assert uid != 0 and f"EUID = {uid}" in recorded
    if os.geteuid() == 0:
        assert uid == INSTALL_UID
    # The finished environment belongs to us again, so no later sandboxed user can change it.
    assert Path(env.spec["interpreter"]).parents[1].stat().st_uid == os.geteuid()


@pytest.mark.parametrize("spec", ["six @ https://example.invalid/six-1.16.0.tar.gz",
                                  "six @ file:///etc/passwd", "six @ git+https://example.invalid/six.git"])
def test_direct_references_are_refused_before_any_install(tmp_path, sdist_folder, spec):
    assert refused_requirement(spec) == "a direct URL"
    env = _box(tmp_path, sdist_folder).prepare([spec])
    assert not env.ready and "direct URL" in env.missing[0]
    assert not (tmp_path / "venvs").exists() or not any((tmp_path / "venvs").iterdir())


def test_a_wheel_larger_than_the_output_cap_installs(tmp_path):
    """The installer is not bound by a program's per-file output cap (numpy's wheel is 16 MB)."""
    import base64
    import hashlib
    import zipfile

    links = tmp_path / "links"
    links.mkdir()
    payload = os.urandom(6_000_000)
    files = {"big/__init__.py": b"", "big/blob.bin": payload,
             "big-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: big\nVersion: 0.1\n",
             "big-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
              for p, d in files.items()] + ["big-0.1.dist-info/RECORD,,"]
    with zipfile.ZipFile(links / "big-0.1-py3-none-any.whl", "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr("big-0.1.dist-info/RECORD", "\n".join(record) + "\n")
    links.chmod(0o755)
    env = _box(tmp_path, links, max_output_file_bytes=1_000_000).prepare(["big==0.1"])
    assert env.ready, env.missing
    assert env.spec["packages"]["big"] == "0.1"


def _pure_wheel(folder: Path, name: str, version: str) -> None:
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": "VALUE = 1\n", f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text)}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")


def test_concurrent_prepares_of_one_environment_build_it_once_and_all_get_it(tmp_path):
    """Candidates of several repositories share dependency sets and are prepared from parallel workers;
    two builds of one environment used to race (one removed the folder the other had renamed into place)."""
    from concurrent.futures import ThreadPoolExecutor

    links = tmp_path / "links"
    links.mkdir()
    _pure_wheel(links, "tinylib", "1.0")
    links.chmod(0o755)
    box = _box(tmp_path, links)
    with ThreadPoolExecutor(4) as pool:
        envs = list(pool.map(lambda _: box.prepare(["tinylib"]), range(4)))
    assert all(env.ready for env in envs), [env.missing for env in envs]
    assert len({env.spec_hash for env in envs}) == 1
    built = [p for p in (tmp_path / "venvs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(built) == 1 and (built[0] / "lock.json").is_file()
