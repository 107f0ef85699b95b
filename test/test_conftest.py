"""The suite's own environment (conftest.py): the workers of one pytest-xdist run never share a ROS domain,
and a test marked `alone` runs while no other test holds the run's lock."""

import fcntl

import conftest
import pytest


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


def _can_lock(path, kind) -> bool:
    """Whether another holder could take the run's lock `kind` now (a new open file: a lock of its own)."""
    with open(path, "a") as other:
        try:
            fcntl.flock(other, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(other, fcntl.LOCK_UN)
        return True


def test_a_test_holds_the_run_lock_shared_with_the_others(_run_lock_path):
    assert _can_lock(_run_lock_path, fcntl.LOCK_SH)  # another worker's test runs beside it
    assert not _can_lock(_run_lock_path, fcntl.LOCK_EX)  # an alone test waits for it


@pytest.mark.alone
def test_an_alone_test_holds_the_run_lock_to_itself(_run_lock_path):
    assert not _can_lock(_run_lock_path, fcntl.LOCK_SH)
