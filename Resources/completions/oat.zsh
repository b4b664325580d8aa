#compdef afplay afinfo afconvert afrecord
# zsh completion for OpenAudioToolbox's afplay, afinfo, afconvert and afrecord.
# Installed as /usr/share/zsh/vendor-completions/_oat (or any directory on $fpath, named _oat).

local -a oat_file_types oat_data_formats oat_eq oat_rooms
oat_file_types=(WAVE RF64 AIFF AIFC caff m4af flac Ogg adts MPG3)
oat_data_formats=(LEI16 BEI16 LEI24 BEI24 LEI32 BEI32 LEF32 BEF32 LEF64 BEF64 UI8 I8 ulaw alaw aac alac flac opus .mp3)
oat_eq=(flat rock pop jazz classical bass vocal treble)
oat_rooms=(small medium large hall cathedral plate)
local audio='_files -g "*.(#i)(wav|aif|aiff|aifc|caf|mp3|mp2|mp1|aac|adts|m4a|m4b|mp4|mov|flac|ogg|oga|opus|au|snd|rf64|pls|m3u|m3u8)(-.)"'

case $service in
afplay)
  _arguments -s \
    '-v[volume 0.0 ... 1.0]:volume:' \
    '-t[play only this many seconds]:seconds:' \
    '-d[print debug information]' \
    '(-r --rate)'{-r,--rate}'[play at RATE times the speed, pitch unchanged]:rate:' \
    '(-q --rQuality)'{-q,--rQuality}'[quality of rate-scaled playback]:quality:(0 1)' \
    '--pitch[shift the pitch by CENTS]:cents:' \
    '--start[start this far into the first file]:seconds:' \
    '--output[where the audio goes]:output:(auto pulse pulse\: alsa alsa\: wav\: null null\:fast)' \
    '--no-ui[no status line or keys]' \
    '--json-events[print one JSON object per event]' \
    '--record[streams: also write the received audio to FILE]:file:_files' \
    '--prebuffer[streams: decoded audio to buffer before starting]:seconds:' \
    '--crossfade[fade each item into the next]:seconds:' \
    '--eq[equaliser preset or bands]:preset:($oat_eq)' \
    '--reverb[reverb room]::room:($oat_rooms)' \
    '--compress[compressor and limiter]' \
    '--mix[play the files at the same time, mixed]' \
    '--version[print the version]' \
    '(-h --help)'{-h,--help}'[print help]' \
    "*:file or URL:$audio"
  ;;
afinfo)
  _arguments -s \
    '(--json -j)'{--json,-j}'[print one JSON object per file]' \
    '--decode[also decode the audio and report decoded_frames]' \
    '--hint[container type for raw streams]:type:(MPG3 MPG2 MPG1 adts WAVE RF64 BW64 AIFF AIFC caff NeXT flac OggS m4af mp4f)' \
    '--version[print the version]' \
    '(-h --help)'{-h,--help}'[print help]' \
    "*:audio file:$audio"
  ;;
afconvert)
  _arguments -s \
    '(-f --file)'{-f,--file}'[file format]:type:($oat_file_types)' \
    '(-d --data)'{-d,--data}'[data format, optionally @RATE]:format:($oat_data_formats)' \
    '(-c --channels)'{-c,--channels}'[output channel count]:channels:' \
    '(-b --bitrate)'{-b,--bitrate}'[bit rate in bits per second]:bits per second:' \
    '(-q --quality)'{-q,--quality}'[codec quality 0...127]:quality:' \
    '(-r --src-quality)'{-r,--src-quality}'[sample-rate converter quality 0...127]:quality:' \
    '(-s --strategy)'{-s,--strategy}'[bit-rate strategy]:strategy:((0\:CBR 1\:ABR 2\:constrained\ VBR 3\:VBR))' \
    '--decode[write linear PCM]' \
    '--no-progress[no progress bar]' \
    '(-v --verbose)'{-v,--verbose}'[print what was written]' \
    '--version[print the version]' \
    '(-h --help)'{-h,--help}'[print help]' \
    "1:input:$audio" \
    '2:output:_files'
  ;;
afrecord)
  _arguments -s \
    '(-f --file)'{-f,--file}'[file format]:type:($oat_file_types)' \
    '(-d --data)'{-d,--data}'[data format, optionally @RATE]:format:($oat_data_formats)' \
    '(-c --channels)'{-c,--channels}'[channel count]:channels:' \
    '(-b --bitrate)'{-b,--bitrate}'[bit rate in bits per second]:bits per second:' \
    '(-q --quality)'{-q,--quality}'[codec quality 0...127]:quality:' \
    '(-t --time)'{-t,--time}'[stop after this much audio]:seconds:' \
    '--input[input device]:input:(auto pulse pulse\: alsa alsa\:)' \
    '--list[list input devices and exit]' \
    '--no-meter[no level meter]' \
    '(-v --verbose)'{-v,--verbose}'[say which device is used]' \
    '--monitor[route the input through effects to the output]' \
    '--measure-latency[measure the round-trip latency]' \
    '--output[monitor output device]:output:(auto pulse pulse\: alsa alsa\: null)' \
    '--gain[input gain in dB]:dB:' \
    '--eq[equaliser preset or bands]:preset:($oat_eq)' \
    '--reverb[reverb room]::room:($oat_rooms)' \
    '--compress[compressor and limiter]' \
    '--voice[echo cancellation and noise suppression]' \
    '--rate[monitor sample rate]:Hz:' \
    '--version[print the version]' \
    '(-h --help)'{-h,--help}'[print help]' \
    '1:output file:_files'
  ;;
esac
