#!/bin/bash
# Refreshes seccomp/docker-default.json from Debian trixie's
# golang-github-docker-docker-dev package (fetched with apt-get inside the
# trixie base image), then regenerates seccomp.json.
#   seccomp/fetch-upstream.sh [BASE_IMAGE]   (default: debian:trixie-slim)
set -euo pipefail
cd "$(dirname "$0")"
base=${1:-debian:trixie-slim}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
docker run --rm -v "$out:/out" "$base" bash -c '
  set -e
  apt-get update -qq >/dev/null
  cd /tmp && apt-get download -qq golang-github-docker-docker-dev
  dpkg-deb -x golang-github-docker-docker-dev_*.deb x
  cp x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json /out/
  ls golang-github-docker-docker-dev_*.deb >/out/deb'
cp "$out/default.json" docker-default.json
echo "docker-default.json from $(cat "$out/deb")"
python3 generate.py
