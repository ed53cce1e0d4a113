#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the headless-browser test of the web page
# (cmd/gpuctl-reconciler/app/httpapi/ui_browser_test.go) and prints its path on its last line.
#
#   hack/chromium.sh                 install chromium if missing (apt-get, needs root or sudo), print its path
#   GPUCTL_CHROMIUM=/path hack/...   use another binary; nothing is installed
#
# Quiet and idempotent when chromium is already there.
set -euo pipefail

chromium=${GPUCTL_CHROMIUM:-/usr/bin/chromium}
if [ -x "$chromium" ]; then
  echo "$chromium"
  exit 0
fi
if [ -n "${GPUCTL_CHROMIUM:-}" ]; then
  echo "hack/chromium.sh: GPUCTL_CHROMIUM=$chromium is not an executable" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "hack/chromium.sh: $chromium is missing and there is no apt-get; install chromium by hand" >&2
  exit 1
fi

sudo=
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
install() { $sudo apt-get install -y -qq --no-install-recommends chromium >&2; }
echo ">> installing Debian's chromium for the web page's browser test (first time only)" >&2
if ! install; then
  echo ">> apt-get install failed; running apt-get update and retrying" >&2
  $sudo apt-get update -qq >&2
  install
fi
if [ ! -x "$chromium" ]; then
  echo "hack/chromium.sh: chromium installed but $chromium is missing" >&2
  exit 1
fi
echo "$chromium"
