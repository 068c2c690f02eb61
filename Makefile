# The two commands that matter: `make demo` and `make test` (README). Everything they need is
# set up here, on a fresh machine, from the package registries.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test lint build venv bench bench-ns3 rust-tools test-tools clean readme readme-check

demo: build
	$(VENV)/bin/mpsched compare

test: build lint test-tools
	$(CARGO) test --workspace --release
	$(PY) -m pytest -q

lint: venv rust-tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(VENV)/bin/ruff check python tests bench tools
	$(VENV)/bin/ruff format --check python tests bench tools

# Every number in README.md, measured again on this engine (tools/readme.py).
readme: build
	$(PY) tools/readme.py

readme-check: build
	$(PY) tools/readme.py --check

bench: build
	$(CARGO) bench -p mpsched-sim --bench sim
	$(VENV)/bin/mpsched bench

# Benchmarks (a) and (b) in ns-3 3.37 beside mpsched (needs `apt-get install libns3-dev`).
bench-ns3:
	bench/ns3/run.sh 3

# The extension, built in release mode into the venv (with the dev extras: pytest, ruff, ...);
# into this venv even when the caller has another one activated (maturin follows VIRTUAL_ENV).
# Then the helper programs (emulator, kernel baseline, proxy): every target/release/mpsched-*
# binary goes into the venv's bin/, where `mpsched` looks first (python/mpsched/netbin.py).
build: venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras dev -q
	$(CARGO) build --release -p mpsched-net --bins -q
	@for b in target/release/mpsched-*; do \
		[ -f "$$b" ] && [ -x "$$b" ] && install -m 755 "$$b" $(VENV)/bin/; \
	done; true

venv: $(VENV)/bin/maturin

$(VENV)/bin/maturin:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q "maturin>=1.5,<2"

rust-tools:
	@rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy

# Outside programs some tests check our output with: Wireshark's dissector reads `run --pcap`
# files (tests/python/test_pcap.py). Installed from Debian's packages when we may (root, apt);
# otherwise those tests skip and say why.
test-tools:
	@command -v tshark >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq tshark >/dev/null 2>&1 || \
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tshark >/dev/null 2>&1; }; }; } || \
		echo "tshark not installed and cannot install it here: the pcap tests will skip"

clean:
	rm -rf $(VENV) target
