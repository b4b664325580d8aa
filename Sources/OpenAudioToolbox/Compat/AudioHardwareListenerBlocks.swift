// AudioObjectAddPropertyListenerBlock / AudioObjectRemovePropertyListenerBlock (AudioHardware.h):
// the block form of the HAL's property listeners, called on the dispatch queue the caller names,
// for the same changes as AudioObjectAddPropertyListener (AudioHardwareListeners.swift).

import OATCore
import Dispatch
import Synchronization

/// Called when properties of an object change (Apple's `AudioObjectPropertyListenerBlock`): the
/// number of changed addresses and the addresses (valid during the call).
public typealias AudioObjectPropertyListenerBlock = (UInt32, UnsafePointer<AudioObjectPropertyAddress>) -> Void

/// The registered blocks: object, address, queue and the notifier's token for each.
private struct ListenerBlockEntry {
    var object: AudioObjectID
    var address: AudioObjectPropertyAddress
    var queue: ObjectIdentifier?
    var token: UInt
}

private let listenerBlocks = Locked<(entries: [ListenerBlockEntry], next: UInt)>(([], 1 << 62))

/// Registers a block to be called when the properties `inAddress` names change (Apple's
/// `AudioObjectAddPropertyListenerBlock`): the same changes as
/// ``AudioObjectAddPropertyListener(_:_:_:_:)`` (the system object's device list and defaults, a
/// device's `DeviceIsAlive`; PulseAudio's events). The block runs asynchronously on
/// `inDispatchQueue`, or on the HAL's notification thread when it is nil (never a render thread).
@discardableResult
public func AudioObjectAddPropertyListenerBlock(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                                _ inDispatchQueue: DispatchQueue?,
                                                _ inListener: @escaping AudioObjectPropertyListenerBlock) -> OSStatus {
    guard HAL.exists(inObjectID) else { return kAudioHardwareBadObjectError }
    let address = inAddress.pointee
    let token = listenerBlocks.withLock { state -> UInt in
        let token = state.next
        state.next += 1
        state.entries.append(ListenerBlockEntry(object: inObjectID, address: address, queue: inDispatchQueue.map(ObjectIdentifier.init), token: token))
        return token
    }
    let block = UncheckedSendable(inListener)
    HALNotifier.add(HALNotifier.Entry(object: inObjectID, address: address, clientData: token) { _, addresses in
        let call: @Sendable () -> Void = {
            addresses.withUnsafeBufferPointer { block.value(UInt32($0.count), $0.baseAddress!) }
        }
        guard let queue = inDispatchQueue else { call(); return }
        // Removed while the call waited on the queue: not called.
        queue.async { if listenerBlocks.withLock({ $0.entries.contains { $0.token == token } }) { call() } }
    })
    return noErr
}

/// Removes a block registered with the same object, address and queue (Apple's
/// `AudioObjectRemovePropertyListenerBlock`). Different: Swift closures have no identity, so
/// the block is not compared; the earliest registration with that object, address and queue
/// is removed. `kAudioHardwareIllegalOperationError` when there is none.
@discardableResult
public func AudioObjectRemovePropertyListenerBlock(_ inObjectID: AudioObjectID, _ inAddress: UnsafePointer<AudioObjectPropertyAddress>,
                                                   _ inDispatchQueue: DispatchQueue?,
                                                   _ inListener: @escaping AudioObjectPropertyListenerBlock) -> OSStatus {
    _ = inListener
    let address = inAddress.pointee
    let queue = inDispatchQueue.map(ObjectIdentifier.init)
    let token = listenerBlocks.withLock { state -> UInt? in
        guard let i = state.entries.firstIndex(where: { $0.object == inObjectID && $0.address == address && $0.queue == queue }) else { return nil }
        return state.entries.remove(at: i).token
    }
    guard let token else { return kAudioHardwareIllegalOperationError }
    HALNotifier.remove(object: inObjectID, address: address, clientData: token)
    return noErr
}
