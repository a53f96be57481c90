"""The hostile-program battery, run against every sandbox backend this host has.

Each case is a program a mined repository could contain. It must be contained (the host
is unchanged), end with a reason code, and leave the next run unaffected.
"""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import DOCKER_BASE_IMAGE, alive_with, docker_client_or_skip
from trailforge.sandbox import DockerSandbox, LocalSandbox, RunRequest

SECRET = "tf-battery-secret-9f8e7d"


@pytest.fixture(scope="module", params=["local", "docker"])
def backend(request):
    if request.param == "local":
        box = LocalSandbox(timeout_s=20, max_stdout_bytes=20_000, max_output_file_bytes=2_000_000, memory_mb=512,
                           max_processes=64)
    else:
        docker_client_or_skip()
        box = DockerSandbox(base_image=DOCKER_BASE_IMAGE, timeout_s=20, max_stdout_bytes=20_000,
                            max_output_file_bytes=2_000_000, memory_mb=256, max_processes=64)
    return box, box.prepare([])


def run(backend, code: str, files: dict[str, bytes] | None = None, timeout_s: float = 8):
    box, env = backend
    return box.run(env, RunRequest(("python", "-c", code), dict(files or {}), timeout_s=timeout_s))


def _strict(backend) -> bool:
    """Whether the backend hides the host filesystem (docker always; local with namespaces)."""
    box, _ = backend
    return box.name == "docker" or getattr(box, "namespaces", False)


@pytest.fixture(autouse=True)
def next_run_is_unaffected(backend):
    yield
    after = run(backend, "print('still fine')")
    assert after.ok and after.stdout.strip() == "still fine", after.stderr


@pytest.fixture
def listening_port():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    hits = []

    def accept():
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                conn, _ = server.accept()
                hits.append(1)
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    server.close()


def test_network_connections_fail(backend, listening_port):
    port, hits = listening_port
    code = (
        "import socket\n"
        f"socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
    )
    result = run(backend, code)
    assert result.reason == "nonzero_exit"
    assert "Error" in result.stderr
    outside = run(backend, "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)\n")
    assert outside.reason == "nonzero_exit"
    time.sleep(0.3)
    assert hits == [], "the program reached a port on the host"


def test_environment_secrets_are_not_passed(backend, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = run(backend, "import os\nprint(sorted(os.environ.items()))\n")
    assert result.ok
    assert SECRET not in result.stdout and "HF_TOKEN" not in result.stdout


@pytest.fixture
def home_secret():
    path = Path.home() / ".cache" / "tf-battery" / "token"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SECRET)
    yield path
    path.unlink()


def test_files_in_the_home_directory_cannot_be_read(backend, home_secret):
    if not _strict(backend):
        pytest.xfail("local backend without namespaces (not root): the program runs as you and reads your files")
    code = (
        "import os\n"
        f"for path in [{str(home_secret)!r}, os.path.expanduser('~/.cache/tf-battery/token')]:\n"
        "    try:\n"
        "        print(open(path).read())\n"
        "    except OSError as exc:\n"
        "        print('blocked', type(exc).__name__)\n"
    )
    result = run(backend, code)
    assert result.ok, result.stderr
    assert SECRET not in result.stdout and result.stdout.count("blocked") == 2


def test_symlinks_to_host_files_leak_nothing(backend, home_secret):
    code = f"import os\nos.symlink({str(home_secret)!r}, 'leak.txt')\nos.symlink('/etc/passwd', 'passwd.txt')\n"
    result = run(backend, code)
    assert result.ok, result.stderr
    assert result.files == {}, "symlinks are never followed when collecting outputs"


def test_writes_outside_the_scratch_directory_fail(backend, tmp_path):
    marker = tmp_path / "escaped.txt"
    targets = [str(marker), "/tmp/tf-battery-escape.txt", "/etc/tf-battery-escape.txt"]
    code = (
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('blocked', type(exc).__name__)\n"
    )
    result = run(backend, code)
    assert result.ok, result.stderr
    assert not marker.exists() and not Path("/etc/tf-battery-escape.txt").exists()
    if _strict(backend):
        # /tmp may be a private tmpfs inside the sandbox (docker): writable there, never the host's.
        assert f"wrote {marker}" not in result.stdout and "wrote /etc" not in result.stdout
        assert not Path("/tmp/tf-battery-escape.txt").exists()
    Path("/tmp/tf-battery-escape.txt").unlink(missing_ok=True)


def test_fork_bomb_is_contained(backend):
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    started = time.monotonic()
    result = run(backend, code, timeout_s=4)
    assert result.reason in ("timeout", "killed_by_signal", "nonzero_exit")
    assert time.monotonic() - started < 60


def test_memory_bomb_is_contained(backend):
    result = run(backend, "chunks = []\nwhile True:\n    chunks.append(bytearray(50_000_000))\n")
    assert result.reason in ("nonzero_exit", "killed_by_signal")
    assert "MemoryError" in result.stderr or result.reason == "killed_by_signal"


def test_infinite_loop_times_out(backend):
    result = run(backend, "while True:\n    pass\n", timeout_s=2)
    assert result.reason == "timeout"
    assert result.duration_s < 15


def test_sleeping_past_the_timeout_is_stopped(backend):
    result = run(backend, "import time\nprint('start', flush=True)\ntime.sleep(100)\n", timeout_s=2)
    assert result.reason == "timeout" and result.duration_s < 15
    assert result.stdout.strip() == "start"


def test_output_flood_is_capped(backend):
    result = run(backend, "import sys\nwhile True:\n    sys.stdout.write('x' * 10000)\n", timeout_s=10)
    assert result.reason in ("output_limit", "timeout", "killed_by_signal")
    assert len(result.stdout) <= 20_000 and result.stdout_truncated


def test_background_processes_do_not_outlive_the_run(backend):
    marker = f"tf-battery-bg-{time.monotonic_ns()}"
    escape = ", start_new_session=True" if _strict(backend) else ""
    code = ("import subprocess, sys\n"
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}]{escape})\n")
    result = run(backend, code)
    assert result.ok, result.stderr
    deadline = time.monotonic() + 10
    while alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive_with(marker)


def test_input_files_cannot_be_altered(backend):
    if not _strict(backend):
        pytest.xfail("local backend without namespaces: inputs are plain files of the calling user")
    result = run(backend, "open('data/in.csv', 'a').write('tampered')\n", {"data/in.csv": b"a\n"})
    assert result.reason == "nonzero_exit" and "Permission denied" in result.stderr
    assert result.files == {}
