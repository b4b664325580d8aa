// A file that imports every public product of ours at once (OpenAVFAudio, OpenAudioToolbox and
// AudioToolboxKit, as a player that uses Apple's API and our Swift API side by side does) and
// names Apple's types unqualified. An internal type that shares a name with an Apple symbol is
// "ambiguous for type lookup" here even where OpenAudioToolbox declares Apple's shape, so each
// internal type has a name of ours (AudioFormatCode, ChannelLayoutTag, QueueBuffer, RenderNode...).
import AudioToolboxKit
import Foundation
import OpenAVFAudio
import OpenAudioToolbox
import Testing

struct AppleNamesBesideKitTests {
    /// Apple's scalar and C-struct names keep Apple's shapes beside AudioToolboxKit.
    @Test func appleNamesResolveBesideTheKit() {
        let format: AudioFormatID = kAudioFormatLinearPCM
        let flags: AudioFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked
        let tag: AudioChannelLayoutTag = kAudioChannelLayoutTag_Stereo
        let label: AudioChannelLabel = kAudioChannelLabel_Left
        let node: AUNode = 3
        #expect(type(of: format) == UInt32.self && format == 0x6C70_636D)
        #expect(type(of: flags) == UInt32.self && flags == 9)
        #expect(type(of: tag) == UInt32.self && type(of: label) == UInt32.self)
        #expect(type(of: node) == Int32.self)
        var layout = AudioChannelLayout()
        layout.mChannelLayoutTag = tag
        #expect(MemoryLayout<AudioChannelLayout>.size == 32 && layout.mNumberChannelDescriptions == 0)
        let buffer: AudioQueueBuffer? = nil
        #expect(buffer?.mAudioDataByteSize == nil && MemoryLayout<AudioQueueBuffer>.size == 56)
        let delay = AVAudioUnitDelay()
        let parameter: AUParameter? = delay.auAudioUnit.parameterTree?.parameter(withAddress: AUParameterAddress(kDelayParam_WetDryMix))
        #expect(parameter?.address == AUParameterAddress(kDelayParam_WetDryMix))
    }

    /// Our Swift types, by their own names, in the same file.
    @Test func ourNamesBesideApples() {
        let code: AudioFormatCode = .linearPCM
        let set: AudioFormatFlagSet = [.isFloat, .isPacked]
        #expect(code.rawValue == kAudioFormatLinearPCM)
        #expect(set.rawValue == kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked)
        let layout = ChannelLayout(tag: ChannelLayoutTag.stereo)
        #expect(layout.channelCount == 2)
        #expect(ChannelLabel.left.rawValue == kAudioChannelLabel_Left)
    }
}
