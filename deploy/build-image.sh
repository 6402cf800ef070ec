#!/usr/bin/env bash
# Builds the feedmail container image (deploy/Containerfile) from scratch:
# compiles a static binary on this machine, gathers its CA certificates and
# time zone data into a build context, and builds with buildah (or the tool
# named in BUILDER: podman, docker).
#
#   deploy/build-image.sh [TAG]          # TAG defaults to localhost/feedmail:dev
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-localhost/feedmail:dev}"
builder="${BUILDER:-buildah}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT

CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/feedmail" ./cmd/feedmail
cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
cp -a /usr/share/zoneinfo "$ctx/zoneinfo"
mkdir -p "$ctx/state" "$ctx/var/lib"
cp deploy/Containerfile "$ctx/Containerfile"

case "$builder" in
  # Containers cannot run on every build machine: chroot isolation needs
  # none, and a FROM scratch image has no RUN step anyway.
  buildah) buildah bud --isolation chroot --layers=false -f "$ctx/Containerfile" -t "$tag" "$ctx" ;;
  *) "$builder" build -f "$ctx/Containerfile" -t "$tag" "$ctx" ;;
esac
