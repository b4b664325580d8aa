// kAudioUnitProperty_ClassInfo as macOS code reads and restores it (only the import differs):
// the .aupreset dictionary of a unit, its parameter values in `data`.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

@Suite struct AudioUnitClassInfoTests {
    static func delayUnit() throws -> AudioUnit {
        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: kAudioUnitSubType_Delay,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &desc))
        var unit: AudioUnit?
        try #require(AudioComponentInstanceNew(component, &unit) == noErr)
        return try #require(unit)
    }

    static func classInfo(_ unit: AudioUnit) throws -> [String: Any] {
        var info: Unmanaged<CFDictionary>?
        var size = UInt32(MemoryLayout<Unmanaged<CFDictionary>?>.size)
        try #require(AudioUnitGetProperty(unit, kAudioUnitProperty_ClassInfo, kAudioUnitScope_Global, 0, &info, &size) == noErr)
        return try #require(info?.takeRetainedValue() as? [String: Any])
    }

    static func setClassInfo(_ unit: AudioUnit, _ state: [String: Any]) -> OSStatus {
        var dict = NSDictionary(dictionary: state)
        return withUnsafePointer(to: &dict) {
            AudioUnitSetProperty(unit, kAudioUnitProperty_ClassInfo, kAudioUnitScope_Global, 0, UnsafeRawPointer($0),
                                 UInt32(MemoryLayout<NSDictionary>.size))
        }
    }

    /// The dictionary names the unit and holds its parameters in Apple's `data` layout (scope,
    /// element, count, then ID/value pairs, big-endian); restoring it brings a changed parameter
    /// back; a dictionary of another unit or a cut-short `data` is refused and changes nothing.
    @Test func classInfoSavesAndRestoresTheParameters() throws {
        let unit = try Self.delayUnit()
        defer { AudioComponentInstanceDispose(unit) }
        AudioUnitSetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 0.3, 0)
        let state = try Self.classInfo(unit)
        #expect((state[kAUPresetTypeKey] as? NSNumber)?.uint32Value == kAudioUnitType_Effect)
        #expect((state[kAUPresetSubtypeKey] as? NSNumber)?.uint32Value == kAudioUnitSubType_Delay)
        #expect((state[kAUPresetVersionKey] as? NSNumber)?.intValue == 0)
        let data = try #require(state[kAUPresetDataKey] as? Data)
        let words = stride(from: 0, to: data.count, by: 4).map { i in data[i..<i + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        #expect(words.count == 3 + 2 * 4 && words[0] == kAudioUnitScope_Global && words[1] == 0 && words[2] == 4)
        let pairs = Dictionary(uniqueKeysWithValues: stride(from: 3, to: words.count, by: 2).map { (words[$0], Float(bitPattern: words[$0 + 1])) })
        #expect(pairs[kDelayParam_DelayTime] == 0.3)

        AudioUnitSetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 1.5, 0)
        #expect(Self.setClassInfo(unit, state) == noErr)
        var value: AudioUnitParameterValue = 0
        AudioUnitGetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, &value)
        #expect(value == 0.3)

        var other = state
        other[kAUPresetSubtypeKey] = NSNumber(value: kAudioUnitSubType_Reverb2)
        AudioUnitSetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 1.5, 0)
        #expect(Self.setClassInfo(unit, other) == kAudioUnitErr_InvalidPropertyValue)
        var cut = state
        cut[kAUPresetDataKey] = data.prefix(data.count - 3)
        #expect(Self.setClassInfo(unit, cut) == kAudioUnitErr_InvalidPropertyValue)
        AudioUnitGetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, &value)
        #expect(value == 1.5, "refused dictionaries change nothing")
    }
}
