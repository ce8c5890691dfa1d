# Fleet Portal: the two commands of the README, and the steps behind them.
#   make run    set up everything, start the emulator and the portal
#   make test   install what the tests need, run ruff, mypy and pytest (the suites that
#               use the emulator twice: its normal answers, then only what the spec promises)
#   make soak   the production shape (deploy/) under load and faults for SOAK_SECONDS

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
PORT ?= 8000
# The emulator's and the demo identity provider's ports follow the portal's, so that two
# portals run side by side (make run PORT=8100: 8101 and 8102).
EMULATOR_PORT ?= $(shell echo $$(($(PORT) + 1)))
IDP_PORT ?= $(shell echo $$(($(PORT) + 2)))
CHROMIUM ?= /usr/bin/chromium
PYTEST_ARGS ?=
SOAK_SECONDS ?= 600
SOAK_HOSTS ?= 1
FLAKE_RUNS ?= 5
FLAKE_SOAKS ?= 5

# Python 3.13 (.python-version): pyenv's shim when present, else python3.13 on PATH.
PYTHON313 := $(shell (pyenv which python3.13 2>/dev/null || command -v python3.13) | head -n 1)

.PHONY: help run test soak flake-hunt lint typecheck pytest pytest-minimal browser nginx redis prometheus idp setup messages screenshots clean

help:
	@echo "make run    set up and start the emulator and the portal at http://127.0.0.1:$(PORT)/"
	@echo "           (PORT=8000; the emulator at EMULATOR_PORT=PORT+1, the demo identity provider at IDP_PORT=PORT+2)"
	@echo "make test   install test tools (and Chromium) and run ruff, mypy and pytest"
	@echo "make soak   deploy/ on loopback under mixed load and faults (SOAK_SECONDS=600, SOAK_HOSTS=1)"
	@echo "make flake-hunt   the suite 5 times on SQLite and 5 on PostgreSQL + Redis in random orders, then 5 soaks, one core kept busy (hours; not CI)"
	@echo "make screenshots   the README's pictures (docs/screenshots/) from a demo of their own"

$(PY):
	@test -n "$(PYTHON313)" || { echo "Python 3.13 is needed (see .python-version): install it, e.g. 'pyenv install 3.13'"; exit 1; }
	$(PYTHON313) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==26.3

$(VENV)/.runtime: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@ $(VENV)/.runtime

# A local .env with a fresh secret key, written once and never committed.
.env: | $(PY)
	@$(PY) -c "import secrets; print('DJANGO_SECRET_KEY=' + secrets.token_urlsafe(50)); print('DEBUG=True'); print('ALLOWED_HOSTS=localhost,127.0.0.1')" > $@
	@echo "Wrote .env with a new DJANGO_SECRET_KEY."

setup: $(VENV)/.runtime .env
	$(PY) manage.py migrate --no-input
	$(PY) manage.py collectstatic --no-input -v 0
	@echo "Demo users:"
	@$(PY) manage.py demo_users

run: setup idp
	$(PY) manage.py run_dev --port $(PORT) --emulator-port $(EMULATOR_PORT) --idp-port $(IDP_PORT)

# The README's pictures (docs/screenshots/), taken from a demo of their own on spare ports.
screenshots: $(VENV)/.dev .env browser
	$(PY) -m docs.screenshots

# apt-get waits up to ten minutes for Debian's package lock while another install holds it
# (two `make test` at once, unattended-upgrades) instead of failing at once. The option is
# dpkg's lock only: `apt-get update` has none for the package lists' lock (apt 2.6), so
# while another update holds that it is tried again every 5 s, for as long.
APT_LOCK_TIMEOUT := 600
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT) install -y -qq
APT_UPDATE := waited=0; \
	while ! errors=$$(LC_ALL=C apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT) update -qq 2>&1 >/dev/null); do \
	  if [[ $$errors != *"Could not get lock"* ]] || (( waited >= $(APT_LOCK_TIMEOUT) )); then \
	    echo "$$errors" >&2; exit 1; \
	  fi; \
	  (( waited )) || echo "Another apt-get is updating the package lists: waiting for it…"; \
	  sleep 5; waited=$$((waited + 5)); \
	done

