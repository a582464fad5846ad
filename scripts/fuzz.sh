#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (the one the Swift toolchain ships), under
# AddressSanitizer.
#
#   scripts/fuzz.sh                  list the targets
#   scripts/fuzz.sh all [SECONDS]    run every target for SECONDS each (default 600)
#   scripts/fuzz.sh TARGET [SECONDS] run one target (default 600 seconds)
#   scripts/fuzz.sh build            only build
#
# The modules are built by SwiftPM with coverage instrumentation and ASan into .build-fuzz
# (git-ignored); each target in scripts/fuzz/targets/NAME.swift is then linked against them
# with `swiftc -sanitize=fuzzer,address`. Seeds are in scripts/fuzz/corpus/NAME (checked in,
# small); what libFuzzer learns goes to .build-fuzz/corpus/NAME, crashes to
# .build-fuzz/findings/NAME. A finding makes this script exit 1: turn the input into a
# regression test in Tests/, fix it, and rerun.
#
# Environment: FUZZ_JOBS (libFuzzer -jobs, default 1), FUZZ_NICE (default 19),
# FUZZ_FLAGS (more libFuzzer flags), SWIFT (default swift).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=$root/.build-fuzz
targets_dir=$root/scripts/fuzz/targets
swift=${SWIFT:-swift}
nice_level=${FUZZ_NICE:-19}
all_targets=(args json reply config credentials request multipart cookie retryafter)

usage() {
  echo "usage: scripts/fuzz.sh [build | all | TARGET] [SECONDS]" >&2
  echo "targets: ${all_targets[*]}" >&2
}

build_modules() {
  echo "fuzz: building the modules with coverage and AddressSanitizer in $scratch" >&2
  # Only library targets: the executable's main would clash with libFuzzer's.
  nice -n "$nice_level" "$swift" build --scratch-path "$scratch" --target DouctlCommands \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xcc -fsanitize=fuzzer-no-link,address >&2
}

build_target() {
  local name=$1
  local bin
  bin=$("$swift" build --scratch-path "$scratch" --show-bin-path)
  local out=$scratch/fuzzers/$name
  mkdir -p "$scratch/fuzzers"
  local objects=()
  # Every library module of Package.swift that the build made (not a hand-kept list: one
  # that missed the CJQ target left jq's cjq_* functions undefined at the link), and for
  # each C module its module map and headers.
  local module object modules=() c_flags=()
  local directory
  for directory in "$bin"/*.build; do
    module=$(basename "$directory" .build)
    [ -d "$root/Sources/$module" ] && [ "$module" != douctl ] || continue
    modules+=("$module")
    if [ -f "$directory/module.modulemap" ]; then
      c_flags+=(-Xcc -fmodule-map-file="$directory/module.modulemap" -I "$root/Sources/$module/include")
    fi
  done
  # Only the objects of today's sources: a file renamed or removed since the last build
  # leaves its old object behind, and linking that one fails on symbols that moved.
  for module in "${modules[@]}"; do
    if [ -f "$bin/$module.build/output-file-map.json" ]; then
      while IFS= read -r object; do objects+=("$object"); done \
        < <(sed -n 's/.*"object" *: *"\([^"]*\)".*/\1/p' "$bin/$module.build/output-file-map.json")
    else
      while IFS= read -r -d '' object; do
        [ -f "$root/Sources/$module/$(basename "${object%.o}")" ] && objects+=("$object")
      done < <(find "$bin/$module.build" -name '*.o' -print0)
    fi
  done
  # Relink only when a source or an object is newer than the fuzzer.
  if [ -x "$out" ] && [ -z "$(find "$targets_dir/$name.swift" "$targets_dir/support.swift" "${objects[@]}" -newer "$out" -print -quit)" ]; then
    return
  fi
  echo "fuzz: linking $name" >&2
  rm -f "$out"   # a failed link must not leave the last good fuzzer looking current
  nice -n "$nice_level" "$swift"c -sanitize=fuzzer,address -parse-as-library -module-name "Fuzz_$name" \
    -I "$bin/Modules" ${c_flags[@]+"${c_flags[@]}"} \
    "$targets_dir/support.swift" "$targets_dir/$name.swift" "${objects[@]}" -ldl -o "$out" 2>&1 \
    | { grep -v "Cannot export local symbol" >&2 || true; }
  [ -x "$out" ] || { echo "fuzz: could not link $name" >&2; return 1; }
}

run_target() {
  local name=$1 seconds=$2
  local corpus=$scratch/corpus/$name findings=$scratch/findings/$name log=$scratch/logs/$name.log
  mkdir -p "$corpus" "$findings" "$scratch/logs"
  local dict=()
  [ -f "$root/scripts/fuzz/dict/$name.dict" ] && dict=(-dict="$root/scripts/fuzz/dict/$name.dict")
  echo "fuzz: $name for ${seconds}s (log: $log)" >&2
  local status=0
  # shellcheck disable=SC2086
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  nice -n "$nice_level" "$scratch/fuzzers/$name" "$corpus" "$root/scripts/fuzz/corpus/$name" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" ${dict[@]+"${dict[@]}"} ${FUZZ_FLAGS:-} >"$log" 2>&1 || status=$?
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  local coverage
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $name FOUND SOMETHING (exit $status) after ${execs:-?} runs; see $log and $findings" >&2
    grep -m3 -E 'ERROR|invariant|Fatal|panic' "$log" >&2 || tail -20 "$log" >&2
    return 1
  fi
  printf 'fuzz: %-12s %4ss  %10s runs  %7s exec/s  %s  no finding\n' "$name" "$seconds" "${execs:-?}" "${rate:-?}" "${coverage:-}"
}

what=${1:-}
seconds=${2:-600}
case "$what" in
  ""|-h|--help|list) usage; exit 0 ;;
  build)
    # Every target, each failure named (not only the first), so none rots unseen.
    build_modules; failed=0
    for t in "${all_targets[@]}"; do build_target "$t" || failed=1; done
    exit $failed ;;
  all) selected=("${all_targets[@]}") ;;
  *)
    if [ ! -f "$targets_dir/$what.swift" ]; then echo "fuzz: no target '$what'" >&2; usage; exit 2; fi
    selected=("$what") ;;
esac
build_modules
for t in "${selected[@]}"; do build_target "$t" || exit 1; done
failed=0
for t in "${selected[@]}"; do run_target "$t" "$seconds" || failed=1; done
exit $failed
