import Testing
@testable import WebM
import WebMReader

/// A file cut short anywhere after its first cluster still yields every complete cluster.
@Suite struct TruncationTests {
    @Test func everyCutOffsetYieldsEveryCompleteCluster() throws {
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: 1, seconds: 2, width: 64, height: 48, fps: 15,
                                              keyframeInterval: 8)
        let (live, final, _) = try stream.mux(maxClusterDurationMilliseconds: 400)
        let reference = WebMReader.parse(final)
        #expect(reference.isComplete)
        let clusters = reference.clusters
        #expect(clusters.count >= 5)
        let firstClusterEnd = Int(try #require(reference.elements.first { $0.id == ElementID.cluster }).position)
            + Int(clusterLength(reference, clusters[0]))

        // Both the still-recording file (unknown Segment size) and a finalized one cut short.
        for (name, bytes) in [("live", live), ("finalized", final)] {
            for cut in firstClusterEnd...bytes.count {
                let parsed = WebMReader.parse(Array(bytes[0..<cut]))
                #expect(!parsed.isParseError, "\(name) cut at \(cut): parse error \(parsed.status)")
                let expected = clusters.filter { Int($0.position) + Int(clusterLength(reference, $0)) <= cut }
                let complete = parsed.completeClusters
                if complete.count != expected.count {
                    Issue.record("\(name) cut at \(cut): \(complete.count) complete clusters, expected \(expected.count)")
                    return
                }
                for (got, want) in zip(complete, expected) where got.frames != want.frames || got.position != want.position {
                    Issue.record("\(name) cut at \(cut): cluster at \(want.position) differs")
                    return
                }
            }
        }
    }

    private func clusterLength(_ parsed: WebMParsedFile, _ cluster: WebMParsedFile.Cluster) -> UInt64 {
        guard let element = parsed.elements.first(where: { $0.id == ElementID.cluster && $0.position == cluster.position }),
              let size = element.size else { return .max / 2 }
        return UInt64(element.headerSize) + size
    }
}
