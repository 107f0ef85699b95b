"""Scoring on Ray (`--ray`) gives what a local run gives: replay's report byte for byte (timing fields
aside), `equiv --candidates` and `ctl` the same output; a corrupt bag is failed, not lost; a worker that
dies is retried once and reported; a local cluster that Ray gives up starting (its fixed 30 s) is started
once more; no Ray, no cluster at the address, one that cannot be joined, or a local cluster that Ray gives
up starting twice, is one line and exit 2 (those of `ray.init` are Ray's exceptions, raised by a stand-in).

One local cluster of 2 CPUs serves the module (started as `--ray` with no address starts it); the
commands run in this process and use it.
"""

import ast
import importlib.util
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from ray_replay_bags import FAST, GROUP_BY, SPECS, report_files, without_timings, write_bag, write_marked_bag

from safety_monitor import executors, installation
from safety_monitor.cli import main, workers
from safety_monitor.errors import ExecutorError, SourceError
from safety_monitor.executors import Done, Executor, Processes, RayCluster, Serial, in_order, make_executor
from safety_monitor.pipeline.markers import START
from safety_monitor.replay import batch
from safety_monitor.replay.score import ReplayConfig


@pytest.fixture(scope="module")
def cluster():
    if importlib.util.find_spec("ray") is None:  # not imported here: RayCluster must be first to import it
        pytest.skip("the optional extra: pip install .[ray] (make setup installs it)")
    with RayCluster(jobs=2) as executor:  # what `--ray` with no address starts
        sys.modules["ray"].cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import it
        yield executor


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("replay_ray")


@pytest.fixture(scope="module")
def specs(folder):
    path = folder / "specs.yaml"
    path.write_text(SPECS)
    return str(path)


@pytest.fixture(scope="module")
def bags(folder):
    """Two good bags, a blind one and a corrupt one (its data file cut short)."""
    runs = folder / "runs"
    made = [write_bag(runs / "policy_a_1", 60), write_bag(runs / "policy_b_1", 90)]
    made.append(write_bag(runs / "policy_b_2", 60, wrench=False))
    corrupt = write_bag(runs / "policy_a_corrupt", 60)
    data = next(corrupt.glob("*.mcap"))
    data.write_bytes(data.read_bytes()[:2000])
    return [*made, corrupt]


def replay(report, *args):
    return main(["replay", *map(str, args), *FAST, "--report", str(report), *GROUP_BY])


# ------------------------------------------------------------------------------------ replay
def test_a_ray_report_is_the_local_report(cluster, bags, specs, tmp_path, capsys):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert replay(local, *bags, "--specs", specs) == 1  # the corrupt bag
    local_out = capsys.readouterr()
    assert replay(on_ray, *bags, "--specs", specs, "--ray") == 1
    ray_out = capsys.readouterr()
    assert without_timings(on_ray / "report.json") == without_timings(local / "report.json")
    files = report_files(local)
    assert Path("summary.md") in files and Path("plots/risk_by_category.png") in files
    assert report_files(on_ray) == files
    for name in files:
        assert (on_ray / name).read_bytes() == (local / name).read_bytes(), name
    assert ray_out.out.replace(str(on_ray), str(local)) == local_out.out
    assert ray_out.err == local_out.err


def test_a_bag_cut_by_its_markers_reports_alike_on_ray_counting_bags_and_rollouts(cluster, bags, tmp_path, capsys):
    cut = write_marked_bag(tmp_path / "policy_a_cut", [START, 40, START, 30])
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert replay(local, cut, bags[0], "--no-plots") == 0
    local_out = capsys.readouterr().out
    assert replay(on_ray, cut, bags[0], "--no-plots", "--ray") == 0
    assert capsys.readouterr().out.replace(str(on_ray), str(local)) == local_out
    assert local_out.splitlines()[-1].startswith("2 of 2 bag(s) scored, 3 rollouts; 3 rollout(s) blind")
    assert without_timings(on_ray / "report.json") == without_timings(local / "report.json")
    assert (on_ray / "summary.md").read_bytes() == (local / "summary.md").read_bytes()


