# The project's commands. Each sets up what it needs: a fresh machine runs them as they are.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A bare `torch` requirement can pull a CUDA build of several GB; pin the build you want here.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
SOURCES := agent console tests benchmarks faults
# Most tests wait on subprocesses, servers and terminals, so more workers than cores pays: on a
# 2-core machine 6 workers keep both cores busy. loadgroup keeps tests of one xdist_group on one worker.
PYTEST_WORKERS ?= 6
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup
# The tests start some 2,000 Python processes (agents, runners, simulators, consoles): with the
# bytecode cache each compiles the project once, not at every start (and pytest keeps its
# rewritten test modules). A shell that sets PYTHONDONTWRITEBYTECODE would switch that off.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-fast lint typecheck bench faults install system-tools clean

$(STAMP): pyproject.toml tests/trainers.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[pipeline,test]'
	$(BIN)/python -m pip install --quiet --no-deps -r tests/trainers.txt
	touch $(STAMP)

install: $(STAMP)

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

test: install system-tools lint typecheck
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
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
