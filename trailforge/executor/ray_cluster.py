"""A throwaway Ray cluster on loopback: one head process and N worker-node processes, for tests and bench.

Every node is a ``ray start --block`` subprocess in a session of its own, on ports picked free on
127.0.0.1 and with its own temp dir, so it never meets another cluster on the machine. Teardown
kills exactly the process groups it started (``ray stop`` would stop every cluster of the user).

    with LoopbackCluster(workers=1) as cluster:
        ... executor=ray executor.address=<cluster.address> ...
        cluster.kill_worker(0)       # the node dies: raylet and its worker processes
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

_PORT_OPTIONS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                 "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def offline_ray_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for Ray processes here: no usage stats, no dashboard, nothing off this machine.

    Token authentication is off for these throwaway clusters. Recent Ray (2.60 here) turns it on for
    any ``ray start`` once ``~/.ray/auth_token`` exists, and the first plain ``ray.init()`` on a machine
    writes that file; in token mode no client reached a head bound to 127.0.0.1.
    """
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
            "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "RAY_AUTH_MODE": "disabled", **(extra or {})}


class LoopbackCluster:
    def __init__(self, workers: int = 1, cpus_per_node: int = 1, env: dict[str, str] | None = None,
                 start_timeout_s: float = 120.0):
        self.workers = workers
        self.cpus_per_node = cpus_per_node
        self.env = offline_ray_env(env)
        self.start_timeout_s = start_timeout_s
        # Short: Ray puts unix sockets under it, and their paths must stay under 108 bytes.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="tfray-", dir="/tmp"))
        # Every port and worker-port range handed out to this cluster's nodes: Ray refuses to start a node
        # whose worker range holds one of its own ports, and two nodes here must not share a port either.
        self._reserved: set[int] = set()
        self.port = self._port()
        self.address = f"127.0.0.1:{self.port}"
        self.head: subprocess.Popen | None = None
        self.worker_nodes: list[subprocess.Popen] = []

    def _port(self) -> int:
        """A port free now on 127.0.0.1 and not yet given to any node or worker range of this cluster."""
        while True:
            port = free_port()
            if port not in self._reserved:
                self._reserved.add(port)
                return port

    def _worker_range(self, width: int = 200) -> tuple[int, int]:
        """A small worker-port range of our own, clear of every port handed out so far."""
        while True:
            low = free_port()
            low = low if low + width < 65000 else 20000 + low % 10000
            span = range(low, low + width + 1)
            if not self._reserved.intersection(span):
                self._reserved.update(span)
                return low, low + width

    def _ray_start(self, *args: str) -> subprocess.Popen:
        ports = ["--object-store-memory", str(200 * 1024 * 1024)]
        ports += [arg for option in _PORT_OPTIONS for arg in (option, str(self._port()))]
        low, high = self._worker_range()
        ports += ["--min-worker-port", str(low), "--max-worker-port", str(high)]
        cmd = [str(Path(sys.executable).with_name("ray")), "start", "--block", "--node-ip-address=127.0.0.1",
               f"--num-cpus={self.cpus_per_node}", "--num-gpus=0", "--disable-usage-stats", *ports, *args]
        log = open(self.temp_dir / f"node-{len(self.worker_nodes) + (self.head is not None)}.log", "wb")
        return subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> "LoopbackCluster":
        self.head = self._ray_start("--head", f"--port={self.port}", "--include-dashboard=false",
                                    "--dashboard-host=127.0.0.1", f"--dashboard-port={self._port()}",
                                    f"--temp-dir={self.temp_dir}",
                                    '--system-config={"health_check_period_ms":1000,'
                                    '"health_check_failure_threshold":3}')
        self._wait_for_nodes(1)
        for _ in range(self.workers):
            self.worker_nodes.append(self._ray_start(f"--address={self.address}"))
        self._wait_for_nodes(1 + self.workers)
        return self

    def _wait_for_nodes(self, count: int) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        script = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False);"
                  "print(sum(n['Alive'] for n in ray.nodes()))")
        last = ""
        while time.monotonic() < deadline:
            for proc in [self.head, *self.worker_nodes]:
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"a ray node exited with {proc.returncode}: {self.logs()[-2000:]}")
            try:  # ray.init would wait long for a head that is not listening yet
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                time.sleep(0.5)
                continue
            try:
                done = subprocess.run([sys.executable, "-c", script, self.address], env=self.env,
                                      capture_output=True, text=True, timeout=60)
                last = (done.stdout.strip().splitlines() or [""])[-1] or done.stderr[-500:]
                if done.returncode == 0 and last.isdigit() and int(last) >= count:
                    return
            except subprocess.TimeoutExpired:
                last = "ray.init timed out"
            time.sleep(0.5)
        raise RuntimeError(f"the loopback Ray cluster did not reach {count} nodes in {self.start_timeout_s}s "
                           f"({last}): {self.logs()[-2000:]}")

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.temp_dir.glob("node-*.log")))

    def processes_of(self, node: subprocess.Popen) -> list[psutil.Process]:
        """The node's `ray start` process and everything under it (raylet, worker processes, agents)."""
        try:
            root = psutil.Process(node.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def kill_worker(self, index: int = 0) -> int:
        """SIGKILL worker node ``index`` (its raylet and its worker processes); returns how many died."""
        victims = self.processes_of(self.worker_nodes[index])
        for proc in victims:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        self.worker_nodes[index].wait(timeout=30)
        return len(victims)

    def stop(self) -> None:
        nodes = [*self.worker_nodes, *([self.head] if self.head else [])]
        victims = [p for node in nodes for p in self.processes_of(node)]
        for node in nodes:
            if node.poll() is None:
                try:
                    os.killpg(node.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for node in nodes:
            try:
                node.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
        # Whatever ignored SIGTERM, or left the group (Ray's workers start sessions of their own), goes now.
        for proc in victims:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        for node in nodes:
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LoopbackCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
