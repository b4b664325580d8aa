#!/usr/bin/env bash
# Builds a Debian package of the four tools: Scripts/package-deb.sh [OUTDIR] writes
# OUTDIR/oat_VERSION_ARCH.deb (default OUTDIR: .build/deb) and prints its path.
# The tools are one stripped program, /usr/lib/oat/oat-tools, behind the links /usr/bin/afplay,
# afinfo, afconvert and afrecord (Scripts/install.sh), with the Swift runtime linked in statically;
# Depends names the Debian packages of every shared library it links or loads at run time (FFmpeg,
# Rubber Band, SpeexDSP, libcurl, libpulse and libasound are loaded with dlopen on first use),
# found on this machine with ldconfig and dpkg. usr/share/doc/oat holds debian/copyright and the
# changelog made from CHANGELOG.md (Scripts/gen-deb-changelog.py). Install with
# `apt install ./oat_VERSION_ARCH.deb`. OAT_INSTALL_NO_BUILD=1 packs what .build/release holds.
# OAT_DEB_MAINTAINER="NAME <ADDRESS>" sets the Maintainer (default: the project's address below,
# docs/shipping.md; a distributor puts their own).
set -euo pipefail
cd "$(dirname "$0")/.."
maintainer=${OAT_DEB_MAINTAINER:-OpenAudioToolbox maintainers <maintainers@users.noreply.a-seed-e09b8821.example>}
out=${1:-.build/deb}
version=$(sed -n 's/.*public static let string = "\(.*\)".*/\1/p' Sources/AudioToolboxKit/Version.swift)
[ -n "$version" ] || { echo "package-deb: no version in Sources/AudioToolboxKit/Version.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage" Scripts/install.sh /usr >/dev/null
install -d "$stage/usr/share/doc/oat"
install -m 0644 debian/copyright "$stage/usr/share/doc/oat/copyright"
Scripts/gen-deb-changelog.py oat "$maintainer" CHANGELOG.md | gzip -9n > "$stage/usr/share/doc/oat/changelog.gz"
chmod 0644 "$stage/usr/share/doc/oat/changelog.gz"
programs=$(find "$stage/usr" -type f -perm -u+x)

# The libraries: what the ELF files need, and what the package dlopens (the sonames in the C
# loaders under Sources/*Lazy and Sources/COATCurl; FFmpeg's are versioned by the installed major).
needed=$(for t in $programs; do readelf -d "$t" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'; done)
dlopened=$(grep -rhoE '"lib[a-z0-9_]+\.so\.[0-9]*"' Sources/COATFFmpegLazy Sources/COATDSPLazy Sources/COATCurl Sources/COATDeviceLazy | tr -d '"' | sort -u)
libs=()
for soname in $needed $dlopened; do
  # "libavcodec.so." (major chosen at run time): the newest one installed.
  path=$(ldconfig -p | awk -v s="$soname" 'index($1, s) == 1 && /x86-64|x86_64|aarch64|AArch64/ {print $NF}' | sort -V | tail -n 1)
  [ -n "$path" ] || { echo "package-deb: $soname is not installed here; cannot name its package" >&2; exit 1; }
  libs+=("$path")
done
if echo "$needed" | grep -q '^libswift'; then
  echo "package-deb: a tool links the Swift runtime dynamically ($(echo "$needed" | grep '^libswift' | sort -u | tr '\n' ' '))" >&2
  exit 1
fi
depends=$(for lib in "${libs[@]}"; do
  # dpkg knows a file by the path its package installed: with merged /usr that may be the /lib
  # or the /usr/lib spelling, of the link or of its target.
  real=$(readlink -f "$lib")
  pkg=""
  for candidate in "$lib" "$real" "${lib#/usr}" "/usr$lib" "${real#/usr}" "/usr$real"; do
    pkg=$(dpkg -S "$candidate" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  [ -n "$pkg" ] || { echo "package-deb: no package owns $lib" >&2; exit 1; }
  ver=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//; s/^[0-9]*://')
  echo "$pkg (>= $ver)"
done | sort -u | paste -sd, - | sed 's/,/, /g')

size=$(du -sk "$stage/usr" | cut -f1)
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: oat
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: pulseaudio | pipewire-pulse, man-db
Section: sound
Priority: optional
Description: afplay, afinfo, afconvert and afrecord for Linux
 The command-line tools of OpenAudioToolbox, Apple's Audio Toolbox for Swift
 on Linux: afplay plays audio files and internet radio (ICY, PLS/M3U, HLS)
 gaplessly, afinfo describes audio files, afconvert converts between formats
 (WAV, AIFF, CAF, M4A/AAC/ALAC, FLAC, Ogg Opus, MP3) and afrecord records from
 PulseAudio or ALSA. Man pages and bash/zsh completions included.
CONTROL
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
find "$stage" -type d -exec chmod 0755 {} +
mkdir -p "$out"
deb="$out/oat_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
