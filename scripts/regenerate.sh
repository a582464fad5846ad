#!/usr/bin/env bash
# Regenerates the checked-in generated files (completions, man page) from a debug build;
# GeneratedFilesTests fails when they drift.
set -euo pipefail
cd "$(dirname "$0")/.."
douctl=${DOUCTL_BINARY:-.build/debug/douctl}
"$douctl" completion bash > completions/douctl.bash
"$douctl" completion zsh > completions/_douctl
"$douctl" completion fish > completions/douctl.fish
"$douctl" __man > man/douctl.1
