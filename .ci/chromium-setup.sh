#!/usr/bin/env bash
# .ci/chromium-setup.sh -- install Debian's headless-capable Chromium, which
# tests/unit/release/test_report_html.py uses to render the release report.
# Idempotent: does nothing when a chromium binary is already on PATH.
#   bash .ci/chromium-setup.sh
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium-setup: $(chromium --version 2>/dev/null || chromium-browser --version 2>/dev/null) already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be stale or missing in a fresh container; refresh them once before installing.
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium
chromium --version
