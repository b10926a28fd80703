#!/usr/bin/env bash
# Runs every fuzz target for a while (30 s each by default) with cargo-fuzz (libFuzzer).
#
#   fuzz/smoke.sh                    # CI smoke run: 30 s per target
#   FUZZ_SECS=600 fuzz/smoke.sh      # the 10-minute campaign of docs/RELIABILITY.md
#   fuzz/smoke.sh router envelope    # only these targets
#
# Works on a stable toolchain: cargo-fuzz passes -Z flags to rustc, which RUSTC_BOOTSTRAP=1
# allows. New inputs go to fuzz/work/<target> (ignored by git); the committed seed corpus
# in fuzz/corpus/<target> is only read. Exit codes: 0 every target ran clean; 1 a target
# found a crash (the input is in fuzz/artifacts/<target>/), or the targets do not compile
# (a Rust error in this project's code); 2 cargo-fuzz is missing; 3 the targets cannot be
# built on this toolchain. A target with a fuzz/<target>.dict gets it as
# its libFuzzer dictionary (policy_shell: shell syntax).
set -uo pipefail
cd "$(dirname "$0")"

secs="${FUZZ_SECS:-30}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(codec envelope question router policy policy_shell)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/smoke.sh: cargo-fuzz is not installed (cargo install cargo-fuzz); cannot fuzz" >&2
    exit 2
fi

export RUSTC_BOOTSTRAP=1
sanitizer=(--sanitizer address)
if ! cargo fuzz build "${sanitizer[@]}" >build.log 2>&1; then
    echo "fuzz/smoke.sh: building with AddressSanitizer failed; retrying without a sanitizer" >&2
    sanitizer=(--sanitizer none)
    if ! cargo fuzz build "${sanitizer[@]}" >build.log 2>&1; then
        tail -n 30 build.log >&2
        # Our own code not compiling (a Rust error code, in this project's crates) is a
        # defect, not a toolchain that cannot fuzz: it fails the run.
        if grep -qE '^error\[E[0-9]+\]' build.log \
            && grep -qE 'could not compile `acp-question-bridge(-fuzz)?`' build.log; then
            echo "fuzz/smoke.sh: the fuzz targets do not compile (see above)" >&2
            exit 1
        fi
        echo "fuzz/smoke.sh: cargo-fuzz cannot build the targets with this toolchain" \
            "($(rustc --version)); it needs -Z flags (nightly, or RUSTC_BOOTSTRAP=1)" >&2
        exit 3
    fi
fi
rm -f build.log

status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "logs"
    log="logs/$t.log"
    max_len=4096
    [ "$t" = router ] && max_len=1024
    dict=()
    [ -f "$t.dict" ] && dict=(-dict="$t.dict")
    echo "== $t: ${secs}s (${sanitizer[*]})"
    cargo fuzz run "${sanitizer[@]}" "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dict[@]}" >"$log" 2>&1
    rc=$?
    grep -E '^#[0-9]+ +(DONE|INITED)|^Done|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" \
        | sed 's/^/   /'
    grep -E '^#[0-9]+' "$log" | tail -n 1 | sed 's/^/   last: /'
    if [ $rc -ne 0 ]; then
        echo "FAIL: fuzz target '$t' exited with $rc; see fuzz/$log and fuzz/artifacts/$t/" >&2
        grep -E "panicked at|SUMMARY|ERROR" "$log" | head -n 5 >&2
        status=1
    fi
done
exit $status