def test_a_corrupt_bag_under_ray_is_reported_failed(cluster, bags, specs, tmp_path):
    assert replay(tmp_path, *bags, "--specs", specs, "--ray") == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    status = {Path(b["bag"]).name: b["status"] for b in doc["bags"]}
    assert status == {
        "policy_a_1": "scored",
        "policy_b_1": "scored",
        "policy_b_2": "scored",
        "policy_a_corrupt": "failed",
    }
    [failed] = doc["bags_failed"]
    assert failed["bag"] == str(bags[-1]) and failed["error"].startswith(f"{bags[-1]}: ")


def test_a_node_with_another_installation_fails_its_bags_naming_the_files_that_differ(
    cluster, bags, specs, tmp_path, monkeypatch
):
    """The command's installation differs from the nodes' (here: the command's is made to, as if its
    checkout had an edited grasp.py and a config file the nodes lack): every bag fails saying so, none is
    scored by the nodes' other rules."""
    files = dict(installation.this_installation().files)
    files["safety_monitor/grounding/grasp.py"] = "0" * 64
    files["config/lab.yaml"] = "1" * 64
    monkeypatch.setattr(executors, "this_installation", lambda: installation.Installation(files))
    assert replay(tmp_path, *bags[:2], "--specs", specs, "--ray") == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [b["status"] for b in doc["bags"]] == ["failed", "failed"]
    for failed, bag in zip(doc["bags_failed"], bags):
        assert failed["error"] == (
            f"{bag}: ExecutorError: Ray node {socket.gethostname()} has another safety_monitor installation than "
            "the command (config/lab.yaml missing here, safety_monitor/grounding/grasp.py differs): install the "
            "same commit on every node"
        )


def test_a_node_whose_spec_file_is_another_fails_its_bags_naming_it(cluster, bags, specs, tmp_path, monkeypatch):
    """Each node reads `--specs` at its path: a node whose copy differs from the command's (here: the
    command's digest of it is made to differ) fails every bag naming the file, the package being the same."""
    real = installation._digest
    monkeypatch.setattr(installation, "_digest", lambda path: "0" * 64 if str(path) == specs else real(path))
    assert replay(tmp_path, *bags[:2], "--specs", specs, "--ray") == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [b["status"] for b in doc["bags"]] == ["failed", "failed"]
    for failed in doc["bags_failed"]:
        assert failed["error"].endswith(
            f"has other files than the command's ({specs} differs): put the same files at the same path on every node"
        )


def test_a_node_that_builds_another_robot_model_fails_its_bags(cluster, bags, specs, tmp_path, monkeypatch):
    """Each worker compiles the robot's model from its own files and MuJoCo: one whose model is not the
    command's (here: the command's digest of it is made to differ) fails every bag saying so."""
    pinned = ReplayConfig.with_model
    monkeypatch.setattr(ReplayConfig, "with_model", lambda self: replace(pinned(self), model_digest="0" * 64))
    assert replay(tmp_path, *bags[:2], "--specs", specs, "--ray") == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [b["status"] for b in doc["bags"]] == ["failed", "failed"]
    for failed, bag in zip(doc["bags_failed"], bags):
        assert failed["error"].startswith(
            f"{bag}: the robot model built on {socket.gethostname()} is not the command's (another URDF, MJCF, mesh"
        )


def _one_byte_longer(name, host):
    """`installation.copy_of` but for the bag or file `name`, whose copy is one byte longer and read on `host`."""
    real = installation.copy_of

    def copy_of(path):
        copy = real(path)
        if Path(path).name != name:
            return copy
        files = {
            file: (size + 1, digest) if file != "metadata.yaml" else (size, digest)
            for file, (size, digest) in copy.files.items()
        }
        return replace(copy, host=host, files=files)

    return copy_of


