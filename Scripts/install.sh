#!/usr/bin/env bash
# Installs afplay, afinfo, afconvert and afrecord with their man pages and bash/zsh completions.
#
#   Scripts/install.sh [PREFIX]              build (release) and install under PREFIX (default /usr/local)
#   Scripts/install.sh --uninstall [PREFIX]  remove exactly what the install put there
#   DESTDIR=/some/root Scripts/install.sh /usr   stage the install under DESTDIR (Scripts/package-deb.sh)
#   OAT_INSTALL_NO_BUILD=1                   install what .build/release already holds
#
# The four tools are one program, oat-tools (Package.swift), installed stripped as
# PREFIX/lib/oat/oat-tools with PREFIX/bin/afplay, afinfo, afconvert and afrecord as links to it
# (the name it is run by picks the tool): one copy of the Swift runtime, linked in statically, so the
# installed tools need no Swift toolchain, only Debian's libraries (FFmpeg, libpulse, ALSA, libcurl,
# libmpg123, Rubber Band, SpeexDSP). Safe to run again: files are replaced, nothing else is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=install
prefix=/usr/local
for arg in "$@"; do
  case "$arg" in
    --uninstall) mode=uninstall ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install: unknown option $arg" >&2; exit 2 ;;
    *) prefix=$arg ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install: PREFIX must be an absolute path, not $prefix" >&2; exit 2 ;; esac
root="${DESTDIR:-}$prefix"
tools=(afplay afinfo afconvert afrecord)
# zsh looks in vendor-completions for the system's packages and in site-functions elsewhere.
if [ "$prefix" = /usr ]; then zshdir=share/zsh/vendor-completions; else zshdir=share/zsh/site-functions; fi
multicall=lib/oat/oat-tools
installed=("$multicall")
for t in "${tools[@]}"; do
  installed+=("bin/$t" "share/man/man1/$t.1.gz" "share/bash-completion/completions/$t")
done
installed+=("$zshdir/_oat")

if [ "$mode" = uninstall ]; then
  for f in "${installed[@]}"; do
    if [ -e "$root/$f" ] || [ -L "$root/$f" ]; then rm -f "$root/$f"; echo "install: removed $root/$f"; fi
  done
  rmdir "$root/lib/oat" 2>/dev/null || true
  exit 0
fi

if [ "${OAT_INSTALL_NO_BUILD:-0}" != 1 ]; then
  source Scripts/env.sh
  Scripts/setup.sh --build
  if ! log=$(swift build -c release --static-swift-stdlib --product oat-tools 2>&1); then
    echo "$log" >&2
    echo "install: building oat-tools failed" >&2
    exit 1
  fi
fi
bin=.build/release
[ -x "$bin/oat-tools" ] || { echo "install: $bin/oat-tools is missing (build it, or drop OAT_INSTALL_NO_BUILD)" >&2; exit 1; }

install -d "$root/bin" "$root/lib/oat" "$root/share/man/man1" "$root/share/bash-completion/completions" "$root/$zshdir"
# Stripped as Debian's dh_strip strips a program (symbols and debug information out: 24 -> 11 MB).
install -m 0755 "$bin/oat-tools" "$root/$multicall"
strip --remove-section=.comment --remove-section=.note "$root/$multicall"
for t in "${tools[@]}"; do
  ln -sfn "../$multicall" "$root/bin/$t"
  gzip -9nc "docs/man/$t.1" > "$root/share/man/man1/$t.1.gz"
  chmod 0644 "$root/share/man/man1/$t.1.gz"
  install -m 0644 Resources/completions/oat.bash "$root/share/bash-completion/completions/$t"
done
install -m 0644 Resources/completions/oat.zsh "$root/$zshdir/_oat"
echo "install: afplay, afinfo, afconvert, afrecord, their man pages and completions are in $root"
