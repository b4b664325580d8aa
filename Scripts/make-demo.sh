#!/usr/bin/env bash
# Regenerates Resources/demo.mp3, the bundled demo: a synthesised 8-second arpeggio (C major,
# A minor) with a soft decay on each note, encoded with LAME through FFmpeg. Needs ffmpeg.
set -euo pipefail
cd "$(dirname "$0")/.."
note='mod(floor(t*4),4)'
chord='if(lt(t,4),0,1)'
# Frequencies: C E G C' for the first bar, A C E A' for the second.
freq="if(eq($chord,0),if(eq($note,0),261.63,if(eq($note,1),329.63,if(eq($note,2),392.00,523.25))),if(eq($note,0),220.00,if(eq($note,1),261.63,if(eq($note,2),329.63,440.00))))"
env='exp(-5*mod(t,0.25))'
left="0.35*$env*sin(2*PI*t*$freq)+0.08*sin(2*PI*t*$freq/2)"
right="0.35*$env*sin(2*PI*t*$freq*1.002)+0.08*sin(2*PI*t*$freq/2)"
# Commas inside filter arguments must be escaped for the filtergraph parser.
left=${left//,/\\,}
right=${right//,/\\,}
ffmpeg -hide_banner -loglevel error -y -f lavfi -i "aevalsrc=$left|$right:s=44100:d=8" \
  -c:a libmp3lame -b:a 128k -map_metadata -1 \
  -metadata title="OpenAudioToolbox demo" -metadata artist="OpenAudioToolbox" \
  Resources/demo.mp3
echo "wrote Resources/demo.mp3 ($(stat -c %s Resources/demo.mp3) bytes)"