@pytest.mark.parametrize(
    "host, says",
    [
        (
            "gpu-07",  # the command ran elsewhere: this node has another copy
            "{bag}: the copy on {here} is not the command's ({file} is {size} bytes here, {longer} on the command's "
            "machine): put the same bags at the same path on every node",
        ),
        (
            socket.gethostname(),  # the command ran here: the bag changed meanwhile
            "{bag}: changed while the command ran ({file} is {size} bytes now, {longer} when the command read it): "
            "read it once it is written in full",
        ),
    ],
)
def test_a_worker_that_reads_another_copy_of_a_bag_fails_that_bag_saying_so(
    where, bags, specs, tmp_path, monkeypatch, host, says
):
    """Each worker reads a bag at the command's path on its own machine. Here the command's copy of
    policy_b_1 is made one byte longer, as if the worker's were cut short (read on another machine) or had
    changed since the command read it (on the same one): that bag fails saying so, the others are scored."""
    _, option = where
    monkeypatch.setattr(installation, "copy_of", _one_byte_longer("policy_b_1", host))
    assert replay(tmp_path, *bags[:3], "--specs", specs, *option) == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [b["status"] for b in doc["bags"]] == ["scored", "failed", "scored"]
    [failed] = doc["bags_failed"]
    [data] = bags[1].glob("*.mcap")
    size = data.stat().st_size
    assert failed["error"] == says.format(
        bag=bags[1], here=socket.gethostname(), file=data.name, size=size, longer=size + 1
    )


def test_the_command_reads_each_bags_copy_as_it_hands_the_bag_out_not_all_first(bags, monkeypatch):
    read = []
    monkeypatch.setattr(installation, "copy_of", lambda bag: read.append(bag) or {"run.mcap": (1, "0")})
    items = installation.WithCopies(bags)
    assert read == [] and len(items) == len(bags)
    assert items[1] == (bags[1], {"run.mcap": (1, "0")}) and read == [bags[1]]
    assert [bag for bag, _ in items[2:]] == bags[2:] and read == bags[1:]


def test_a_bag_a_worker_does_not_find_is_failed_saying_where(bags, tmp_path):
    gone = tmp_path / "policy_c_1"
    elsewhere = replace(installation.copy_of(bags[0]), host="gpu-07")  # as the command read it on its machine
    result = batch._score_copy((gone, elsewhere), ReplayConfig())
    assert not result.ok and result.error == (
        f"{gone}: not found on {socket.gethostname()}: put the bags at the same path on every node"
    )
    result = batch._score_copy((gone, replace(elsewhere, host=socket.gethostname())), ReplayConfig())
    assert result.error == f"{gone}: removed while the command ran"


def _die(fn, doomed, log, every_time, item):
    """A task whose worker process is killed (SIGKILL, as the OOM killer ends it) on the items in `doomed`:
    the first time, or with `every_time` every time. Each run of a task is a line in `log`/<item>.runs."""
    name = Path(item[0] if isinstance(item, tuple) else item).name  # a replay task's item: (bag, its copy)
    runs = log / f"{name}.runs"
    first = not runs.exists()
    with runs.open("a") as out:
        out.write("run\n")
    if name in doomed and (first or every_time):
        os.kill(os.getpid(), signal.SIGKILL)
    return fn(item)


def runs_of(log):
    return {path.name.removesuffix(".runs"): len(path.read_text().splitlines()) for path in log.glob("*.runs")}


class Doomed(Executor):
    """An executor whose workers die on the items in `doomed` (see `_die`)."""

    def __init__(self, executor, doomed, log, every_time=False):
        self.executor, self.doomed, self.log, self.every_time = executor, doomed, log, every_time

    def map(self, fn, items):
        return self.executor.map(partial(_die, fn, self.doomed, self.log, self.every_time), items)


@pytest.fixture(params=["--jobs", "--ray"])
def where(request):
    """The two executors that run tasks in worker processes, and the option that chooses each: the
    module's Ray cluster, or two local processes (`_die` is imported there by name, from this module)."""
    if request.param == "--ray":
        return request.getfixturevalue("cluster"), ["--ray"]
    return Processes(2), ["--jobs", "2"]


