import OATUnits
import Synchronization

/// A music device for tests of sequencers: it writes velocity/127 on the frame of each note-on
/// (silence otherwise), so the frame a note landed on is exact, and counts the other messages.
public final class ImpulseInstrument: MusicDeviceNode, @unchecked Sendable {
    private var pending: Float = 0
    /// Program changes received.
    public let programChanges = Atomic<Int>(0)
    /// Note-offs (and note-ons of velocity 0) received.
    public let noteOffs = Atomic<Int>(0)
    /// All Notes Off controllers (123) received.
    public let allNotesOff = Atomic<Int>(0)

    /// The last instrument made (for tests that get one through a component factory).
    nonisolated(unsafe) public static var last: ImpulseInstrument?

    /// Creates an instrument (and makes it ``last``).
    public init() {
        super.init(name: "impulse instrument")
        Self.last = self
    }

    /// Counts the message; a note-on arms the impulse.
    public override func handle(_ event: MIDIChannelEvent) {
        switch event.status & 0xF0 {
        case 0x90 where event.data2 > 0: pending = Float(event.data2) / 127
        case 0x80, 0x90: noteOffs.add(1, ordering: .relaxed)
        case 0xC0: programChanges.add(1, ordering: .relaxed)
        case 0xB0 where event.data1 == 123: allNotesOff.add(1, ordering: .relaxed)
        default: break
        }
    }

    /// Silence, with the armed impulse on the part's first frame.
    public override func synthesize(into output: AUBufferList, from: Int, count: Int) {
        for c in 0..<output.channelCount {
            (output[c] + from).update(repeating: 0, count: count)
            if pending > 0, count > 0 { output[c][from] = pending }
        }
        if count > 0 { pending = 0 }
    }
}