# Debian packages the tests need, installed when missing and we are root; otherwise
# the tests that need them say loudly that they are skipped (and fail under CI=true).
# $(call debian_package,PACKAGE,PROGRAM,FOR WHAT)
define debian_package
	@if [ ! -x "$(2)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing $(1) (Debian package) for $(3)…"; \
	    $(APT_UPDATE); \
	    $(APT_INSTALL) $(1) >/dev/null; \
	  else \
	    echo "!!! $(2) is missing and cannot be installed here: $(3) will be skipped."; \
	  fi; \
	fi
endef

# The same for a package whose daemon the tests start on their own: installed without
# its Recommends, the daemon neither started (a policy-rc.d that refuses, for the time
# of the install, unless the machine has one already) nor enabled for the next boot.
# $(call debian_package_without_service,PACKAGE,PROGRAM,FOR WHAT,SERVICE)
define debian_package_without_service
	@if [ ! -x "$(2)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing $(1) (Debian package, its $(4) service left stopped) for $(3)…"; \
	    if [ ! -e /usr/sbin/policy-rc.d ]; then \
	      trap 'rm -f /usr/sbin/policy-rc.d' EXIT; \
	      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; \
	    fi; \
	    $(APT_UPDATE); \
	    $(APT_INSTALL) --no-install-recommends $(1) >/dev/null; installed=$$?; \
	    if [ -d /run/systemd/system ]; then systemctl disable --now -q $(4) 2>/dev/null; fi; \
	    deb-systemd-helper disable $(4).service 2>/dev/null; \
	    if [ -x /etc/init.d/$(4) ]; then update-rc.d $(4) disable >/dev/null 2>&1; fi; \
	    exit $$installed; \
	  else \
	    echo "!!! $(2) is missing and cannot be installed here: $(3) will be skipped."; \
	  fi; \
	fi
endef

# Browser tests drive Debian's Chromium.
browser:
	$(call debian_package,chromium,$(CHROMIUM),the browser tests)

# The deploy tests put Debian's nginx in front of gunicorn (deploy/nginx/).
nginx:
	$(call debian_package,nginx,/usr/sbin/nginx,the deploy tests)

# The soak runs a redis-server of its own (and a PostgreSQL cluster, from the machine's
# postgresql package).
redis:
	$(call debian_package,redis-server,/usr/bin/redis-server,the soak)

# Prometheus' promtool checks deploy/prometheus (its configuration, alert rules and their
# unit tests); the soak starts a prometheus of its own on loopback. The package's own
# daemon (a scraper on :9090, node-exporter beside it) would only be in the way.
prometheus:
	$(call debian_package_without_service,prometheus,/usr/bin/promtool,the monitoring tests,prometheus)

# nginx → gunicorn (4 workers) → its own PostgreSQL and Redis, the worker and the emulator,
# under locust's mixed traffic, slowloris and injected faults (bench/soak.py). Its last
# line: `soak: R requests, E unexplained 5xx, L lost deliveries, S stuck lookups`.
soak: $(VENV)/.dev nginx redis prometheus
	$(PY) -m bench.soak --seconds $(SOAK_SECONDS) --hosts $(SOAK_HOSTS)

# The whole suite FLAKE_RUNS times on each database in random orders, then FLAKE_SOAKS soaks,
# while a CPU hog keeps one core busy (bench/flake_hunt.py): hours, so not part of CI.
flake-hunt: $(VENV)/.dev idp browser nginx redis prometheus
	$(PY) -m bench.flake_hunt --runs $(FLAKE_RUNS) --soaks $(FLAKE_SOAKS)

# The organisation's demo identity provider (idp/: Node's oidc-provider, as locked in
# idp/package-lock.json), for the tests and `make run`. Without npm the identity-provider
# tests say loudly that they are skipped (and this fails under CI=true), and `make run`
# goes on with the local demo logins only.
idp: idp/node_modules/.installed

idp/node_modules/.installed: idp/package.json idp/package-lock.json
	@if command -v npm >/dev/null; then \
	  npm ci --prefix idp --no-audit --no-fund --loglevel=error && touch $@; \
	else \
	  echo "!!! npm is missing: the identity-provider tests will be skipped"; \
	  if [ "$$CI" = true ]; then exit 1; fi; \
	fi

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy .

pytest: $(VENV)/.dev
	$(BIN)/pytest $(PYTEST_ARGS)

# Every suite that talks to the emulator, again with the emulator answering exactly what
# the spec shows (emulator/README.md, "Minimal mode"): the client must need nothing more.
# The accessibility sweep (axe over every page, two languages, two widths: two minutes)
# runs once, in `pytest`: the portal's markup is the same whichever way the emulator answers.
MINIMAL_SUITES := tests/api tests/services tests/views tests/browser tests/admin tests/commands tests/webhooks tests/test_after_response.py
pytest-minimal: $(VENV)/.dev
	@echo "=== The suites that use the emulator, the emulator in minimal mode ==="
	$(BIN)/pytest --emulator-mode=minimal $(MINIMAL_SUITES) \
	  --deselect tests/browser/test_accessibility.py::test_every_page_has_no_axe_violation $(PYTEST_ARGS)

test: $(VENV)/.dev idp browser nginx prometheus lint typecheck pytest pytest-minimal

# Extract new strings into locale/pt_BR/LC_MESSAGES/django.po; translate them there, then
# `make messages` again to compile (a test fails while a string is untranslated or stale).
messages: $(VENV)/.dev
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py makemessages -l pt_BR --no-obsolete \
	  --ignore=.venv --ignore=emulator --ignore=tests --ignore=bench --ignore=staticfiles
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py compilemessages -l pt_BR --ignore=.venv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache staticfiles idp/node_modules
