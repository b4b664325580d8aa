# Shared settings and helpers for Fuzz/build.sh, run.sh and regress.sh (sourced, not run).
set -euo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$FUZZ_DIR/.." && pwd)"
OUT="$FUZZ_DIR/.out"
FAMILIES=(mpeg wav aiff caf au flac ogg mp4 any playlist mpegts icy)
# The shared corpus lives next to the project (../shared/corpus); OAT_CORPUS overrides.
CORPUS="${OAT_CORPUS:-$ROOT/../shared/corpus}"
SEED_MAX_BYTES=65536

die() { echo "fuzz: $*" >&2; exit 2; }

is_family() { local f; for f in "${FAMILIES[@]}"; do [[ "$f" == "$1" ]] && return 0; done; return 1; }

# -max_len per family: AU headers are tiny; MP4 keeps index boxes whole, so give it more room.
max_len() {
    case "$1" in
        au) echo 16384 ;;
        mp4) echo 131072 ;;
        *) echo 65536 ;;
    esac
}

find_swiftc() {
    if [[ -n "${SWIFTC:-}" ]]; then echo "$SWIFTC"; return; fi
    if command -v swiftc >/dev/null 2>&1; then command -v swiftc; return; fi
    [[ -x /opt/swift/usr/bin/swiftc ]] && { echo /opt/swift/usr/bin/swiftc; return; }
    die "no swiftc found (set SWIFTC or put the toolchain on PATH)"
}

# Decides how to get libFuzzer into the link. Sets FUZZ_SANITIZE (swiftc flags) and
# FUZZ_EXTRA_LINK (extra inputs). Prefers the toolchain's own runtime
# (lib/swift/clang/lib/linux/libclang_rt.fuzzer-x86_64.a, what -sanitize=fuzzer links);
# otherwise compiles with coverage instrumentation only and links a system libFuzzer
# (Debian's libclang-rt-NN-dev), installing it with apt-get when nothing is found.
locate_fuzzer_runtime() {
    local swiftc toolchain arch lib
    swiftc="$(find_swiftc)"
    toolchain="$(cd "$(dirname "$(readlink -f "$swiftc")")/.." && pwd)"
    arch="$(uname -m)"
    FUZZ_EXTRA_LINK=()
    if [[ -z "${FUZZ_FORCE_SYSTEM_RUNTIME:-}" ]]; then
        for lib in "$toolchain"/lib/swift/clang/lib/linux/libclang_rt.fuzzer-"$arch".a \
                   "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer-"$arch".a; do
            if [[ -f "$lib" ]]; then
                FUZZ_SANITIZE=(-sanitize=fuzzer,address)
                FUZZ_RUNTIME="$lib"
                return
            fi
        done
    fi
    lib="$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-"$arch".a 2>/dev/null | sort -V | tail -1 || true)"
    if [[ -z "$lib" ]]; then
        echo "fuzz: no libFuzzer runtime in the Swift toolchain; installing Debian's libclang-rt-14-dev" >&2
        if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
            die "libFuzzer runtime missing; install libclang-rt-14-dev (or a toolchain with libclang_rt.fuzzer)"
        fi
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-rt-14-dev >&2 \
            || die "apt-get install libclang-rt-14-dev failed"
        lib="$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-"$arch".a 2>/dev/null | sort -V | tail -1 || true)"
        [[ -n "$lib" ]] || die "libclang-rt-14-dev installed but no libclang_rt.fuzzer-$arch.a found"
    fi
    # Coverage instrumentation as -sanitize=fuzzer would add it; libFuzzer (with its main) from $lib.
    FUZZ_SANITIZE=(-sanitize=address -sanitize-coverage=edge,trace-cmp,indirect-calls,pc-table,inline-8bit-counters)
    FUZZ_EXTRA_LINK=("$lib" -lstdc++)
    FUZZ_RUNTIME="$lib"
}

# The Swift sources a target compiles: OATCore + OATFiles + the harness; the playlist and
# mpegts targets take OATCore + OATNetwork's parsers (their harness is in the target file).
library_sources() {
    case "${1:-}" in
        playlist|mpegts)
            find "$ROOT/Sources/OATCore" "$ROOT/Sources/OATNetwork/Parsers" -name '*.swift' | LC_ALL=C sort ;;
        *)
            find "$ROOT/Sources/OATCore" "$ROOT/Sources/OATFiles" -name '*.swift' | LC_ALL=C sort
            echo "$FUZZ_DIR/Sources/FuzzHarness.swift" ;;
    esac
}

