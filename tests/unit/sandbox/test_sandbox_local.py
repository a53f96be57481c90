"""LocalSandbox: scratch directory, scrubbed environment, limits, process-group cleanup, no network."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import trailforge.sandbox.local as local_module
from conftest import alive_with
from trailforge.sandbox import LocalSandbox, RunRequest, SandboxUnavailable


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    return LocalSandbox(timeout_s=20, max_stdout_bytes=10_000)


@pytest.fixture(scope="module")
def env(sandbox):
    return sandbox.prepare([])


def run(sandbox, prepared, code: str, files: dict[str, bytes] | None = None, timeout_s: float = 20, **extra):
    request = RunRequest(("python", "main.py"), {"main.py": code.encode(), **(files or {})}, timeout_s=timeout_s,
                         **extra)
    return sandbox.run(prepared, request)


def _unshare_works() -> bool:
    if not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def test_program_output_and_written_file_are_returned(sandbox, env):
    code = "print('Mean: 1.5')\nopen('out/result.txt', 'w').write('done')\n"
    result = run(sandbox, env, "import os\nos.makedirs('out')\n" + code)
    assert result.ok and result.reason == "ok" and result.exit_code == 0
    assert result.stdout == "Mean: 1.5\n"
    assert result.files == {"out/result.txt": b"done"}
    assert result.stdout_truncated is False


def test_unchanged_inputs_are_not_returned_but_changed_ones_are(sandbox, env):
    code = ("import os\ndata = open('data/in.csv').read()\nopen('state.new', 'w').write('x+')\n"
            "os.replace('state.new', 'state.txt')\nprint(len(data))\n")
    files = {"data/in.csv": b"a,b\n1,2\n", "state.txt": b"x"}
    result = run(sandbox, env, code, files)
    assert result.ok, result.stderr
    assert result.stdout.strip() == "8"
    assert result.files == {"state.txt": b"x+"}


def test_temp_dir_and_symlinks_are_not_collected(sandbox, env):
    code = (
        "import os, tempfile\n"
        "open(os.path.join(tempfile.gettempdir(), 'scratch.txt'), 'w').write('t')\n"
        "os.symlink('/etc/hostname', 'link.txt')\n"
        "open('real.txt', 'w').write('r')\n"
    )
    result = run(sandbox, env, code)
    assert result.ok, result.stderr
    assert result.files == {"real.txt": b"r"}


def test_nonzero_exit_is_reported(sandbox, env):
    result = run(sandbox, env, "import sys\nprint('partial')\nsys.exit(3)\n")
    assert result.reason == "nonzero_exit"
    assert result.exit_code == 3
    assert not result.ok
    assert result.stdout == "partial\n"


def test_exception_traceback_is_in_stderr(sandbox, env):
    result = run(sandbox, env, "raise ValueError('boom')\n")
    assert result.reason == "nonzero_exit"
    assert "ValueError: boom" in result.stderr


def test_sleeping_past_timeout_is_stopped(sandbox, env):
    started = time.monotonic()
    result = run(sandbox, env, "import time\nprint('start', flush=True)\ntime.sleep(120)\n", timeout_s=1)
    assert result.reason == "timeout"
    assert not result.ok
    assert result.stdout == "start\n"
    assert time.monotonic() - started < 30


def test_output_flood_is_capped_and_flagged(sandbox, env):
    result = run(sandbox, env, "import sys\nsys.stdout.write('x' * 10_000_000)\n")
    assert result.stdout_truncated is True
    assert len(result.stdout) == sandbox.max_stdout_bytes
    assert set(result.stdout) == {"x"}
    assert result.reason != "ok"


def test_output_flood_reason_is_output_limit(sandbox, env):
    result = run(sandbox, env, "import sys\nsys.stdout.write('x' * 10_000_000)\n")
    assert result.reason == "output_limit"


def test_host_environment_variables_are_hidden(sandbox, env, monkeypatch):
    monkeypatch.setenv("TF_SECRET_TOKEN", "s3cr3t-value")
    code = "import os\nprint(os.environ.get('TF_SECRET_TOKEN'))\nprint(sorted(os.environ))\n"
    result = run(sandbox, env, code)
    assert result.ok
    assert "s3cr3t-value" not in result.stdout
    assert "TF_SECRET_TOKEN" not in result.stdout
    assert result.stdout.splitlines()[0] == "None"


def test_request_env_is_passed_to_program(sandbox, env):
    result = run(sandbox, env, "import os\nprint(os.environ['TF_EXTRA'])\n", env={"TF_EXTRA": "given"})
    assert result.stdout == "given\n"


def test_home_and_tmpdir_point_inside_scratch_dir(sandbox, env):
    # Printed paths may be masked by the sandbox, so the program reports its own findings.
    code = (
        "import os, json\n"
        "real = os.path.realpath\n"
        "cwd = real(os.getcwd())\n"
        "json.dump({'home_is_cwd': real(os.environ['HOME']) == cwd,\n"
        "           'tmp_in_cwd': os.path.dirname(real(os.environ['TMPDIR'])) == cwd,\n"
        "           'scratch_name': cwd == '/tf-scratch' or os.path.basename(os.path.dirname(cwd)) == 'trailforge-sandbox',\n"
        "           'cwd': cwd}, open('where.json', 'w'))\n"
    )
    result = run(sandbox, env, code)
    where = json.loads(result.files["where.json"])
    assert where["home_is_cwd"] is True
    assert where["tmp_in_cwd"] is True
    assert where["scratch_name"] is True
    assert not Path(where["cwd"]).exists(), "the scratch directory is removed after the run"


@pytest.mark.parametrize("bad_path", ["../escape.py", "data/../../escape.py", "/tmp/abs.py", ""])
def test_file_path_outside_scratch_is_bad_request(sandbox, env, bad_path, tmp_path):
    result = run(sandbox, env, "print('should not run')\n", {bad_path: b"x = 1\n"})
    assert result.reason == "bad_request"
    assert result.exit_code is None
    assert result.stdout == ""


def _wait_gone(marker: str) -> bool:
    deadline = time.monotonic() + 10
    while alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive_with(marker)


def test_background_process_is_killed_after_run(sandbox, env):
    marker = f"tf-bg-{time.monotonic_ns()}"
    # Leaving the process group only escapes a plain subprocess; a PID namespace takes it down regardless.
    escape = ", start_new_session=True" if sandbox.namespaces else ""
    code = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', {marker!r}]{escape})\n"
    )
    result = run(sandbox, env, code)
    assert result.ok, result.stderr
    assert _wait_gone(marker), "a background process (in its own session) survived the run"


def test_background_process_is_killed_after_timeout(sandbox, env):
    marker = f"tf-bg-{time.monotonic_ns()}"
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}])\n"
        "time.sleep(60)\n"
    )
    result = run(sandbox, env, code, timeout_s=1)
    assert result.reason == "timeout"
    assert _wait_gone(marker)


NETWORK_PROBE = (
    "import socket, sys\n"
    "s = socket.socket()\n"
    "s.settimeout(3)\n"
    "try:\n"
    "    s.connect(('127.0.0.1', int(sys.argv[1])))\n"
    "    print('connected')\n"
    "except OSError as exc:\n"
    "    print('blocked', type(exc).__name__)\n"
)


@pytest.fixture
def listening_port():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def _probe(box: LocalSandbox, port: int):
    request = RunRequest(("python", "probe.py", str(port)), {"probe.py": NETWORK_PROBE.encode()}, timeout_s=15)
    return box.run(box.prepare([]), request)


@pytest.mark.skipif(not _unshare_works(), reason="`unshare -n true` fails on this host: no network namespace")
def test_network_is_unreachable_inside_sandbox(listening_port):
    box = LocalSandbox(timeout_s=15, network="none")
    assert box.isolate_network is True
    result = _probe(box, listening_port)
    assert result.ok, result.stderr
    assert result.stdout.startswith("blocked"), result.stdout


def test_host_network_mode_reaches_listening_socket(listening_port):
    """Control for the isolation test: the probe does connect when isolation is off."""
    result = _probe(LocalSandbox(timeout_s=15, network="host"), listening_port)
    assert result.stdout.strip() == "connected"


def test_required_isolation_without_bubblewrap_raises_and_auto_says_so(monkeypatch, capsys):
    monkeypatch.setattr(local_module, "bwrap_problem", lambda: "the `bwrap` program is not installed")
    monkeypatch.setattr(local_module, "_warned", set())
    with pytest.raises(SandboxUnavailable, match="require_network_isolation"):
        LocalSandbox(require_network_isolation=True)
    with pytest.raises(SandboxUnavailable, match="isolation is 'required'.*bwrap"):
        LocalSandbox(isolation="required")
    box = LocalSandbox(require_network_isolation=False)
    assert box.isolate_network is False and box.isolation == "process"
    warning = capsys.readouterr().err
    assert "downgraded to plain subprocesses" in warning and "bwrap" in warning


def test_prepare_reports_missing_distribution(sandbox):
    env = sandbox.prepare(["pytest", "trailforge-no-such-distribution-xyz"])
    assert env.missing == ("trailforge-no-such-distribution-xyz",)
    assert not env.ready
    assert "pytest" in env.spec["packages"]


def test_prepare_spec_hash_depends_on_packages(sandbox):
    empty, with_pytest = sandbox.prepare([]), sandbox.prepare(["pytest"])
    assert empty.ready and with_pytest.ready
    assert empty.spec_hash != with_pytest.spec_hash
    assert sandbox.prepare(["pytest", "pytest"]).spec_hash == with_pytest.spec_hash


def test_venv_per_dependency_set_is_built_once_locked_and_used(tmp_path):
    box = LocalSandbox(timeout_s=30, environments="venv", venv_root=str(tmp_path / "venvs"))
    env = box.prepare(["six==1.16.0"])
    assert env.ready, env.missing
    assert env.spec["packages"]["six"] == "1.16.0" and "trailforge" not in env.spec["packages"]
    started = time.monotonic()
    again = LocalSandbox(environments="venv", venv_root=str(tmp_path / "venvs")).prepare(["six==1.16.0"])
    assert again.spec_hash == env.spec_hash and time.monotonic() - started < 2, "the second prepare reuses it"
    result = box.run(env, RunRequest(("python", "-c", "import six, sys; print(six.__version__, sys.prefix)"), {}, 30))
    assert result.ok, result.stderr
    version, prefix = result.stdout.split()
    assert version == "1.16.0" and prefix.startswith(str(tmp_path / "venvs"))


def test_venv_install_failure_names_the_requirement(tmp_path):
    box = LocalSandbox(environments="venv", venv_root=str(tmp_path / "venvs"))
    env = box.prepare(["tf-no-such-distribution-xyz==1.0"])
    assert not env.ready and "tf-no-such-distribution-xyz" in env.missing[0]
    left = [p.name for p in (tmp_path / "venvs").iterdir() if p.name not in (".uv-cache", ".pip-cache", ".locks")]
    assert left == [], "a failed build leaves nothing to reuse (the installer's download cache and build locks aside)"


def test_host_environment_reports_a_pin_it_cannot_meet():
    env = LocalSandbox().prepare(["numpy==0.0.1", "pytest"])
    assert env.missing and "numpy==0.0.1 (the host has" in env.missing[0]


def test_seccomp_refuses_new_namespaces_and_keyrings(sandbox, env):
    if not sandbox.seccomp:
        pytest.skip("no seccomp filter here (needs bubblewrap, libseccomp and pyseccomp)")
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"  # CLONE_NEWUSER
            "print('keyctl', libc.syscall(250 if os.uname().machine == 'x86_64' else 219, 0, 0, 0), ctypes.get_errno())\n"
            "print([l for l in open('/proc/self/status') if l.startswith('Seccomp:')][0].split()[1])\n")
    result = run(sandbox, env, code)
    assert result.ok, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "unshare -1 1" and lines[1] == "keyctl -1 1"  # EPERM from the filter
    assert lines[2] == "2"  # filter mode


def test_the_program_runs_as_an_unprivileged_user_with_no_capabilities(sandbox, env):
    if sandbox.isolation != "bwrap":
        pytest.skip("bubblewrap cannot isolate runs here")
    code = ("import os\nprint(os.getuid(), os.geteuid(), os.getgid())\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff:')][0])\n")
    result = run(sandbox, env, code)
    uid, euid, gid = (int(x) for x in result.stdout.split("\n")[0].split())
    assert uid == euid and uid != 0 and gid != 0
    assert int(result.stdout.split("\n")[1], 16) == 0
