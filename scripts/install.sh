#!/usr/bin/env bash
# Builds douctl in release mode and installs the binary, the man page and the shell
# completions to their conventional places; `uninstall` removes them again.
#
#   scripts/install.sh                      # PREFIX=/usr/local
#   PREFIX=$HOME/.local scripts/install.sh
#   scripts/install.sh uninstall
#   DESTDIR=/tmp/stage scripts/install.sh   # for packaging
#   DOUCTL_BINARY=path scripts/install.sh   # install this binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."

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
      swift build -c release --product douctl
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
