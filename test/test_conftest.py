"""The suite's own environment (conftest.py): the workers of one pytest-xdist run never share a ROS domain."""

import conftest


def test_each_xdist_worker_of_a_run_has_a_domain_of_its_own(monkeypatch):
    domains = {}
    for run in ("a1b2c3", "ffffffffff", "0"):
        monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", run)
        for index in range(8):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
            domains[run, index] = conftest._session_domain()
        assert len({domains[run, index] for index in range(8)}) == 8, domains
    assert all(1 <= domain <= 100 for domain in domains.values()), domains


def test_a_run_without_xdist_draws_a_domain_in_range(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    assert all(1 <= conftest._session_domain() <= 100 for _ in range(50))
