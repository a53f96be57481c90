"""Unit tier: the loopback test cluster comes up on machines where Ray has been used before."""
from __future__ import annotations

import secrets

import pytest

pytest.importorskip("ray")
from trailforge.executor.ray_cluster import LoopbackCluster  # noqa: E402


def test_a_token_left_by_an_earlier_local_cluster_does_not_lock_clients_out(tmp_path):
    # A plain ray.init() writes ~/.ray/auth_token; every later `ray start` then runs in token mode,
    # where clients could not reach a head bound to 127.0.0.1 and start() timed out.
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    with LoopbackCluster(workers=0, env={"HOME": str(home)}, start_timeout_s=60) as cluster:
        assert cluster.head.poll() is None  # start() returned: a client saw the head node alive
