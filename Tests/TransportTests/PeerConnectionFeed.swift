@testable import PeerConnection
import WireCoding

extension PeerConnectionCore {
    /// One input and everything the core queued for it, gathered as one batch (what a driver's
    /// poll loop would have done, in the order it would have done it, by kind).
    func feed(_ input: PeerConnectionInput, now: MonotonicTime) -> TransportOutput {
        handle(input, now: now)
        var output = TransportOutput()
        while let item = poll() {
            switch item {
            case .transmit(let datagram): output.datagrams.append(datagram)
            case .streamWrite(let write): output.streamWrites.append(write)
            case .closeStream(let link): output.streamsToClose.append(link)
            case .event(let event): output.events.append(event)
            }
        }
        return output
    }
}
