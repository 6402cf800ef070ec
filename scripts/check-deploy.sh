#!/usr/bin/env bash
# Checks what an operator installs with (deploy/), as CI does:
#
#   1. builds the container image (deploy/build-image.sh, buildah) and
#      checks it: the files it must hold, its user, entry point and
#      settings, and that its binary runs in the image's own root (chroot,
#      as the image's user: help, then migrate into the state folder);
#   2. verifies the systemd unit with systemd-analyze verify (ExecStart
#      pointed at that binary, since verify wants an executable there; any
#      complaint fails) and fails if its exposure score rises over 2.0 of 10;
#   3. reads compose.yaml (Postgres and feedmail).
#
# Needs root (buildah mount, chroot), buildah and systemd-analyze.
set -euo pipefail
cd "$(dirname "$0")/.."
tag="localhost/feedmail:check-$$"
tmp="$(mktemp -d)"
ctr=""
cleanup() {
  if [ -n "$ctr" ]; then buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true; fi
  buildah rmi "$tag" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "check-deploy: $*" >&2; exit 1; }

echo "-- image"
deploy/build-image.sh "$tag" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "image build failed"; }
ctr="$(buildah from "$tag")"
root="$(buildah mount "$ctr")"
for f in usr/local/bin/feedmail etc/ssl/certs/ca-certificates.crt usr/share/zoneinfo/Europe/Paris \
  usr/share/zoneinfo/America/New_York; do
  [ -s "$root/$f" ] || fail "the image has no /$f"
done
[ "$(stat -c %u:%g "$root/var/lib/feedmail")" = "65532:65532" ] || fail "/var/lib/feedmail is not the image user's"
[ "$(stat -c %u "$root/var/lib")" = "0" ] || fail "/var/lib should stay root's"
if readelf -l "$root/usr/local/bin/feedmail" | grep -q INTERP; then fail "the binary is not static"; fi
got="$(buildah inspect --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$tag")"
[ "$got" = '65532:65532 [/usr/local/bin/feedmail] [serve]' ] || fail "image config: $got"
buildah inspect --format '{{.OCIv1.Config.Env}}' "$tag" | grep -q 'FEEDMAIL_DATABASE_URL=sqlite:///var/lib/feedmail/feedmail.db' ||
  fail "the image does not set FEEDMAIL_DATABASE_URL"
crt="$(command -v chroot)"
env -i "$crt" --userspec=65532:65532 "$root" /usr/local/bin/feedmail help migrate >/dev/null ||
  fail "the binary does not run in the image's root"
env -i FEEDMAIL_DATABASE_URL=sqlite:///var/lib/feedmail/feedmail.db \
  "$crt" --userspec=65532:65532 "$root" /usr/local/bin/feedmail migrate >"$tmp/migrate.log" 2>&1 ||
  { cat "$tmp/migrate.log"; fail "migrate failed in the image's root"; }
echo "image ok: $(du -sh "$root" | cut -f1) unpacked; static binary, CA certificates, zone data, migrate as 65532"

echo "-- systemd unit"
cp "$root/usr/local/bin/feedmail" "$tmp/feedmail"
sed "s#^ExecStart=/usr/local/bin/feedmail #ExecStart=$tmp/feedmail #" deploy/systemd/feedmail.service >"$tmp/feedmail.service"
grep -q "^ExecStart=$tmp/feedmail serve" "$tmp/feedmail.service" || fail "no ExecStart=/usr/local/bin/feedmail serve in the unit"
# verify exits 0 on a mistyped key or value, only saying so: any word from
# it fails the check.
systemd-analyze verify "$tmp/feedmail.service" >"$tmp/verify.log" 2>&1 || true
if [ -s "$tmp/verify.log" ]; then cat "$tmp/verify.log"; fail "systemd-analyze verify complained about the unit"; fi
echo "systemd-analyze verify: no complaint"
systemd-analyze security --offline=true --threshold=20 "$tmp/feedmail.service" | tail -n1

echo "-- compose"
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - deploy/compose.yaml <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
s = c["services"]
assert set(s) == {"postgres", "feedmail"}, s
assert s["feedmail"]["depends_on"]["postgres"]["condition"] == "service_healthy"
assert s["feedmail"]["environment"]["FEEDMAIL_DATABASE_URL"].startswith("postgres://")
print("compose ok: services", ", ".join(sorted(s)))
PY
else
  echo "compose: python3-yaml absent, not read"
fi
