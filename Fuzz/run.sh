#!/usr/bin/env bash
# Fuzz/run.sh SECONDS [TARGET ...]: builds PushSwarm's libFuzzer targets with AddressSanitizer
# (PUSHSWARM_FUZZ=1 adds them to Package.swift; build in .build/fuzz) and runs each target for
# SECONDS, starting from its seeds (Fuzz/corpus/TARGET) and its past crashes
# (Fuzz/regressions/TARGET). New inputs go to .build/fuzz/corpus, reproducers to
# .build/fuzz/artifacts (and are printed in hex). Fails if any target crashes, leaks, times out
# (an input over 10 s) or exceeds 2 GiB. SECONDS = 0 replays the seeds and regressions once.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(http-request http-response websocket-server websocket-client json scenario mock-http mock-socket metrics-archive push-receiver access-log server-pipeline hostile-server hpack http2-frames http2-client http2-server)
fi

echo "== building the fuzz targets (-sanitize=fuzzer,address)"
PUSHSWARM_FUZZ=1 swift build -c release --build-path .build/fuzz -Xswiftc -sanitize=fuzzer,address --product pushswarm-fuzz 2>&1 | tail -n 1
binary=.build/fuzz/release/pushswarm-fuzz
[ -x "$binary" ] || { echo "the fuzz build failed"; exit 1; }
mkdir -p .build/fuzz/artifacts

failed=()
for target in "${targets[@]}"; do
    work=.build/fuzz/corpus/$target
    mkdir -p "$work"
    inputs=("$work" "Fuzz/corpus/$target")
    [ -d "Fuzz/regressions/$target" ] && inputs+=("Fuzz/regressions/$target")
    if [ "$seconds" = 0 ]; then limit=(-runs=0); else limit=(-max_total_time="$seconds"); fi
    case $target in json | scenario | mock-http | mock-socket | metrics-archive | push-receiver) limit+=(-dict=Fuzz/json.dict) ;; esac
    # A metrics.json holds a run's intervals: its seed, a small stormy run's, is about 30 KB.
    max_len=8192
    [ "$target" = metrics-archive ] && max_len=65536
    log=.build/fuzz/$target.log
    # The Swift runtime's backtracer would wait on a crash inside libFuzzer's handler: off.
    # Fuzz/lsan.supp: the one false leak Swift's weak references show LeakSanitizer.
    FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=Fuzz/lsan.supp:print_suppressions=1 timeout -k 10 $((seconds + 120)) "$binary" "${limit[@]}" -timeout=10 \
        -rss_limit_mb=2048 -max_len=$max_len -print_final_stats=1 -artifact_prefix=.build/fuzz/artifacts/"$target"- "${inputs[@]}" >"$log" 2>&1
    status=$?
    runs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
    if [ $status -eq 0 ]; then
        echo "$target: ok, ${runs:-?} inputs in ${seconds} s"
    else
        failed+=("$target")
        echo "$target: FAILED (exit $status)"
        grep -E "ERROR|SUMMARY|Fatal error|precondition|Test unit written" "$log" | head -n 8
        for artifact in $(grep -oE "\.build/fuzz/artifacts/$target-[a-z]+-[0-9a-f]+" "$log" | sort -u); do
            echo "reproducer $artifact (hex; save it under Fuzz/regressions/$target/ once fixed):"
            od -An -tx1 -v "$artifact" | head -n 40
        done
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}"
    exit 1
fi
echo "fuzzing: every target ran clean"
