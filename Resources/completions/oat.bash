# bash completion for OpenAudioToolbox's afplay, afinfo, afconvert and afrecord.
# Installed as /usr/share/bash-completion/completions/{afplay,afinfo,afconvert,afrecord}
# (the same file under each name), or sourced from ~/.bashrc.

_oat_audio_files() {
    local IFS=$'\n'
    COMPREPLY+=($(compgen -f -X '!*.@(wav|WAV|aif|aiff|aifc|AIF|AIFF|caf|CAF|mp3|MP3|mp2|mp1|aac|AAC|adts|m4a|M4A|m4b|mp4|MP4|mov|flac|FLAC|ogg|OGG|oga|opus|au|snd|rf64|w64|pls|m3u|m3u8)' -- "$1"))
    COMPREPLY+=($(compgen -d -- "$1"))
}

_oat_file_types="WAVE RF64 AIFF AIFC caff m4af flac Ogg adts MPG3"
_oat_data_formats="LEI16 BEI16 LEI24 BEI24 LEI32 BEI32 LEF32 BEF32 LEF64 BEF64 UI8 I8 ulaw alaw aac alac flac opus .mp3"
_oat_eq_presets="flat rock pop jazz classical bass vocal treble"
_oat_rooms="small medium large hall cathedral plate"

_afplay() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    case "$prev" in
        -v|-t|-r|--rate|--pitch|--start|--prebuffer|--crossfade) return ;;
        -q|--rQuality) COMPREPLY=($(compgen -W "0 1" -- "$cur")); return ;;
        --output) COMPREPLY=($(compgen -W "auto pulse pulse: alsa alsa: wav: null null:fast" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
        --record) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --eq) COMPREPLY=($(compgen -W "$_oat_eq_presets" -- "$cur")); return ;;
        --reverb) COMPREPLY=($(compgen -W "$_oat_rooms" -- "$cur")); [ ${#COMPREPLY[@]} -gt 0 ] && return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "-v -t -d -r --rate -q --rQuality --pitch --start --output --no-ui --json-events --record --prebuffer --crossfade --eq --reverb --compress --mix --version -h --help" -- "$cur"))
        return
    fi
    COMPREPLY=()
    _oat_audio_files "$cur"
}

_afinfo() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    case "$prev" in
        --hint) COMPREPLY=($(compgen -W "MPG3 MPG2 MPG1 adts WAVE RF64 BW64 AIFF AIFC caff NeXT flac OggS m4af mp4f" -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "--json -j --decode --hint --version -h --help" -- "$cur"))
        return
    fi
    COMPREPLY=()
    _oat_audio_files "$cur"
}

_afconvert() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    case "$prev" in
        -f|--file) COMPREPLY=($(compgen -W "$_oat_file_types" -- "$cur")); return ;;
        -d|--data) COMPREPLY=($(compgen -W "$_oat_data_formats" -- "$cur")); return ;;
        -c|--channels|-b|--bitrate|-q|--quality|-r|--src-quality) return ;;
        -s|--strategy) COMPREPLY=($(compgen -W "0 1 2 3" -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "-f --file -d --data -c --channels -b --bitrate -q --quality -r --src-quality -s --strategy --decode --no-progress -v --verbose --version -h --help" -- "$cur"))
        return
    fi
    COMPREPLY=()
    _oat_audio_files "$cur"
}

_afrecord() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    case "$prev" in
        -f|--file) COMPREPLY=($(compgen -W "$_oat_file_types" -- "$cur")); return ;;
        -d|--data) COMPREPLY=($(compgen -W "$_oat_data_formats" -- "$cur")); return ;;
        -c|--channels|-b|--bitrate|-q|--quality|-t|--time|--gain|--rate) return ;;
        --input) COMPREPLY=($(compgen -W "auto pulse pulse: alsa alsa:" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
        --output) COMPREPLY=($(compgen -W "auto pulse pulse: alsa alsa: null" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
        --eq) COMPREPLY=($(compgen -W "$_oat_eq_presets" -- "$cur")); return ;;
        --reverb) COMPREPLY=($(compgen -W "$_oat_rooms" -- "$cur")); [ ${#COMPREPLY[@]} -gt 0 ] && return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "-f --file -d --data -c --channels -b --bitrate -q --quality -t --time --input --list --no-meter -v --verbose --monitor --measure-latency --output --gain --eq --reverb --compress --voice --rate --version -h --help" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}

complete -F _afplay afplay
complete -F _afinfo afinfo
complete -F _afconvert afconvert
complete -F _afrecord afrecord
