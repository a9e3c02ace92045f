import PushSwarmSystem
import Testing

/// The fenced place's safe APIs: each answers as the plain code it stands for, and each refuses
/// (stops the process, in release builds too) a range outside its storage instead of reading or
/// writing past it.
@Suite struct ByteSpanTests {
    @Test func wordsAreReadLittleEndianAndBigEndianAtAnyOffset() {
        let bytes: [UInt8] = Array(1...20)
        for offset in 0...12 {
            var expected: UInt64 = 0
            for index in 0..<8 { expected |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            let fromSpan = bytes.span.littleEndianWord(at: offset)
            let fromArray = bytes.littleEndianWord(at: offset)
            let bigEndian = bytes.span.bigEndianWord(at: offset)
            #expect(fromSpan == expected)
            #expect(fromArray == expected)
            #expect(bigEndian == expected.byteSwapped)
        }
    }

    @Test func aShortSpanIsItsBytesAsTheLowBytesOfAWord() {
        let bytes: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        for length in 0...8 {
            var expected: UInt64 = 0
            for index in 0..<length { expected |= UInt64(bytes[index]) << (8 * UInt64(index)) }
            let word = bytes.span.extracting(0..<length).shortLittleEndianWord()
            #expect(word == expected, "\(length) bytes")
        }
    }

    @Test func spansAreEqualExactlyWhenTheirBytesAre() {
        var random = SystemRandomNumberGenerator()
        for length in 0...48 {
            let left = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let same = left.span.bytesEqual(left.span)
            let longer = left + [0]
            let withMore = left.span.bytesEqual(longer.span)
            #expect(same)
            #expect(!withMore)
            for place in 0..<length {
                var right = left
                right[place] ^= 1
                let equal = left.span.bytesEqual(right.span)
                #expect(!equal, "\(length) bytes, differing at \(place)")
            }
        }
    }

    @Test func stringsLendTheirUTF8InPlaceShortOrLong() {
        for text in ["", "a", "héllo", String(repeating: "x", count: 15), String(repeating: "yz", count: 40)] {
            let bytes = text.withUTF8Span { Array(decodingSpan: $0) }
            #expect(bytes == Array(text.utf8))
            let decoded = String(decodingUTF8: bytes.span)
            #expect(decoded == text)
        }
    }

    @Test func storesLandWhereTheySay() {
        var bytes = [UInt8](repeating: 0, count: 12)
        do {
            var span = bytes.mutableSpan
            span.storeLittleEndian(UInt32(0x0403_0201), at: 1)
            span.copy([9, 8, 7].span, to: 9)
        }
        #expect(bytes == [0, 1, 2, 3, 4, 0, 0, 0, 0, 9, 8, 7])
    }

    @Test func aWordPastTheEndStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let bytes: [UInt8] = Array(repeating: 1, count: 10)
            _ = bytes.span.littleEndianWord(at: 3)
        }
    }

    @Test func aCopyPastTheEndStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            var bytes = [UInt8](repeating: 0, count: 4)
            var span = bytes.mutableSpan
            span.copy([1, 2, 3].span, to: 2)
        }
    }
}

@Suite struct ByteWriterTests {
    @Test func appendsComeOutInOrderAcrossGrowth() {
        var writer = ByteWriter(capacity: 4)
        var expected: [UInt8] = []
        for round in 0..<200 {
            let piece = (0..<(round % 19)).map { UInt8(truncatingIfNeeded: round &+ $0) }
            switch round % 5 {
            case 0:
                writer.append(piece.span)
                expected += piece
            case 1:
                writer.appendQuoted(piece.span)
                expected += [34] + piece + [34]
            case 2:
                writer.append(UInt8(round & 0x7F), 44)
                expected += [UInt8(round & 0x7F), 44]
            case 3:
                writer.append(repeating: 32, count: round % 7)
                expected += Array(repeating: 32, count: round % 7)
            default:
                writer.appendQuoted(piece.span, leading: round % 2 == 0 ? 44 : nil, trailing: 58)
                expected += (round % 2 == 0 ? [44] : []) + [34] + piece + [34, 58]
            }
            #expect(writer.count == expected.count)
        }
        #expect(writer.bytes == expected)
        #expect(writer.takeBytes() == expected)
        #expect(writer.count == 0)
    }

    /// All of an inline array is stored at once; only the bytes kept count, and what follows
    /// overwrites the rest.
    @Test func aPrefixOfAnInlineArrayKeepsOnlyItsLength() {
        var head = InlineArray<8, UInt8>(repeating: 0xEE)
        head[0] = 1
        head[1] = 2
        var writer = ByteWriter(capacity: 0)
        writer.append(prefix: 2, of: head)
        writer.append(3)
        writer.append(prefix: 1, of: head, thenQuoted: [7].span)
        writer.append([5].span, thenQuoted: [6].span)
        #expect(writer.bytes == [1, 2, 3, 1, 34, 7, 34, 5, 34, 6, 34])
    }

    @Test func aPrefixLongerThanItsArrayStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            var writer = ByteWriter(capacity: 16)
            writer.append(prefix: 9, of: InlineArray<8, UInt8>(repeating: 0))
        }
    }
}

@Suite struct DeadlineHeapTests {
    final class Timer: DeadlineHeapMember {
        let deadline: UInt64
        var heapIndex = -1
        init(_ deadline: UInt64) { self.deadline = deadline }
    }

    @Test func membersLeaveInDeadlineOrderAndRemovedOnesNeverDo() {
        var generator = SystemRandomNumberGenerator()
        var heap = DeadlineHeap<Timer>()
        var live: [Timer] = []
        for _ in 0..<500 {
            let timer = Timer(UInt64.random(in: 0..<1_000, using: &generator))
            heap.push(timer)
            live.append(timer)
            #expect(timer.heapIndex >= 0)
        }
        for index in stride(from: 0, to: live.count, by: 3) {
            heap.remove(live[index])
            #expect(live[index].heapIndex == -1)
        }
        let removed = Set(stride(from: 0, to: live.count, by: 3).map { ObjectIdentifier(live[$0]) })
        var last: UInt64 = 0
        var popped = 0
        while let timer = heap.popDue(now: .max) {
            #expect(timer.deadline >= last)
            #expect(!removed.contains(ObjectIdentifier(timer)))
            #expect(timer.heapIndex == -1)
            last = timer.deadline
            popped += 1
        }
        #expect(popped == live.count - removed.count)
        #expect(heap.popDue(now: .max) == nil)
    }

    @Test func nothingIsDueBeforeItsDeadline() {
        var heap = DeadlineHeap<Timer>()
        heap.push(Timer(50))
        #expect(heap.popDue(now: 49) == nil)
        #expect(heap.nextDeadline == 50)
        #expect(heap.popDue(now: 50)?.deadline == 50)
    }

    /// The heap owns one reference to each member and gives it back when emptied.
    @Test func emptyingTheHeapReleasesItsMembers() {
        var heap = DeadlineHeap<Timer>()
        weak var gone: Timer?
        do {
            let timer = Timer(5)
            gone = timer
            heap.push(timer)
        }
        #expect(gone != nil)
        heap.removeAll()
        #expect(gone == nil)
    }
}
