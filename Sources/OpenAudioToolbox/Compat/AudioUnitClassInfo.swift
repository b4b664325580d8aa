// `kAudioUnitProperty_ClassInfo`: a unit's state as the property-list dictionary Apple's units
// save in .aupreset files (and AUAudioUnit's `fullState` bridges to). The keys are those of
// Apple's AudioUnitProperties.h (`kAUPresetVersionKey` "version", "type", "subtype",
// "manufacturer", "name", "data"); `data` holds the parameter values in the layout of Apple's
// published AudioUnitSDK (AUBase/AUScope/AUElement SaveState): for each scope and element with
// parameters, big-endian UInt32 scope, element and count, then count pairs of big-endian UInt32
// parameter ID and the Float32 value's bits.

import OATCore
import OATUnits
import Foundation

/// The class-info dictionary of a unit: its description, version 0, the name of its present
/// state (`"Untitled"`) and its parameter values.
func classInfo(_ unit: CompatUnit) -> NSDictionary {
    var data = Data()
    func append(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { data.append(contentsOf: $0) } }
    let parameters = unit.node?.parameters ?? []
    for scope in [AUScope.global, .input, .output] {
        let inScope = parameters.filter { $0.scope == scope }
        for element in Set(inScope.map(\.element)).sorted() {
            let ps = inScope.filter { $0.element == element }
            append(scope.rawValue)
            append(UInt32(element))
            append(UInt32(ps.count))
            for p in ps {
                append(p.id)
                append(p.value.bitPattern)
            }
        }
    }
    let d = unit.component.description
    return [kAUPresetVersionKey: NSNumber(value: 0),
            kAUPresetTypeKey: NSNumber(value: d.componentType),
            kAUPresetSubtypeKey: NSNumber(value: d.componentSubType),
            kAUPresetManufacturerKey: NSNumber(value: d.componentManufacturer),
            kAUPresetNameKey: unit.presetName,
            kAUPresetDataKey: data] as NSDictionary
}

/// A number of a property list (NSNumber, or a Swift integer bridged in a dictionary).
private func plistNumber(_ v: Any?) -> Int64? {
    switch v {
    case let n as NSNumber: return n.int64Value
    case let i as Int: return Int64(i)
    case let i as Int64: return i
    case let u as UInt32: return Int64(u)
    case let i as Int32: return Int64(i)
    default: return nil
    }
}

/// Restores a unit from a class-info dictionary: the description must be the unit's and the
/// version 0 (else `kAudioUnitErr_InvalidPropertyValue`, as Apple's units answer); each
/// parameter in `data` the unit has is set (clamped to its range; others are skipped, as
/// Apple's); a `data` cut short is refused before anything is set.
func restoreClassInfo(_ unit: CompatUnit, _ dict: NSDictionary) -> OSStatus {
    let info = dict as? [String: Any] ?? [:]
    let d = unit.component.description
    guard plistNumber(info[kAUPresetVersionKey]) == 0,
          plistNumber(info[kAUPresetTypeKey]).map({ UInt32(truncatingIfNeeded: $0) }) == d.componentType,
          plistNumber(info[kAUPresetSubtypeKey]).map({ UInt32(truncatingIfNeeded: $0) }) == d.componentSubType,
          plistNumber(info[kAUPresetManufacturerKey]).map({ UInt32(truncatingIfNeeded: $0) }) == d.componentManufacturer
    else { return kAudioUnitErr_InvalidPropertyValue }
    var values: [(scope: UInt32, element: UInt32, id: UInt32, value: Float)] = []
    if let raw = info[kAUPresetDataKey] {
        guard let data = (raw as? Data) ?? (raw as? NSData).map({ Data(referencing: $0) }) else { return kAudioUnitErr_InvalidPropertyValue }
        let bytes = [UInt8](data)
        var offset = 0
        func next() -> UInt32? {
            guard offset + 4 <= bytes.count else { return nil }
            defer { offset += 4 }
            return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        while offset < bytes.count {
            guard let scope = next(), let element = next(), let count = next(), Int(count) <= (bytes.count - offset) / 8 else {
                return kAudioUnitErr_InvalidPropertyValue
            }
            for _ in 0..<count {
                guard let id = next(), let bits = next() else { return kAudioUnitErr_InvalidPropertyValue }
                values.append((scope, element, id, Float(bitPattern: bits)))
            }
        }
    }
    for v in values {
        guard let p = unit.node?.parameter(id: v.id, scope: AUScope(rawValue: v.scope) ?? .global, element: Int(v.element)), !v.value.isNaN else { continue }
        p.value = v.value
        unit.parameterValues[CompatUnit.ParamKey(id: v.id, scope: v.scope, element: v.element)] = p.value
        unit.hostLink?.host?._audioUnitParameterDidChange(v.id, scope: v.scope, element: v.element, value: p.value)
    }
    if let name = info[kAUPresetNameKey] as? String { unit.presetName = name }
    return noErr
}

/// Reads `kAudioUnitProperty_ClassInfo` into `outData`: the dictionary handed over +1, as
/// Apple's (read it into a `CFDictionary?` or `Unmanaged<CFDictionary>?`).
func getClassInfo(_ unit: CompatUnit, _ outData: UnsafeMutableRawPointer, _ ioDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard Int(ioDataSize.pointee) >= MemoryLayout<UnsafeRawPointer>.size else { return kAudio_ParamError }
    outData.storeBytes(of: Unmanaged.passRetained(classInfo(unit)).toOpaque(), as: UnsafeMutableRawPointer.self)
    ioDataSize.pointee = UInt32(MemoryLayout<UnsafeRawPointer>.size)
    return noErr
}

/// Sets `kAudioUnitProperty_ClassInfo` from `inData`, a pointer to a dictionary reference
/// (`&dictionary` with a `CFDictionary`/`NSDictionary` variable).
func setClassInfo(_ unit: CompatUnit, _ inData: UnsafeRawPointer?, _ inDataSize: UInt32) -> OSStatus {
    guard let inData, Int(inDataSize) >= MemoryLayout<UnsafeRawPointer>.size,
          let object = inData.loadUnaligned(as: UnsafeRawPointer?.self) else { return kAudio_ParamError }
    guard let dict = Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue() as? NSDictionary else {
        return kAudioUnitErr_InvalidPropertyValue
    }
    return restoreClassInfo(unit, dict)
}
