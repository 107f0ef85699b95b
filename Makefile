# Two commands on a fresh machine: `make sim` (main job) and `make test`.
# Both set up what is missing first: MONA and a C compiler (apt), a pinned virtual environment in .venv, and
# the estimators' C kernels (safety_monitor/grounding/_geomath.c) built in place.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
KERNELS := $(VENV)/.kernels
LARK   := lark==1.3.1
export MUJOCO_GL ?= egl

.PHONY: setup sim test lint bench clean mona compiler bytecode

setup: mona compiler $(STAMP) $(KERNELS) bytecode

mona:
	@command -v mona >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing MONA (Debian package mona) ..."; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mona) >/dev/null; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mona) >/dev/null; \
	  else \
	    echo "MONA is missing and cannot be installed without root. Run:"; \
	    echo "    sudo apt-get install -y mona"; exit 1; \
	  fi; }
	@command -v mona >/dev/null 2>&1 || { echo "MONA install failed. Run: sudo apt-get install -y mona"; exit 1; }

compiler:
	@command -v cc >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing a C compiler (Debian package gcc) ..."; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc) >/dev/null; \
	  else \
	    echo "No C compiler (cc) for the estimators' kernels. Run:"; \
	    echo "    sudo apt-get install -y gcc"; exit 1; \
	  fi; }
	@$(PYTHON) -c "import os, sysconfig; assert os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
	  2>/dev/null || { echo "$(PYTHON) has no C headers (Python.h) to build the kernels with. Run:"; \
	  echo "    sudo apt-get install -y python3-dev"; exit 1; }

$(STAMP): requirements.txt setup.py
	@echo "Setting up $(VENV): the pinned packages of requirements.txt (ROS 2 wheels, MuJoCo, Ray; quiet, a few minutes the first time) ..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --force-reinstall --no-deps $(LARK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -c "import lark, ltlf2dfa.parser.ltlf, rosidl_parser.parser, rclpy, mujoco, rosbags, ray; assert lark.__version__ >= '1.1.5', lark.__version__"
	touch $(STAMP)

# `pip install -e .` builds the kernels once; an edit of their source rebuilds them here
$(KERNELS): $(STAMP) safety_monitor/grounding/_geomath.c
	$(PY) setup.py -q build_ext --inplace
	touch $(KERNELS)

# The package's bytecode, as pip compiles an installed package's: where PYTHONDONTWRITEBYTECODE is set (many
# containers), every process (each node, Ray worker, test subprocess) would otherwise compile it again, about
# 0.2 s of CPU apiece. Only sources changed since the last run are compiled again.
bytecode:
	@$(PY) -m compileall -q safety_monitor

sim: setup
	$(VENV)/bin/safety-monitor sim $(ARGS)

# The suite runs on every CPU (pytest-xdist; TEST_WORKERS=0 runs it in this process), each worker on a ROS
# domain of its own (test/conftest.py); with worksteal, a worker that runs out takes tests from the other's queue.
TEST_WORKERS ?= auto
test: setup
	$(PY) -m pytest -q test -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Static checks (ruff.toml, setup.cfg [mypy]): all three run, so one failing does not hide the others.
lint: setup
	@status=0; \
	echo "ruff check"; $(VENV)/bin/ruff check safety_monitor test benchmarks || status=1; \
	echo "ruff format --check"; $(VENV)/bin/ruff format --check safety_monitor test benchmarks || status=1; \
	echo "mypy"; $(VENV)/bin/mypy || status=1; \
	exit $$status

bench: setup
	$(PY) benchmarks/bench_monitor.py

clean:
	rm -rf $(VENV) build *.egg-info safety_monitor/grounding/*.so
	find safety_monitor -name __pycache__ -prune -exec rm -rf {} +