# Extra sources a family compiles besides library_sources: 'icy' fuzzes OATNetwork's ICY
# demuxer and response-head parsing (the files that do not need libcurl).
family_sources() {
    case "$1" in
        icy) printf '%s\n' "$ROOT/Sources/OATNetwork/ByteSource.swift" \
                 "$ROOT/Sources/OATNetwork/ICYDemuxer.swift" "$ROOT/Sources/OATNetwork/HTTPHead.swift" ;;
    esac
}

# Copies the corpus files of a family (by extension, folder or name), each cut to 64 KiB, into
# $OUT/seeds-FAMILY (git-ignored). The corpus itself is only read.
family_matches() {
    local family="$1" path="$2" name ext
    name="$(basename "$path")"
    ext="${name##*.}"; ext="${ext,,}"
    [[ "$name" == *.* ]] || ext=""
    case "$ext" in
        md|tsv|txt|json|toml|pcm|"" ) return 1 ;;
    esac
    if [[ "$ext" == x ]]; then   # tinytag's detect_*/magic_bytes_only_* files name their type
        case "$family" in
            any) return 0 ;;
            mpeg) [[ "$name" =~ (mp1|mp2|mp3|id3) ]] ;;
            wav) [[ "$name" == *wav* ]] ;;
            aiff) [[ "$name" == *aiff* ]] ;;
            flac) [[ "$name" == *flac* ]] ;;
            ogg) [[ "$name" == *ogg* ]] ;;
            mp4) [[ "$name" =~ (mp4|m4a) ]] ;;
            *) return 1 ;;
        esac
        return
    fi
    case "$family" in
        any) return 0 ;;
        mpeg) [[ "$ext" =~ ^(mp3|mp2|mp1|aac|bit)$ ]] ;;
        wav) [[ "$ext" =~ ^(wav|bogus)$ ]] ;;
        aiff) [[ "$ext" =~ ^(aif|aiff|aifc|afc)$ ]] ;;
        caf) [[ "$ext" == caf ]] ;;
        au) [[ "$ext" =~ ^(au|snd)$ ]] ;;
        flac) [[ "$ext" == flac ]] ;;
        ogg) [[ "$ext" =~ ^(ogg|oga|opus|spx|ogv)$ ]] ;;
        mp4) [[ "$ext" =~ ^(m4a|mp4|m4b|mov)$ ]] ;;
        playlist) [[ "$ext" =~ ^(m3u|m3u8|pls)$ ]] ;;
        mpegts) [[ "$ext" =~ ^(ts|m2ts|mts)$ ]] ;;
        *) return 1 ;;
    esac
}

prepare_seeds() {
    local family="$1" dest="$OUT/seeds-$1" f rel n=0
    rm -rf "$dest"; mkdir -p "$dest"
    # The committed malformed inputs (boundary values in size/count/channel/rate fields) seed
    # every family they belong to, with or without a corpus.
    while IFS= read -r -d '' f; do
        family_matches "$family" "$f" || continue
        cp "$f" "$dest/regression__$(basename "$f")"
        n=$((n + 1))
    done < <(find "$FUZZ_DIR/regressions" -type f -print0 | LC_ALL=C sort -z)
    if [[ ! -d "$CORPUS" ]]; then
        echo "fuzz: corpus $CORPUS not found; $family starts from no seeds" >&2
        return
    fi
    while IFS= read -r -d '' f; do
        family_matches "$family" "$f" || continue
        rel="${f#"$CORPUS"/}"
        head -c "$SEED_MAX_BYTES" "$f" > "$dest/${rel//\//__}"
        n=$((n + 1))
    done < <(find "$CORPUS" -type f -print0 | LC_ALL=C sort -z)
    echo "$n"
}

# The dictionary for a family; the 'any' target gets every family's tokens.
dict_for() {
    if [[ "$1" == any ]]; then
        mkdir -p "$OUT"
        cat "$FUZZ_DIR"/dict/*.dict > "$OUT/any-merged.dict"
        echo "$OUT/any-merged.dict"
    else
        echo "$FUZZ_DIR/dict/$1.dict"
    fi
}

FUZZ_COMMON_FLAGS=(-rss_limit_mb=2048 -timeout=10 -malloc_limit_mb=2048)
# Let libFuzzer/ASan report crashes; the Swift runtime's backtracer would hold the terminal.
export SWIFT_BACKTRACE=enable=no