def test_a_bag_whose_worker_dies_once_is_scored_again_and_said(where, bags, specs, tmp_path, monkeypatch, capsys):
    executor, option = where
    assert replay(tmp_path / "here", *bags[:3], "--specs", specs) == 0
    capsys.readouterr()
    log = tmp_path / "runs"
    log.mkdir()
    monkeypatch.setattr(workers, "executor", lambda args, tasks=None, named=(): Doomed(executor, {"policy_b_1"}, log))
    assert replay(tmp_path / "there", *bags[:3], "--specs", specs, *option) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "died" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"safety-monitor replay: warning: {bags[1]}: the worker")
    assert warnings[0].endswith("; scored by another")
    assert "Traceback" not in err
    assert without_timings(tmp_path / "there" / "report.json") == without_timings(tmp_path / "here" / "report.json")
    assert runs_of(log) == {"policy_a_1": 1, "policy_b_1": 2, "policy_b_2": 1}  # none lost, none scored twice


def test_a_bag_whose_worker_dies_twice_is_failed_and_the_rest_are_scored(
    where, bags, specs, tmp_path, monkeypatch, capsys
):
    executor, option = where
    log = tmp_path / "runs"
    log.mkdir()
    doomed = Doomed(executor, {"policy_b_1"}, log, every_time=True)
    monkeypatch.setattr(workers, "executor", lambda args, tasks=None, named=(): doomed)
    assert replay(tmp_path, *bags[:3], "--specs", specs, *option) == 1
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [b["status"] for b in doc["bags"]] == ["scored", "failed", "scored"]
    [failed] = doc["bags_failed"]
    assert failed["error"].startswith(f"{bags[1]}: the worker scoring it died twice (")
    assert failed["error"].endswith("); not scored")
    err = capsys.readouterr().err
    assert f"failed: {failed['error']}" in err and "Traceback" not in err
    assert runs_of(log) == {"policy_a_1": 1, "policy_b_1": 2, "policy_b_2": 1}


def test_a_local_worker_that_dies_is_named_by_its_signal(bags, specs, tmp_path, monkeypatch):
    log = tmp_path / "runs"
    log.mkdir()
    doomed = Doomed(Processes(2), {"policy_b_1"}, log, every_time=True)
    monkeypatch.setattr(workers, "executor", lambda args, tasks=None, named=(): doomed)
    assert replay(tmp_path, *bags[:2], "--specs", specs, "--jobs", "2") == 1
    [failed] = json.loads((tmp_path / "report.json").read_text())["bags_failed"]
    assert failed["error"] == f"{bags[1]}: the worker scoring it died twice (killed by SIGKILL); not scored"


def test_a_trace_file_whose_worker_dies_twice_is_one_line_and_exit_2(where, tmp_path, monkeypatch, capsys):
    executor, option = where
    paths = _traces(tmp_path, 3)
    log = tmp_path / "runs"
    log.mkdir()
    doomed = Doomed(executor, {paths[1].name}, log, every_time=True)
    monkeypatch.setattr(workers, "executor", lambda args, tasks=None, named=(): doomed)
    assert main(["ctl", *map(str, paths), "--formula", "EF r", *option]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"safety-monitor ctl: error: {paths[1]}: its worker died twice (")
    assert line.endswith("); not done")


def test_a_local_cluster_of_its_own_starts_without_ray_warning_of_its_authentication(cluster, bags, specs, tmp_path):
    """Ray warns on every run that it turned token authentication on, unless RAY_AUTH_MODE chose it."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # this process's cluster set it
    argv = [sys.executable, "-m", "safety_monitor.cli", "replay", str(bags[0]), "--specs", specs, *FAST, "--jobs", "1"]
    run = subprocess.run([*argv, "--ray"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.endswith("1 of 1 bag(s) scored\n"), run.stderr
    assert "Token authentication" not in run.stderr and "RAY_AUTH_MODE" not in run.stderr, run.stderr


STOP_ORDER = """
from ray._private import ray_constants, worker
from safety_monitor.executors import RayCluster

cluster = RayCluster(jobs=1)
node = worker._global_node
gcs = node.all_processes[ray_constants.PROCESS_TYPE_GCS_SERVER][0].process
kill, calls = node._kill_process_type, []

