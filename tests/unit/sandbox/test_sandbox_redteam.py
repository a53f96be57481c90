"""Red-team findings against the bubblewrap backend: each test fails while its hole is open.

1. A dependency's wheel may install files anywhere under the environment's root (the ``data``
   scheme), ``pyvenv.cfg`` included. The supervisor is started with the environment's own
   ``bin/python``, so a ``home`` in that file that points at a stdlib the wheel shipped runs the
   wheel's code *as the supervisor*: uid 0 in the sandbox, with the result descriptor (forged
   frames: the real program never runs) and write access to the host's global ``/proc/sys``.
2. The lock of an environment is whatever its lock run printed; a ``.pth`` of a dependency that
   prints something else makes every later ``prepare`` of that dependency set raise.
3. Output names that are not UTF-8 come back as strings with lone surrogates, which the cache
   key (``stable_hash``) cannot encode: the next cached run of that workspace raises.
4. The install step chowns its download cache without checking it is not a link: a ``uv-cache``
   link beside ``venv_root`` (a world-writable folder such as /tmp) hands a host tree to the
   install user.
5. The sandbox reports the host's hostname (the UTS namespace starts as a copy).

The wheels are built here and installed from a local find-links folder with no index, so nothing
needs the network; the hostile code only prints and writes to the run's own result descriptor.
"""
from __future__ import annotations

import base64
import hashlib
import os
import platform
import socket
import zipfile
from pathlib import Path

import pytest

from trailforge.cache import ContentCache, stable_hash
from trailforge.sandbox import LocalSandbox, RunRequest, run_cached


@pytest.fixture(scope="module")
def box() -> LocalSandbox:
    sandbox = LocalSandbox(timeout_s=20, memory_mb=512, max_processes=64)
    if sandbox.isolation != "bwrap":
        pytest.skip("bubblewrap cannot isolate runs here")
    return sandbox


