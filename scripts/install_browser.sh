#!/usr/bin/env bash
# Installs what tests/test_browser.py needs: Debian's Chromium (the system
# browser, launched by path; Playwright never downloads one). Idempotent:
# does nothing when Chromium is already there. CI runs it before the tests.
#
#   scripts/install_browser.sh          # as root (CI containers), or with sudo
#
# The Python side (the `playwright` package, which brings its own driver) is
# installed with the dev extra: pip install -e '.[dev]'. Never run
# `playwright install`: the test uses /usr/bin/chromium.
set -euo pipefail

CHROMIUM="${BATCHLAB_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ]; then
  echo "install_browser: Chromium already present at $CHROMIUM"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here; install Chromium yourself and set BATCHLAB_CHROMIUM=/path/to/chromium" >&2
  exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install_browser: need root (or sudo) to run apt-get install chromium" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium

if [ ! -x "$CHROMIUM" ]; then
  echo "install_browser: apt-get finished but $CHROMIUM is missing (Ubuntu ships chromium as a snap; use Debian's package or set BATCHLAB_CHROMIUM)" >&2
  exit 1
fi
echo "install_browser: installed $("$CHROMIUM" --version 2>/dev/null | tail -1)"
