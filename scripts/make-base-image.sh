#!/bin/bash
# Makes a Debian trixie base image from Debian's archive, for machines that
# cannot pull debian:trixie-slim (no Docker Hub). Real users keep the default.
#   scripts/make-base-image.sh [NAME]     (default: imd-box-base:trixie)
set -euo pipefail

name=${1:-imd-box-base:trixie}
if docker image inspect "$name" >/dev/null 2>&1; then
  echo "base image $name already exists"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "debootstrap trixie (minbase) into $root ..."
debootstrap --variant=minbase trixie "$root" >"$root.log" 2>&1 \
  || { tail -20 "$root.log" >&2; echo "debootstrap failed (log above)" >&2; exit 1; }
rm -f "$root.log"
# Like debian:trixie-slim: no downloaded .debs, package lists, docs or man pages.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
# debian:trixie-slim's apt setting: downloaded .debs never stay in a layer.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
tar -C "$root" -c . | docker import - "$name"
echo "made base image $name"
