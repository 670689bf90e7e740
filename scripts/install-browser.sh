#!/usr/bin/env bash
# The browser the report tests drive: Debian's chromium and CJK fonts (so Chinese
# renders in screenshots). Nothing downloads a browser build: no `playwright install`.
# Needs root and apt (CI runs as root). Then: TETHER_REQUIRE_BROWSER=1 python -m pytest tests/report
set -euo pipefail
if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
