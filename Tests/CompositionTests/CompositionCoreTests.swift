import CodecBindings
@testable import Composition
import Testing

/// The composition's pure parts: the grid, fitting a picture without stretching, the mixer's
/// limiter, and placing a scaled picture on the canvas.
struct CompositionCoreTests {
    @Test func theGridFollowsTheNumberOfSenders() {
        #expect(GridLayout.cells(count: 1, width: 1280, height: 720) == [Rectangle(x: 0, y: 0, width: 1280, height: 720)])
        #expect(GridLayout.cells(count: 4, width: 1280, height: 720) == [
            Rectangle(x: 0, y: 0, width: 640, height: 360), Rectangle(x: 640, y: 0, width: 640, height: 360),
            Rectangle(x: 0, y: 360, width: 640, height: 360), Rectangle(x: 640, y: 360, width: 640, height: 360),
        ])
        let three = GridLayout.cells(count: 3, width: 1280, height: 720)
        #expect(three.count == 3 && three[2] == Rectangle(x: 320, y: 360, width: 640, height: 360), "a short last row is centred: \(three)")
        for count in 1...30 {
            let cells = GridLayout.cells(count: count, width: 1280, height: 720)
            #expect(cells.count == count)
            for cell in cells {
                #expect(cell.x >= 0 && cell.y >= 0 && cell.x + cell.width <= 1280 && cell.y + cell.height <= 720 && cell.x % 2 == 0 && cell.width % 2 == 0)
            }
            for (a, b) in zip(cells, cells.dropFirst()) where a.y == b.y { #expect(a.x + a.width <= b.x, "cells overlap: \(a) \(b)") }
        }
    }

    @Test func theSpeakerIsLargeAndTheOthersSitInARowBelow() throws {
        #expect(SpeakerLayout.cells(count: 0, width: 1280, height: 720) == nil)
        let alone = try #require(SpeakerLayout.cells(count: 1, width: 1280, height: 720))
        #expect(alone.speaker == Rectangle(x: 0, y: 0, width: 1280, height: 720) && alone.others.isEmpty)
        let four = try #require(SpeakerLayout.cells(count: 4, width: 1280, height: 720))
        #expect(four.speaker == Rectangle(x: 0, y: 0, width: 1280, height: 540))
        #expect(four.others == [Rectangle(x: 160, y: 540, width: 320, height: 180), Rectangle(x: 480, y: 540, width: 320, height: 180),
                                Rectangle(x: 800, y: 540, width: 320, height: 180)], "\(four.others)")
        for count in 2...40 {
            let cells = try #require(SpeakerLayout.cells(count: count, width: 1280, height: 720))
            #expect(cells.others.count == count - 1)
            for cell in cells.others {
                #expect(cell.x >= 0 && cell.x + cell.width <= 1280 && cell.y + cell.height <= 720 && cell.width >= 2 && cell.x % 2 == 0 && cell.width % 2 == 0)
            }
        }
    }

    /// 20 ms slots of levels, `seconds` long.
    func run(_ selector: inout SpeakerSelector, seconds: Double, _ levels: [(String, Double)]) -> [String?] {
        (0..<Int(seconds * 50)).map { _ in selector.update(levels: levels.map { (id: $0.0, dBFS: $0.1) }) }
    }

    @Test func theSpeakerChangesOnlyForSustainedSpeechAndAtOnceWhenTheyLeave() {
        var selector = SpeakerSelector()
        // All silent: the first to join.
        #expect(run(&selector, seconds: 0.2, [("A", -120), ("B", -120)]).last == "A")
        // B speaks: after about a second (smoothing plus the hold), not before.
        let switching = run(&selector, seconds: 3, [("A", -120), ("B", -20)])
        let first = switching.firstIndex { $0 == "B" } ?? -1
        #expect((50...100).contains(first), "B took over after \(first) slots")
        #expect(switching.suffix(from: max(0, first)).allSatisfy { $0 == "B" })
        // A coughs for half a second, louder than B: B stays.
        #expect(run(&selector, seconds: 0.5, [("A", -6), ("B", -20)]).allSatisfy { $0 == "B" })
        // Both talk at about the same level: no flapping.
        #expect(run(&selector, seconds: 5, [("A", -22), ("B", -20)]).allSatisfy { $0 == "B" })
        // B leaves: A at once, even quiet.
        #expect(selector.update(levels: [(id: "A", dBFS: -60)]) == "A")
        #expect(selector.update(levels: []) == nil)
    }

    @Test func aLevelIsTheRMSInDecibelsBelowFullScale() {
        #expect(SpeakerSelector.level([]) == -120 && SpeakerSelector.level([0, 0, 0]) == -120)
        #expect(abs(SpeakerSelector.level([Int16](repeating: 16_384, count: 960)) - -6.02) < 0.01)
        #expect(abs(SpeakerSelector.level([32_767, -32_768]) - 0) < 0.01)
    }

    @Test func aPictureIsFittedNeverStretched() {
        let cell = Rectangle(x: 640, y: 0, width: 640, height: 720)
        #expect(GridLayout.fit(width: 320, height: 240, in: cell) == Rectangle(x: 640, y: 120, width: 640, height: 480))
        #expect(GridLayout.fit(width: 360, height: 640, in: Rectangle(x: 0, y: 0, width: 640, height: 360)) == Rectangle(x: 218, y: 0, width: 202, height: 360))
    }

    @Test func theMixerNeverClipsAndRecoversSlowly() {
        var mixer = AudioMixer()
        let loud = [Int16](repeating: 30_000, count: 1_920)
        let quiet = [Int16](repeating: 1_000, count: 1_920)
        let mixed = mixer.mix([loud, loud, loud], samples: 1_920)
        #expect(mixed.allSatisfy { Int32($0) <= AudioMixer.fullScale }, "three loud senders stay within full scale")
        #expect(mixed.first == mixed.last, "a drop applies from the frame's first sample")
        // Quiet again: the gain climbs back over about a second, never jumping to 1 at once.
        let next = mixer.mix([quiet], samples: 1_920)
        #expect(next.last! < 1_000 && next.last! > next.first!, "ramped, not stepped: \(next.first!)…\(next.last!)")
        for _ in 0..<60 { _ = mixer.mix([quiet], samples: 1_920) }
        #expect(mixer.mix([quiet], samples: 1_920).allSatisfy { $0 == 1_000 }, "back to unity gain")
        var alone = AudioMixer()
        #expect(alone.mix([quiet, quiet], samples: 1_920).allSatisfy { $0 == 2_000 }, "below full scale: a plain sum")
    }

    @Test func aPlacedPictureLandsInItsRectangleOnly() {
        var canvas = I420Image(width: 64, height: 48)
        canvas.fill(x: 0, y: 0, width: 64, height: 48)
        var white = I420Image(width: 16, height: 12)
        for index in white.y.indices { white.y[index] = 235 }
        canvas.place(white, x: 32, y: 24, width: 32, height: 24)
        #expect(canvas.y[24 * 64 + 32] == 235 && canvas.y[47 * 64 + 63] == 235, "inside")
        #expect(canvas.y[23 * 64 + 32] == 16 && canvas.y[24 * 64 + 31] == 16, "outside stays black")
    }
}
