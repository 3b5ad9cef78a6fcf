#!/bin/sh
# Builds a local stand-in for the public base image (node:20-bookworm-slim) from this machine's own
# files, for machines that reach no registry (the image tests, test/e2e/containers/):
#
#   installer/docker/local-base.sh            prints the image's name, e.g. localhost/ferry-base-test:1a2b3c4d5e6f
#
# The image is FROM scratch: this machine's `node`, a POSIX shell (dash) and the few tools the
# Dockerfile and the entry point use, with the shared libraries `ldd` lists for them, in Debian's
# merged-/usr layout. Native modules (better-sqlite3, isolated-vm) need nothing more than Node.js
# does. The name's tag is a hash of this script, the Node.js version and the tools: an image that
# already exists is reused. PODMAN overrides the podman command line.
set -eu

PODMAN=${PODMAN:-"podman --runtime runc --cgroup-manager=cgroupfs"}
TOOLS="dash mkdir chown chmod cat rm ln ls id env grep sleep"

NODE=$(readlink -f "$(command -v node)")
paths() {
  for t in $TOOLS; do
    readlink -f "$(command -v "$t")"
  done
}
HASH=$({
  cat "$0"
  "$NODE" --version
  paths
} | sha256sum | cut -c1-12)
TAG="localhost/ferry-base-test:$HASH"

if $PODMAN image exists "$TAG"; then
  echo "$TAG"
  exit 0
fi

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/ferry-base.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT INT TERM

# Debian's merged /usr: /bin, /lib, /lib64 and /sbin are links into /usr.
mkdir -p "$ROOT/usr/bin" "$ROOT/usr/sbin" "$ROOT/usr/lib" "$ROOT/usr/lib64" "$ROOT/usr/local/bin" \
  "$ROOT/etc" "$ROOT/root" "$ROOT/tmp" "$ROOT/var/tmp" "$ROOT/dev" "$ROOT/proc" "$ROOT/sys" "$ROOT/run"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOT/$d"; done
chmod 1777 "$ROOT/tmp" "$ROOT/var/tmp"

# A file at the same path inside (links resolved: the image holds the files themselves).
copy() {
  case "$1" in
    /bin/* | /sbin/* | /lib/* | /lib64/*) to="$ROOT/usr$1" ;;
    *) to="$ROOT$1" ;;
  esac
  mkdir -p "$(dirname "$to")"
  cp -L "$1" "$to"
}
libs() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}

# Node.js where the official image has it.
cp "$NODE" "$ROOT/usr/local/bin/node"
for lib in $(libs "$NODE"); do copy "$lib"; done
for bin in $(paths); do
  copy "$bin"
  for lib in $(libs "$bin"); do copy "$lib"; done
done
ln -sf dash "$ROOT/usr/bin/sh"

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\n' >"$ROOT/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$ROOT/etc/nsswitch.conf"

tar -C "$ROOT" -cf - . | $PODMAN import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --message "ferry local base: $(hostname) node $("$NODE" --version)" \
  --quiet - "$TAG" >/dev/null
echo "$TAG"
