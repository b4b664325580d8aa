// Offline renders of a stereo unit through AudioUnitRender, one slice at a time: the helper the
// player and fidelity tests share.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

/// Renders one slice of `l.count` frames of `unit` at sample time `sampleTime` into the planar
/// stereo buffers `l` and `r` through a two-buffer list, expecting `noErr`.
func renderStereoSlice(_ unit: AudioUnit, at sampleTime: Int, _ l: inout [Float], _ r: inout [Float],
                       list: UnsafeMutableAudioBufferListPointer) {
    var flags = AudioUnitRenderActionFlags()
    var time = AudioTimeStamp()
    time.mSampleTime = Double(sampleTime)
    time.mFlags = kAudioTimeStampSampleTimeValid
    let frames = UInt32(l.count)
    let status = l.withUnsafeMutableBytes { lb in
        r.withUnsafeMutableBytes { rb -> OSStatus in
            list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(lb.count), mData: lb.baseAddress)
            list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(rb.count), mData: rb.baseAddress)
            return AudioUnitRender(unit, &flags, &time, 0, frames, list.unsafeMutablePointer)
        }
    }
    #expect(status == noErr)
}
