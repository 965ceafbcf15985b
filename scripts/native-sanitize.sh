#!/usr/bin/env bash
# Builds native/test/stress.cc (the partition core under many producers and consumers) with
# ThreadSanitizer and with AddressSanitizer+UBSan, and runs both. Fails on any sanitizer report and on
# any lost, duplicated or out-of-order event (the stress test checks every sequence).
# Usage: scripts/native-sanitize.sh [scale]   (scale multiplies the events per producer; default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-20}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
CXX="${CXX:-g++}"
# A 64-byte streaming-copy threshold: the concurrent phases' batches are copied with streaming stores too.
COMMON=(-std=c++17 -O1 -g -fno-omit-frame-pointer -pthread -DEVENTLANE_STREAM_COPY_MIN=64 -Inative/src native/test/stress.cc)

echo "== ThreadSanitizer"
"$CXX" "${COMMON[@]}" -fsanitize=thread -o "$OUT/stress-tsan"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" "$OUT/stress-tsan" "$SCALE"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
"$CXX" "${COMMON[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all -o "$OUT/stress-asan"
ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 exitcode=67" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" "$OUT/stress-asan" "$SCALE"

echo "native sanitizer runs passed"
