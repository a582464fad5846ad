#!/usr/bin/env bash
# Builds douctl in release mode and installs the binary, the man page and the shell
# completions to their conventional places; `uninstall` removes them again.
#
#   scripts/install.sh                      # PREFIX=/usr/local
#   PREFIX=$HOME/.local scripts/install.sh
#   scripts/install.sh uninstall
#   DESTDIR=/tmp/stage scripts/install.sh   # for packaging
#   DOUCTL_BINARY=path scripts/install.sh   # install this binary instead of building one
#   DOUCTL_BUILD_LOCK_WAIT=SECONDS          # how long to wait for another SwiftPM build (600)
set -euo pipefail
cd "$(dirname "$0")/.."

# Another SwiftPM process building in .build (an editor, a `swift test`) holds its lock,
# and `swift build` would wait for it without end or a word where `| tail` hides it.
# SwiftPM 6 takes flock(2) on a file in the temporary directory named after the build
# path (/work/x/.build -> $TMPDIR/_work_x_.build.lock) and writes its PID in .build/.lock;
# older ones lock .build/.lock itself. Wait here instead, saying for what, for a bound.
build_lock_held() {
  local file
  for file in "$@"; do
    [ -e "$file" ] || continue
    flock -n "$file" true 2>/dev/null || return 0
  done
  return 1
}

wait_for_other_build() {
  command -v flock >/dev/null 2>&1 || return 0   # cannot tell (no util-linux): let swift build say
  local bound=${DOUCTL_BUILD_LOCK_WAIT:-600}
  case "$bound" in ''|*[!0-9]*) echo "install.sh: DOUCTL_BUILD_LOCK_WAIT must be a number of seconds, not '$bound'" >&2; exit 2 ;; esac
  local build; build="$(pwd -P)/.build"
  local temporary=${TMPDIR:-/tmp}
  local locks=("${temporary%/}/${build//\//_}.lock" "$build/.lock")
  build_lock_held "${locks[@]}" || return 0
  local holder; holder=$(head -c 20 "$build/.lock" 2>/dev/null | tr -cd '0-9' || true)
  local who="another SwiftPM build${holder:+ (pid $holder)}"
  echo "install.sh: waiting for $who to finish: it holds the lock on $build (up to ${bound}s; DOUCTL_BUILD_LOCK_WAIT sets it)" >&2
  echo "install.sh: to install without waiting, give a binary: DOUCTL_BINARY=.build/release/douctl scripts/install.sh (the one already built), or build one apart: swift build -c release --scratch-path .build-install && DOUCTL_BINARY=.build-install/release/douctl scripts/install.sh" >&2
  local deadline=$((SECONDS + bound))
  while build_lock_held "${locks[@]}"; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "install.sh: gave up after ${bound}s: $who still holds the lock on $build; nothing was installed (let it finish or stop it, then run scripts/install.sh again; or install a binary: DOUCTL_BINARY=PATH scripts/install.sh)" >&2
      exit 1
    fi
    sleep 1
  done
}

prefix=${PREFIX:-/usr/local}
root=${DESTDIR:-}
bin="$root$prefix/bin"
man="$root$prefix/share/man/man1"
bash_dir="$root$prefix/share/bash-completion/completions"
zsh_dir="$root$prefix/share/zsh/site-functions"
fish_dir="$root$prefix/share/fish/vendor_completions.d"

files=("$bin/douctl" "$man/douctl.1" "$bash_dir/douctl" "$zsh_dir/_douctl" "$fish_dir/douctl.fish")

case "${1:-install}" in
  install)
    binary=${DOUCTL_BINARY:-}
    if [ -z "$binary" ]; then
      wait_for_other_build
      # --disable-local-rpath: no $ORIGIN in the RUNPATH, so no library beside the installed
      # binary is ever loaded in place of the system's (issue 39).
      swift build -c release --disable-local-rpath --product douctl
      binary=.build/release/douctl
    fi
    install -d "$bin" "$man" "$bash_dir" "$zsh_dir" "$fish_dir"
    install -m 755 "$binary" "$bin/douctl"
    install -m 644 man/douctl.1 "$man/douctl.1"
    install -m 644 completions/douctl.bash "$bash_dir/douctl"
    install -m 644 completions/_douctl "$zsh_dir/_douctl"
    install -m 644 completions/douctl.fish "$fish_dir/douctl.fish"
    printf 'installed %s\n' "${files[@]}"
    ;;
  uninstall)
    rm -f "${files[@]}"
    printf 'removed %s\n' "${files[@]}"
    ;;
  *)
    echo "usage: scripts/install.sh [install|uninstall]" >&2
    exit 2
    ;;
esac
