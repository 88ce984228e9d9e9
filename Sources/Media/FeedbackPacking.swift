import RTP

/// Packs a receiver's RTCP into datagrams, one media stream per datagram: that stream's report
/// block, then its feedback, sent from its m-section's own SSRC (as libwebrtc does).
///
/// An SFU may read a whole compound as one stream's. Janus looks up the RR's sender SSRC, then
/// the first report block's or the first NACK's media SSRC (never a PLI's), and serves only the
/// first NACK: with one sender SSRC and several streams in a compound it answered one stream's
/// NACKs and PLIs only, and a PLI sent alone or behind an RR without blocks was dropped (10 s
/// keyframe waits). So feedback always travels with its stream's report block, between regular
/// reports and with rtcp-rsize too. Without rtcp-rsize every datagram is a compound that starts
/// with an RR and carries SDES CNAME.
struct FeedbackPacking {
    var cname: String
    var reducedSize: Bool
    var maximumBytes: Int

    /// `feedback` and regular `reports` as datagrams. `block` gives the report block for a
    /// stream that has feedback but no regular block; `sender` the SSRC its RTCP goes out from.
    func datagrams(feedback: [RTCPPacket], reports: [RTCPReportBlock],
                   block: (UInt32) -> RTCPReportBlock?, sender: (UInt32) -> UInt32) -> [[UInt8]] {
        var order: [UInt32] = []
        var byStream: [UInt32: (feedback: [RTCPPacket], reports: [RTCPReportBlock])] = [:]
        for packet in feedback {
            let media = packet.mediaSSRC ?? 0
            if byStream[media] == nil { order.append(media) }
            byStream[media, default: ([], [])].feedback.append(packet)
        }
        for report in reports {
            if byStream[report.ssrc] == nil { order.append(report.ssrc) }
            byStream[report.ssrc, default: ([], [])].reports.append(report)
        }
        var datagrams: [[UInt8]] = []
        for media in order {
            guard var stream = byStream[media] else { continue }
            if stream.reports.isEmpty, let lead = block(media) { stream.reports = [lead] }
            datagrams += pack(stream.feedback, reports: stream.reports, from: sender(media))
        }
        return datagrams
    }

    /// One stream's feedback after an RR with its report block, split at the MTU.
    private func pack(_ feedback: [RTCPPacket], reports: [RTCPReportBlock], from sender: UInt32) -> [[UInt8]] {
        let compound = !reducedSize || !reports.isEmpty
        func head() -> [UInt8] {
            guard compound else { return [] }
            return RTCPPacket.receiverReport(ssrc: sender, reports: reports).serialized
                + RTCPPacket.sourceDescription(cnames: [sender: cname]).serialized
        }
        var datagrams: [[UInt8]] = []
        var current = head()
        for packet in feedback {
            let bytes = packet.serialized
            if !current.isEmpty && current.count + bytes.count > maximumBytes {
                datagrams.append(current)
                current = reducedSize ? [] : head()
            }
            current += bytes
        }
        if !current.isEmpty { datagrams.append(current) }
        return datagrams
    }
}
