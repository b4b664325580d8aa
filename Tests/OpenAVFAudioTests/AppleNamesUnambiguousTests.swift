// This file imports only what an AVAudioEngine-era library imports (OpenAVFAudio; Foundation and
// Testing are not ours) and names Apple's types unqualified. A type of an internal module with one of
// these names, visible through the umbrella and not shadowed by Apple's declaration, makes the file
// fail to compile ("'AUParameter' is ambiguous for type lookup"), as AudioKit's core did.
import Foundation
import OpenAVFAudio
import Testing

/// Apple's names resolve to Apple's declarations through `import OpenAVFAudio`.
struct AppleNamesUnambiguousTests {
    /// A parameter found through the tree is Apple's `AUParameter` (a class with `value`,
    /// `address`), written unqualified in a signature as a library writes it.
    @Test func auParameterIsApples() throws {
        func wetDry(of tree: AUParameterTree) -> AUParameter? {
            tree.parameter(withAddress: AUParameterAddress(kDelayParam_WetDryMix))
        }
        let delay = AVAudioUnitDelay()
        let tree = try #require(delay.auAudioUnit.parameterTree)
        let mix: AUParameter = try #require(wetDry(of: tree))
        mix.value = 25
        #expect(delay.wetDryMix == 25)
        #expect(mix.address == AUParameterAddress(kDelayParam_WetDryMix))
        let all: [AUParameter] = tree.allParameters
        #expect(all.count == 4)
    }

    /// The scalar and C-struct names are Apple's shapes: `UInt32`, `Int32`, C structs with Apple's
    /// fields and sizes.
    @Test func scalarAndStructNamesAreApples() {
        let format: AudioFormatID = kAudioFormatLinearPCM
        let flags: AudioFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked
        let tag: AudioChannelLayoutTag = kAudioChannelLayoutTag_Stereo
        let label: AudioChannelLabel = kAudioChannelLabel_Left
        let node: AUNode = 3
        #expect(type(of: format) == UInt32.self && format == 0x6C70_636D)
        #expect(type(of: flags) == UInt32.self && flags == 9)
        #expect(type(of: tag) == UInt32.self && type(of: label) == UInt32.self)
        #expect(type(of: node) == Int32.self)
        #expect(MemoryLayout<AudioChannelLayout>.size == 32)
        var layout = AudioChannelLayout()
        layout.mChannelLayoutTag = tag
        #expect(layout.mNumberChannelDescriptions == 0)
        let buffer: AudioQueueBuffer? = nil
        #expect(buffer?.mAudioDataByteSize == nil)
        #expect(MemoryLayout<AudioQueueBuffer>.size == 56)
    }
}
