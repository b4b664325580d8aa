#!/usr/bin/env bash
# The Debian package as a user meets it, on this machine (root): builds it (Scripts/package-deb.sh),
# checks it with lintian (Debian's package checker: any E: or W: line fails; Scripts/setup.sh
# installs it) and its Installed-Size (at most 30 MB: one stripped program behind the four names),
# installs it with apt (Depends resolved from Debian's packages), then from PATH, with no Swift
# toolchain on PATH or in the tools' library lookups: `afinfo --json`, `afplay --output null`,
# a stream played from a loopback HTTP server into a WAV file (exact frame count), `man afplay`,
# the bash completion; then removes the package and checks that nothing is left.
# Refuses to run if a package named oat is already installed (it would replace it).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
server=""
installed=0
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ "$installed" = 1 ]; then dpkg -r oat >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check-deb: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (it installs the package)"
if dpkg-query -W -f='${Status}' oat 2>/dev/null | grep -q "install ok installed"; then fail "a package named oat is installed already; remove it first"; fi

command -v lintian >/dev/null || fail "needs lintian (apt-get install lintian; Scripts/setup.sh installs it)"

deb=$(Scripts/package-deb.sh "$work")
echo "check-deb: built $deb ($(du -k "$deb" | cut -f1) KiB); $(dpkg-deb -f "$deb" Depends)"
# lintian says that it runs as root ("not recommended"); its findings are the E:/W:/I: lines.
lintian_log=$(lintian "$deb" 2>&1) || true
echo "$lintian_log" | sed 's/^/check-deb: lintian: /'
if echo "$lintian_log" | grep -qE '^[EW]: '; then fail "lintian reports errors or warnings on $deb (above)"; fi
size=$(dpkg-deb -f "$deb" Installed-Size)
[ "$size" -le 30720 ] || fail "Installed-Size is $size KiB, more than 30 MB"
echo "check-deb: lintian: no error, no warning; Installed-Size $size KiB"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null || fail "apt could not install $deb"

clean_env=(env -i PATH=/usr/bin:/bin HOME="$work" LANG=C.UTF-8)
for t in afplay afinfo afconvert afrecord; do
  [ "$("${clean_env[@]}" sh -c "command -v $t")" = "/usr/bin/$t" ] || fail "$t is not on PATH at /usr/bin"
  [ "$(readlink -f "/usr/bin/$t")" = /usr/lib/oat/oat-tools ] || fail "/usr/bin/$t is not a link to /usr/lib/oat/oat-tools"
  if ldd "/usr/bin/$t" | grep -E 'libswift|libdispatch|libFoundation|not found'; then fail "/usr/bin/$t needs a library the package does not bring"; fi
  "${clean_env[@]}" "$t" --version | grep -q "^$t (OpenAudioToolbox) " || fail "$t --version"
done
"${clean_env[@]}" afinfo --json "$repo/Resources/demo.mp3" | grep -q '"file_type": "MPG3"' || fail "afinfo --json from PATH"
"${clean_env[@]}" afplay --no-ui --output null -t 1 "$repo/Resources/demo.mp3" || fail "afplay --output null from PATH"

# A stream: the demo over HTTP on loopback, played into a WAV file.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
python3 -m http.server --bind 127.0.0.1 --directory "$repo/Resources" "$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break; sleep 0.1; done
"${clean_env[@]}" afplay --no-ui --output "wav:$work/stream.wav" "http://127.0.0.1:$port/demo.mp3" || fail "afplay of a stream from PATH"
frames=$("${clean_env[@]}" afinfo --json --decode "$work/stream.wav" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decoded_frames"])')
want=$("${clean_env[@]}" afinfo --json --decode "$repo/Resources/demo.mp3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["decoded_frames"])')
[ "$frames" = "$want" ] || fail "the stream played $frames frames of $want"

[ "$(man -w afplay)" = /usr/share/man/man1/afplay.1.gz ] || fail "man -w afplay: $(man -w afplay 2>&1)"
MANWIDTH=80 man afplay 2>/dev/null | grep -q 'afplay - play audio files and internet streams' || fail "man afplay does not show the page"
bash -c 'source /usr/share/bash-completion/completions/afplay && complete -p afplay' >/dev/null || fail "the bash completion does not load"

dpkg -r oat >/dev/null
installed=0
for f in /usr/bin/afplay /usr/lib/oat /usr/share/doc/oat /usr/share/man/man1/afplay.1.gz /usr/share/bash-completion/completions/afplay /usr/share/zsh/vendor-completions/_oat; do
  [ ! -e "$f" ] || fail "$f is left after dpkg -r oat"
done
echo "check-deb: installed with apt, tools from PATH without Swift (stream: $frames frames, exact), man afplay, completions; removed cleanly"