def recorded(process_type, *args, **kwargs):
    calls.append((process_type, gcs.poll() is None))
    return kill(process_type, *args, **kwargs)

node._kill_process_type = recorded
cluster.close()
print(calls)
"""


def test_a_local_cluster_of_its_own_stops_its_autoscaler_monitor_while_the_gcs_still_runs(cluster):
    """ray.shutdown stops the GCS first, and the monitor then waits a second for Ray to SIGKILL it: a
    cluster of the run's own kills the monitor first, the GCS still up, and lets Ray stop the rest."""
    run = subprocess.run([sys.executable, "-c", STOP_ORDER], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    calls = ast.literal_eval(run.stdout.strip().splitlines()[-1])  # a list of (process type, GCS alive) pairs
    assert calls[0] == ("monitor", True), calls
    assert [kind for kind, _ in calls].count("monitor") == 1 and ("gcs_server", True) in calls, calls


# ------------------------------------------------------------------------------ equiv and ctl
def test_equiv_candidates_on_ray_print_what_a_local_run_prints(cluster, tmp_path, capsys):
    candidates = tmp_path / "cands.jsonl"
    rows = [
        ("no_excess_wrench", "G(!excess_wrench)", "a"),
        ("no_excess_wrench", "!F(excess_wrench)", "b"),
        ("drop_only_when_released", "G(object_dropped -> object_released)", "a"),
        ("drop_only_when_released", "G(object_dropped -> ", "b"),
        ("drop_only_when_released", "G(object_dropped -> X object_released)", "c"),
    ]
    candidates.write_text("".join(json.dumps({"id": i, "formula": f, "model": m}) + "\n" for i, f, m in rows))
    references = tmp_path / "refs.yaml"
    references.write_text(
        "no_excess_wrench: 'G(!excess_wrench)'\ndrop_only_when_released: 'G(object_dropped -> object_released)'\n"
    )
    argv = ["equiv", "--candidates", str(candidates), "--reference", str(references), "--json"]
    assert main(argv) == 0
    local = capsys.readouterr()
    assert main([*argv, "--ray"]) == 0
    assert capsys.readouterr() == local
    verdicts = [s["verdict"] for s in json.loads(local.out)["scores"]]
    assert verdicts == ["equivalent", "equivalent", "equivalent", "syntax_error", "not_equivalent"]


def _traces(folder, count):
    """`count` trace files: a grasp released on the even ones, never released on the odd ones."""
    paths = []
    for k in range(count):
        frames = [{"g": False, "r": False}, {"g": True, "r": False}, {"g": True, "r": k % 2 == 0}]
        frames += [{"g": False, "r": bool(j % 2)} for j in range(k)]
        paths.append(folder / f"trace_{k}.jsonl")
        paths[-1].write_text("".join(json.dumps(f) + "\n" for f in frames))
    return paths


def _without_times(text):
    doc = json.loads(text)
    for key in ("merge_s", "check_s"):
        doc["tree"].pop(key)
    return doc


def test_ctl_over_trace_files_on_ray_gives_the_local_result(cluster, tmp_path, capsys, monkeypatch):
    """Relative paths too: the tasks run in the command's folder, not the workers' own."""
    monkeypatch.chdir(tmp_path)
    names = [p.name for p in _traces(tmp_path, 6)]
    argv = ["ctl", *names, "--formula", "AG(g -> AF r)", "--formula", "EF r", "--json"]
    assert main(argv) == 1  # the odd traces never release
    local = capsys.readouterr()
    assert main([*argv, "--ray"]) == 1
    on_ray = capsys.readouterr()
    assert _without_times(on_ray.out) == _without_times(local.out) and on_ray.err == local.err
    assert _without_times(local.out)["tree"]["trajectories"] == 6


def test_ctl_on_ray_names_the_first_bad_file_a_serial_run_would(cluster, tmp_path, capsys):
    """Tasks finish in any order; the error is still the first in input order."""
    paths = _traces(tmp_path, 4)
    for bad in (paths[1], paths[3]):
        bad.write_text('{"g": true}\nnot json\n')
    argv = ["ctl", *map(str, paths), "--formula", "AG(g -> AF r)"]
    assert main(argv) == 2
    local = capsys.readouterr().err
    assert main([*argv, "--ray"]) == 2
    assert (
        capsys.readouterr().err
        == local
        == f"safety-monitor ctl: error: {paths[1]}:2: not valid JSON: Expecting value\n"
    )


def test_ctl_where_a_worker_reads_another_copy_of_a_trace_file_is_one_line_naming_it(
    where, tmp_path, monkeypatch, capsys
):
    """The command's copy of trace_1 is made to differ at its ends, as if a node held another recording there."""
    _, option = where
    paths = _traces(tmp_path, 3)
    real = installation.copy_of
    monkeypatch.setattr(
        installation,
        "copy_of",
        lambda path: (
            replace(real(path), host="gpu-07", files={n: (size, "0" * 64) for n, (size, _) in real(path).files.items()})
            if Path(path).name == "trace_1.jsonl"
            else real(path)
        ),
    )
    assert main(["ctl", *map(str, paths), "--formula", "AG(g -> AF r)", *option]) == 2
    assert capsys.readouterr().err == (
        f"safety-monitor ctl: error: {paths[1]}: the copy on {socket.gethostname()} is not the command's "
        "(trace_1.jsonl differs): put the same trace files and bags at the same path on every node\n"
    )


# ------------------------------------------------------------------------------------ errors
def test_without_ray_installed_ray_is_one_line_saying_how_to_install_it(bags, specs, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if it were not installed
    assert main(["replay", str(bags[0]), "--specs", specs, *FAST, "--ray"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "safety-monitor replay: error: --ray needs Ray, an optional extra: pip install 'safety_monitor[ray]' (or: pip install ray)\n"
    )


def test_an_address_nothing_listens_on_is_one_line(bags, specs, capsys):
    with socket.socket() as probe:  # a port free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["replay", str(bags[0]), "--specs", specs, *FAST, "--ray", f"127.0.0.1:{port}"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"safety-monitor replay: error: --ray 127.0.0.1:{port}: no Ray cluster answers there (")
    assert "ray start --head" in line


# what Ray 2.60 raises when ray.init fails: a start whose raylet is not up within Ray's fixed 30 s
# (ray/_private/node.py), `auto` with no cluster (ray/_private/services.py), another Ray or Python (ray/_private/utils.py)
TIMED_OUT = (
    "The current node timed out during startup. This could happen because some of the raylet failed to startup or "
    "the GCS has become overloaded."
)
NO_CLUSTER = (
    "Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or "
    "`RAY_ADDRESS` environment variable."
)
VERSIONS = (
    "Version mismatch: The cluster was started with:\n    Ray: 2.50.0\n    Python: 3.11.2\n"
    "This process on node 10.0.0.2 was started with:\n    Ray: 2.60.0\n    Python: 3.11.9\n"
)
STARTING_AGAIN = (
    "warning: --ray: Ray's local cluster did not start within its 30 s (machine busy?); starting it once more"
)


class FakeRay:
    """`ray.init` whose calls take `outcomes` in turn: None returns (a start that worked: the session is then
    this process's), an exception is raised after starting a process, as Ray's failed start leaves its GCS and
    raylet running. `calls` records these and `ray.shutdown` in order, `configs` each call's `_system_config`,
    which it then writes into as Ray's start does."""

    def __init__(self):
        self.outcomes, self.calls, self.configs, self.left, self.started = [], [], [], [], False

    def init(self, **kwargs):
        self.calls.append("init")
        if (config := kwargs.get("_system_config")) is not None:
            self.configs.append(dict(config))
            config["object_spilling_config"] = '{"type": "filesystem"}'
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            self.left.append(subprocess.Popen(["sleep", "300"]))
            raise outcome
        self.started = True

    def shutdown(self):
        self.calls.append("shutdown")
        self.started = False


@pytest.fixture
def fake_ray(monkeypatch):
    """Ray's `ray.init`, `ray.is_initialized` and `ray.shutdown` a FakeRay's: a session it starts is the module's
    cluster (if it runs), which its shutdown leaves running."""
    executors._choose_token_auth()  # as RayCluster does before Ray is first imported
    ray = pytest.importorskip("ray")
    fake = FakeRay()
    monkeypatch.setattr(ray, "init", fake.init)
    monkeypatch.setattr(ray, "is_initialized", lambda: fake.started)
    monkeypatch.setattr(ray, "shutdown", fake.shutdown)
    monkeypatch.setattr(executors, "_kill_autoscaler_monitor", lambda: None)
    yield fake
    for process in fake.left:  # the tests check these were killed; this only keeps a failed one from lingering
        process.kill()
        process.wait()


def test_a_local_cluster_ray_gives_up_starting_is_started_once_more_saying_so(
    cluster, fake_ray, bags, specs, tmp_path, capsys
):
    """Ray's start gives up when its raylet is not up within 30 s, as on a busy machine: what it left running is
    stopped, the cluster started once more (here: the module's, as if that start had worked), the run goes on."""
    fake_ray.outcomes = [Exception(TIMED_OUT), None]
    assert replay(tmp_path, bags[0], "--specs", specs, "--ray") == 0
    assert capsys.readouterr().err == f"safety-monitor replay: {STARTING_AGAIN}\n"
    assert fake_ray.calls == ["init", "shutdown", "init", "shutdown"]  # the last one ends the run
    assert fake_ray.configs == [{"worker_niceness": 0}] * 2  # not the first start's, which Ray warns about
    assert [process.wait(timeout=60) for process in fake_ray.left] == [-signal.SIGKILL]
    assert [b["status"] for b in json.loads((tmp_path / "report.json").read_text())["bags"]] == ["scored"]


@pytest.mark.parametrize("command", ["replay", "equiv", "ctl"])
def test_a_local_cluster_ray_gives_up_starting_twice_is_one_line_and_exit_2_losing_nothing(
    command, fake_ray, bags, specs, tmp_path, capsys
):
    report = tmp_path / "report"  # a previous run's report, where this run would write its own
    report.mkdir()
    (report / "summary.md").write_text("a previous run's summary\n")
    (tmp_path / "cands.jsonl").write_text('{"id": 1, "formula": "G a", "model": "m"}\n')
    (tmp_path / "refs.yaml").write_text("p: 'G a'\n")
    argv = {
        "replay": ["replay", str(bags[0]), "--specs", specs, *FAST, "--report", str(report)],
        "equiv": ["equiv", "--candidates", str(tmp_path / "cands.jsonl"), "--reference", str(tmp_path / "refs.yaml")],
        "ctl": ["ctl", *map(str, _traces(tmp_path, 2)), "--formula", "EF r"],
    }[command]
    fake_ray.outcomes = [Exception(TIMED_OUT), Exception(TIMED_OUT)]
    assert main([*argv, "--ray"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"safety-monitor {command}: {STARTING_AGAIN}",
        f"safety-monitor {command}: error: --ray: Ray's local cluster did not start within its 30 s (machine busy?), "
        "twice: retry, or run without --ray (--jobs N: local processes)",
    ]
    assert fake_ray.calls == ["init", "shutdown", "init", "shutdown"]
    assert [process.wait(timeout=60) for process in fake_ray.left] == [-signal.SIGKILL] * 2
    assert [p.name for p in report.iterdir()] == ["summary.md"]
    assert (report / "summary.md").read_text() == "a previous run's summary\n"


@pytest.mark.parametrize(
    "address, raised, says",
    [
        (
            "HOST:PORT",
            RuntimeError(VERSIONS),
            "the cluster runs Ray 2.50.0 on Python 3.11.2, this command Ray 2.60.0 on Python 3.11.9: install the "
            "cluster's Ray and Python versions here",
        ),
        (
            "auto",
            ConnectionError(NO_CLUSTER),
            "no Ray cluster runs on this machine and RAY_ADDRESS is not set: start one with `ray start --head`, give "
            "its address, or put a bare --ray for a cluster of the run's own",
        ),
        (
            "HOST:PORT",
            ConnectionError("Failed to connect to Ray cluster at HOST:PORT"),
            "cannot join the Ray cluster there: Failed to connect to Ray cluster at HOST:PORT; check that it runs "
            "(`ray status` on its head node) and, if it checks tokens, that RAY_AUTH_MODE=token and its token are set "
            "here",
        ),
    ],
)
def test_a_cluster_that_cannot_be_joined_is_one_line_naming_why_and_not_tried_again(
    address, raised, says, fake_ray, bags, specs, capsys
):
    with socket.create_server(("127.0.0.1", 0)) as server:  # something listens there: Ray is asked
        where = address.replace("HOST:PORT", f"127.0.0.1:{server.getsockname()[1]}")
        fake_ray.outcomes = [type(raised)(str(raised).replace("HOST:PORT", where))]
        assert main(["replay", str(bags[0]), "--specs", specs, *FAST, "--ray", where]) == 2
    says = says.replace("HOST:PORT", where)
    assert capsys.readouterr().err == f"safety-monitor replay: error: --ray {where}: {says}\n"
    assert fake_ray.calls == ["init", "shutdown"]


@pytest.mark.parametrize("address", ["runs/", "host", "host:99999", "http://host:6379"])
def test_what_is_not_an_address_is_a_usage_error(address, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["replay", "bag", "--ray", address])
    assert stop.value.code == 2
    assert f"argument --ray: {address!r} is not a Ray address" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["equiv", "G a", "G a", "--ray"], "--jobs and --ray score --candidates"),
        (["ctl", "--sim", "open_drawer", "--formula", "EF a", "--jobs", "2"], "--jobs and --ray read trace files"),
    ],
)
def test_the_options_are_refused_where_there_is_nothing_to_spread(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


# ----------------------------------------------------------------------------- executors
def test_jobs_choose_the_local_executor(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert isinstance(make_executor(None), Serial) and isinstance(make_executor(1), Serial)
    assert isinstance(make_executor(2), Processes) and make_executor(2).jobs == 2
    assert make_executor(0).jobs == 3  # one per CPU this process may use
    with pytest.raises(ExecutorError, match="--jobs must be 0"):
        make_executor(-1)


def test_in_order_raises_the_first_error_in_input_order_once_the_tasks_before_it_finished():
    late, early = SourceError("task 2"), SourceError("task 1")
    finished = []
    dones = iter([Done(2, error=late), Done(0, "a"), Done(1, error=early), Done(3, "d")])
    with pytest.raises(SourceError) as raised:
        in_order(dones, 4, on_done=lambda d: finished.append(d.index))
    assert raised.value is early and finished == [2, 0, 1]
    assert [d.result for d in in_order(iter([Done(1, "b"), Done(0, "a")]), 2)] == ["a", "b"]


def test_a_task_that_does_not_pickle_fails_alone_and_leaves_no_worker_behind():
    items = ["ab", threading.Lock(), "abc", "abcd"]  # a lock cannot be sent to another process
    before = set(multiprocessing.active_children())
    dones = {d.index: d for d in Processes(2).map(len, items)}
    assert {i: dones[i].result for i in (0, 2, 3)} == {0: 2, 2: 3, 3: 4}
    assert isinstance(dones[1].error, ExecutorError) and "cannot be sent to a worker process" in str(dones[1].error)
    assert set(multiprocessing.active_children()) == before  # every worker it started has ended


def _square_unless_seven(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x * x


def test_a_cluster_of_its_own_runs_every_task_once_however_many_are_queued_behind_its_workers(cluster):
    """Its own cluster is handed more tasks than it has CPUs (one queued behind each running one): each of
    many tasks still comes back exactly once, a failing one as its error, the ones after it as results."""
    dones = list(cluster.map(_square_unless_seven, range(13)))
    assert sorted(d.index for d in dones) == list(range(13))
    by_index = {d.index: d for d in dones}
    assert {i: d.result for i, d in by_index.items() if i != 7} == {i: i * i for i in range(13) if i != 7}
    assert isinstance(by_index[7].error, ValueError) and str(by_index[7].error) == "seven"
