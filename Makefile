# Kassa: `make run` starts everything on the embedded default; `make test` runs the suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Every dependency, runtime and dev, pinned with hashes (uv pip compile); `make lock` writes it again.
LOCK := requirements/lock.txt
UV_VERSION := 0.13.8

.PHONY: install lock audit run test lint bench clean hardhat tronweb tron-devnet ton-devnet-npm ton-devnet solana-devnet near-devnet

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# After changing dependencies in pyproject.toml: pin them all again (then `make install`).
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 -o $(LOCK)

# The lock is complete, hashed, matches pyproject and this environment; with KASSA_ADVISORY_DB set, no
# pinned version has a known advisory (scripts/audit.py).
audit: install
	$(BIN)/python scripts/audit.py --lock $(LOCK)

run: install
	exec ./scripts/run.sh

test: install
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python manage.py makemigrations --check --dry-run
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

bench: install
	$(BIN)/python -m tools.bench

clean:
	rm -rf $(VENV) var/broker var/staticfiles

# hardhat@2 for the EVM smoke tests against a real node (tests/hardhat_node.py), pinned by tests/hardhat.
hardhat:
	[ -x tests/hardhat/node_modules/.bin/hardhat ] || npm ci --prefix tests/hardhat --no-audit --no-fund --loglevel=error

# TronWeb for the golden vectors of the TRON client (chains/tron/tests), pinned by tests/tronweb.
tronweb:
	[ -f tests/tronweb/node_modules/tronweb/package.json ] || npm ci --prefix tests/tronweb --no-audit --no-fund --loglevel=error

# The TRON devnet of the tests (tests/tron_devnet: java-tron's HTTP API over an in-process EVM) on :8090,
# for trying a client by hand; it prints its accounts, keys and token, and serves until interrupted.
tron-devnet: install
	$(BIN)/python -m tests.tron_devnet --port 8090

# @ton/sandbox and its peers for the TON devnet of the tests (tests/ton_devnet), pinned by its package-lock.
ton-devnet-npm:
	[ -f tests/ton_devnet/node_modules/@ton/sandbox/package.json ] || npm ci --prefix tests/ton_devnet --no-audit --no-fund --loglevel=error

# The TON devnet of the tests (toncenter's API v2 over @ton/sandbox) on :8081, for trying a client by hand:
# the API at http://127.0.0.1:8081/api/v2, the test controls under /devnet/; serves until interrupted.
ton-devnet: ton-devnet-npm
	exec node tests/ton_devnet/server.js --port 8081

# The Solana devnet of the tests (tests/solana_devnet: Agave's JSON-RPC over LiteSVM in process) on :8899,
# for trying a client by hand; it prints its faucet's and customer's keys, and produces a slot every 400 ms.
solana-devnet: install
	$(BIN)/python -m tests.solana_devnet --port 8899

# The NEAR JSON-RPC stub of the tests (tests/near_devnet: nearcore's answer shapes over an in-process chain)
# on :3030, for trying a client by hand; blocks only on POST /devnet/produce unless --block-time is given.
near-devnet: install
	$(BIN)/python -m tests.near_devnet --port 3030 --block-time 1
