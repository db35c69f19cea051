# The two commands of the README's quick start. Each sets the machine up first
# (.venv, the project with its dev extra, Icarus Verilog) and then does its job.
.PHONY: demo test test-slow setup

setup:
	@bash .ci/setup.sh

# The main job.
demo: setup
	.venv/bin/hw-models demo

# The whole test suite (pytest's own exit status: "no tests collected" fails too), in
# TEST_JOBS worker processes (pytest-xdist; 2 by default, CI's core count; TEST_JOBS=0 runs
# it in this process).
TEST_JOBS ?= 2
test: setup
	.venv/bin/python -m pytest -n $(TEST_JOBS)

# Every slow check (@pytest.mark.slow; CI runs a sixth of them per commit, .ci/run).
test-slow: setup
	.venv/bin/python -m pytest -n $(TEST_JOBS) -m slow
