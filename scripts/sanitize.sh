#!/usr/bin/env bash
# The whole test suite under AddressSanitizer (with LeakSanitizer) and ThreadSanitizer.
#
#   scripts/sanitize.sh                 both, one after the other
#   scripts/sanitize.sh address|thread  one of them
#   scripts/sanitize.sh thread --filter 'upload'   extra arguments go to `swift test`
#
# Each uses its own scratch path (.build-asan, .build-tsan; git-ignored) so the normal
# .build is left alone. The douctl binaries the end-to-end tests run are built with the same
# sanitizer, so a leak or race in a douctl process shows up as that test's failure (its
# stderr is no longer one line, its exit status is no longer the expected one).
#
# Suppressions (scripts/sanitizers/*.supp) name only reports that come from the Swift runtime,
# Foundation or libc rather than from douctl; each entry says why.
# Environment: SANITIZE_NICE (default 19), SWIFT (default swift).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
swift=${SWIFT:-swift}
nice_level=${SANITIZE_NICE:-19}
which=${1:-all}
[ $# -gt 0 ] && shift

run() {
  local sanitizer=$1; shift
  local scratch=$root/.build-${sanitizer:0:1}san
  echo "sanitize: swift test --sanitize=$sanitizer (scratch path $scratch)" >&2
  local started=$SECONDS status=0
  nice -n "$nice_level" "$swift" build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >&2 || return $?
  nice -n "$nice_level" "$swift" test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" "$@" || status=$?
  echo "sanitize: $sanitizer: exit $status after $((SECONDS - started))s" >&2
  return $status
}

# LeakSanitizer runs at the exit of every process: the test runner and each douctl it starts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=0:check_initialization_order=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/sanitizers/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$root/scripts/sanitizers/tsan.supp:halt_on_error=0:second_deadlock_stack=1}
# The end-to-end tests give douctl a controlled environment; these variables reach it
# because Tests/DouctlTests/Support passes the sanitizer options through.

failed=0
case "$which" in
  address) run address "$@" || failed=1 ;;
  thread) run thread "$@" || failed=1 ;;
  all) run address "$@" || failed=1; run thread "$@" || failed=1 ;;
  *) echo "usage: scripts/sanitize.sh [address|thread|all] [swift test arguments...]" >&2; exit 2 ;;
esac
exit $failed