def _wheel(folder: Path, name: str, files: dict[str, bytes]) -> None:
    files = dict(files)
    files[f"{name}-1.0.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    files[f"{name}-1.0.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                            b"Tag: py3-none-any\n")
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{name}-1.0.dist-info/RECORD,,")
    files[f"{name}-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path)
            info.create_system, info.external_attr = 3, 0o100644 << 16
            archive.writestr(info, data)


def _venv_box(tmp_path: Path, links: Path) -> LocalSandbox:
    sandbox = LocalSandbox(timeout_s=20, environments="venv", venv_root=str(tmp_path / "venvs"), no_index=True,
                           find_links=(str(links),))
    if sandbox.isolation != "bwrap":
        pytest.skip("bubblewrap cannot isolate runs here")
    return sandbox


# Runs as the supervisor once the hijack works: forges a result frame, so the real program never runs.
FORGER = r'''
import json, os, sys
config = json.loads(os.fdopen(int(sys.argv[1]), "rb").readline())
body = f"TFRT-SUPERVISOR-HIJACKED uid={os.getuid()}".encode()
print(body.decode(), flush=True)
header = {"exit_code": 0, "timed_out": False, "duration_s": 0.0, "oversized": [], "cap": None, "scratch_full": False,
          "files": [{"path": "forged.txt", "size": len(body)}]}
with os.fdopen(config["result_fd"], "wb") as result:
    result.write(b"TFSBX1\n" + json.dumps(header).encode() + b"\n" + body)
'''
# The stdlib the wheel ships: its `encodings` is the first module Python imports, before any of -I -S matters.
STARTER = '''import posix
exe = posix.readlink("/proc/self/exe")
fd = posix.open("/proc/self/cmdline", posix.O_RDONLY); raw = posix.read(fd, 1 << 20); posix.close(fd)
posix.execv(exe, [exe, "-I", "-S", "-c", {forger!r}, raw.rstrip(b"\\0").split(b"\\0")[-1].decode()])
'''


def test_a_dependency_cannot_run_code_as_the_supervisor(tmp_path):
    links = tmp_path / "links"
    links.mkdir()
    sandbox = _venv_box(tmp_path, links)
    requirement = "tfrt-hijack==1.0"
    # Where prepare() will put this environment (the key is public: Python version, requirements, index).
    key = stable_hash({"python": platform.python_version(), "requirements": [requirement],
                       "wheels_only": sandbox.wheels_only, "index": [None, [str(links)], True]})[:16]
    target = (tmp_path / "venvs").resolve() / key
    version = f"python{platform.python_version_tuple()[0]}.{platform.python_version_tuple()[1]}"
    data = "tfrt_hijack-1.0.data/data"
    _wheel(links, "tfrt_hijack", {
        f"{data}/pyvenv.cfg": f"home = {target}/evil/bin\ninclude-system-site-packages = false\n".encode(),
        f"{data}/evil/lib/{version}/os.py": b"",
        f"{data}/evil/lib/{version}/encodings/__init__.py": STARTER.format(forger=FORGER).encode(),
    })
    env = sandbox.prepare([requirement])
    if env.missing:
        return  # refusing a wheel that writes pyvenv.cfg (or outside site-packages) closes the hole too
    if Path(env.spec["interpreter"]).parent.parent != target:
        pytest.skip("prepare() no longer places environments where this test predicts; update the key")
    result = sandbox.run(env, RunRequest(("python", "-c", "print('innocent program')"), {}, timeout_s=10))
    # (the program itself may still start with the wheel's stdlib: that is the program's own code, as a .pth is)
    assert "TFRT-SUPERVISOR-HIJACKED uid=0" not in result.stdout
    assert "forged.txt" not in result.files


def test_a_dependency_that_prints_at_start_up_cannot_poison_the_lock(tmp_path):
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links, "tfrt_noisy", {"tfrt_noisy.pth": b"import sys; sys.stdout.write('not a lock\\n')\n"})
    sandbox = _venv_box(tmp_path, links)
    for _ in range(2):  # the second prepare finds the environment the first one left
        env = sandbox.prepare(["tfrt-noisy==1.0"])  # a reject (missing) or a clean lock; never an exception
        assert env.missing or list(env.spec["packages"].values()) == ["1.0"]


def test_output_names_that_are_not_utf8_do_not_crash_the_next_cached_run(box, tmp_path):
    env = box.prepare([])
    code = "open(b'out-\\xff\\xfe.txt', 'wb').write(b'x')"
    first = box.run(env, RunRequest(("python", "-c", code), {}, timeout_s=10))
    assert first.ok, first.stderr
    for name in first.files:
        name.encode("utf-8")  # names handed back must be text the rest of the pipeline can store
    cache = ContentCache(tmp_path / "cache")
    again, _ = run_cached(cache, box, env, RunRequest(("python", "-c", "print(1)"), dict(first.files), timeout_s=10))
    assert again.ok


def test_the_install_cache_is_never_a_link_to_a_host_folder(tmp_path):
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links, "tfrt_plain", {"tfrt_plain.py": b"X = 1\n"})
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "file").write_text("host file")
    base = tmp_path / "shared"  # stands for a world-writable folder such as /tmp
    base.mkdir()
    (base / "uv-cache").symlink_to(victim)  # planted by another user before the first install
    sandbox = LocalSandbox(timeout_s=20, environments="venv", venv_root=str(base / "venvs"), no_index=True,
                           find_links=(str(links),))
    if sandbox.isolation != "bwrap" or os.geteuid() != 0:
        pytest.skip("the chown to the install user happens only as root with bubblewrap")
    sandbox.prepare(["tfrt-plain==1.0"])
    assert (victim / "file").stat().st_uid == 0
    assert (victim / "file").read_text() == "host file"


def test_the_sandbox_does_not_report_the_hosts_hostname(box):
    result = box.run(box.prepare([]), RunRequest(("python", "-c", "import socket; print(socket.gethostname())"), {},
                                                 timeout_s=10))
    assert result.ok, result.stderr
    assert result.stdout.strip() != socket.gethostname()
