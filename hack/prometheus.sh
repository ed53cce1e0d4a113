#!/usr/bin/env bash
# Makes sure Debian's prometheus package (prometheus and promtool, Go binaries linked only
# against libc) is unpacked into the user cache for the tests that run a real Prometheus
# (test/promtest), and prints the directory holding `prometheus` and `promtool` on its last line.
# The package is fetched with `apt-get download` and unpacked with `dpkg-deb -x`: nothing is
# installed system-wide and no service is started.
#
#   hack/prometheus.sh                       unpack the package if missing, print the directory
#   GPUCTL_PROMETHEUS_BIN=/dir hack/...      use another directory; nothing is downloaded
#   GPUCTL_CACHE=/some/dir hack/...          use another cache root (default
#                                            $XDG_CACHE_HOME/gpuctl, else ~/.cache/gpuctl)
#
# Quiet and idempotent when the binaries are there; concurrent runs unpack once (flock).
set -euo pipefail

# The Debian package version unpacked; bookworm's. The cache directory is named after it, so a
# new version lands beside the old one rather than over it.
PROMETHEUS_DEB_VERSION=2.42.0+ds-5+b6

have() { [ -x "$1/prometheus" ] && [ -x "$1/promtool" ]; }

if [ -n "${GPUCTL_PROMETHEUS_BIN:-}" ]; then
  if ! have "$GPUCTL_PROMETHEUS_BIN"; then
    echo "hack/prometheus.sh: GPUCTL_PROMETHEUS_BIN=$GPUCTL_PROMETHEUS_BIN holds no executable prometheus and promtool" >&2
    exit 1
  fi
  echo "$GPUCTL_PROMETHEUS_BIN"
  exit 0
fi

cache=${GPUCTL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuctl}
dir="$cache/prometheus-$PROMETHEUS_DEB_VERSION"
if have "$dir"; then
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.prometheus.lock"
flock 9
if have "$dir"; then # another run unpacked it while this one waited
  echo "$dir"
  exit 0
fi

for tool in apt-get dpkg-deb; do
  if ! command -v "$tool" >/dev/null; then
    echo "hack/prometheus.sh: $dir is missing and there is no $tool; unpack Prometheus $PROMETHEUS_DEB_VERSION's prometheus and promtool there by hand or set GPUCTL_PROMETHEUS_BIN" >&2
    exit 1
  fi
done
sudo=
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root it drops privileges to _apt,
# which must be able to write there.
chmod 0777 "$tmp"
export DEBIAN_FRONTEND=noninteractive
download() { (cd "$tmp" && apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION") >&2; }
echo ">> unpacking Debian's prometheus $PROMETHEUS_DEB_VERSION into $dir (first time only)" >&2
if ! download; then
  echo ">> apt-get download failed; running apt-get update and retrying" >&2
  $sudo apt-get update -qq >&2
  download
fi
deb=$(ls "$tmp"/prometheus_*.deb)
dpkg-deb -x "$deb" "$tmp/root"
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
cp "$tmp/root/usr/bin/prometheus" "$tmp/root/usr/bin/promtool" "$dir.tmp/"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
if ! have "$dir"; then
  echo "hack/prometheus.sh: unpacked $deb but $dir lacks prometheus or promtool" >&2
  exit 1
fi
echo "$dir"
