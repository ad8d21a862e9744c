# The project's commands. Each sets up what it needs: a fresh machine runs them as they are.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A bare `torch` requirement can pull a CUDA build of several GB; pin the build you want here.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
SOURCES := agent console tests benchmarks faults

.PHONY: demo test lint typecheck bench install sshd clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[pipeline,test]'
	touch $(STAMP)

install: $(STAMP)

# OpenSSH's server, for the tests marked `sshd` (they skip, saying why, where it cannot be had).
sshd:
	@if ! command -v sshd >/dev/null 2>&1 && ! test -x /usr/sbin/sshd; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null) \
	      || echo "note: could not install openssh-server; tests marked sshd will be skipped"; \
	  else echo "note: openssh-server missing and not root; tests marked sshd will be skipped"; fi; \
	fi

lint: install
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

test: install sshd lint typecheck
	$(BIN)/pytest

demo: install
	$(BIN)/eagle-console demo

bench: install
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
