# Shared by scripts/image and scripts/release-check (sourced, not run): the
# release archive, a minimal Debian root with no Swift in it, and a container
# engine.

release_say() { echo "${release_name:-release}: $*" >&2; }

# release_apt PACKAGE… — installs Debian packages (root only).
release_apt() {
  if [ "$(id -u)" -ne 0 ]; then
    release_say "missing $*; run as root once, or: sudo apt-get install -y $*"
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# release_archive [PATH] — prints the archive to use: PATH, else the one
# scripts/package makes (a no-op build when nothing changed).
release_archive() {
  if [ -n "${1:-}" ]; then
    [ -f "$1" ] || { release_say "no archive at $1"; exit 1; }
    echo "$1"
  else
    scripts/package | tail -n 1
  fi
}

# The root: Debian bookworm's minbase variant plus only ca-certificates (APNs's
# server certificate chains to the USERTrust roots they hold) and tzdata (the
# time zones of registrations), about 220 MB and 70 s to make. Made once and
# kept (as root: /var/tmp; $HERALD_RELEASE_ROOT elsewhere); the tests copy it.
release_root_packages="ca-certificates,tzdata"
release_suite=bookworm
release_mirror=${HERALD_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# release_root — prints the path of the kept root, making it when missing.
release_root() {
  local root=${HERALD_RELEASE_ROOT:-/var/tmp/herald-root-$release_suite}
  local stamp="$release_suite minbase $release_root_packages"
  if [ -f "$root/.herald-root" ] && [ "$(cat "$root/.herald-root")" = "$stamp" ]; then
    echo "$root"
    return
  fi
  [ "$(id -u)" -eq 0 ] || { release_say "making a Debian root needs root (debootstrap)"; exit 1; }
  command -v debootstrap >/dev/null 2>&1 || release_apt debootstrap
  release_say "making a minimal Debian root in $root (debootstrap, about a minute)"
  rm -rf --one-file-system "$root.partial"
  debootstrap --variant=minbase --include="$release_root_packages" "$release_suite" "$root.partial" "$release_mirror" >&2
  echo "$stamp" >"$root.partial/.herald-root"
  rm -rf --one-file-system "$root"
  mv "$root.partial" "$root"
  echo "$root"
}

# release_engine — prints the container engine's command with the options
# this kind of machine needs: podman (Debian's, installed when neither it nor
# a docker with a running daemon is there), or docker.
release_engine() {
  if command -v podman >/dev/null 2>&1; then
    :
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    echo docker
    return
  else
    release_apt podman runc
  fi
  # crun refuses some sandboxes' cgroup layout, runc runs; a RUN step builds
  # with chroot isolation where user namespaces are not allowed.
  if command -v runc >/dev/null 2>&1; then
    echo "podman --runtime runc"
  else
    echo podman
  fi
}

# The limits a container asks for by default cannot be raised in some sandboxes.
release_run_limits="--ulimit nofile=20000:20000 --ulimit nproc=32768:32768"
