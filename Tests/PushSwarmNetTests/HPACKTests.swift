import Testing
@testable import PushSwarmNet

/// HPACK (RFC 7541) against the RFC's own examples (Appendix C), and a decoder that refuses what
/// a hostile peer can send (section 5, section 7, RFC 9113's header list limit).
@Suite struct HPACKTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static func fields(_ pairs: [(String, String)]) -> [HeaderField] { pairs.map { HeaderField($0.0, $0.1) } }

    /// C.1: "10" in a 5-bit prefix is one octet; 1337 in a 5-bit prefix is 1f 9a 0a; 42 in an
    /// 8-bit prefix (starting at an octet boundary) is 2a.
    @Test func integersAreWrittenAndReadAsAppendixC1Shows() throws {
        for (value, prefix, hex) in [(10, 5, "0a"), (1337, 5, "1f9a0a"), (42, 8, "2a")] {
            var out: [UInt8] = []
            HPACKWriter.integer(value, prefix: prefix, flags: 0, into: &out)
            #expect(out == Self.bytes(hex), "\(value)")
            var reader = HPACKReader(bytes: out)
            #expect(try reader.integer(prefix: prefix) == value)
        }
    }

    /// C.2: one representation of each kind, and what each leaves in the dynamic table.
    @Test func eachRepresentationOfAppendixC2Decodes() throws {
        var decoder = HPACKDecoder()
        // C.2.1 "Literal Header Field with Indexing": added, 55 octets.
        #expect(try decoder.decode(Self.bytes("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")) == Self.fields([("custom-key", "custom-header")]))
        #expect(decoder.dynamicTableSize == 55)
        // C.2.2 "without Indexing" and C.2.3 "Never Indexed": not added.
        var other = HPACKDecoder()
        #expect(try other.decode(Self.bytes("040c 2f73 616d 706c 652f 7061 7468")) == Self.fields([(":path", "/sample/path")]))
        #expect(try other.decode(Self.bytes("1008 7061 7373 776f 7264 0673 6563 7265 74")) == Self.fields([("password", "secret")]))
        #expect(other.dynamicTableCount == 0)
        // C.2.4 "Indexed Header Field".
        #expect(try other.decode([0x82]) == Self.fields([(":method", "GET")]))
    }

    static let requests: [[(String, String)]] = [
        [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
        [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"), ("cache-control", "no-cache")],
        [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"), ("custom-key", "custom-value")],
    ]

    /// C.4: three requests on one connection, Huffman-coded. The encoder writes the RFC's very
    /// octets (its choices match the example's), and the decoder reads them back with the
    /// dynamic table at the RFC's sizes: 57, 110, 164.
    @Test func theRequestsOfAppendixC4EncodeToTheRFCsOctetsAndDecode() throws {
        let blocks = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ]
        var encoder = HPACKEncoder()
        var decoder = HPACKDecoder()
        for ((request, block), size) in zip(zip(Self.requests, blocks), [57, 110, 164]) {
            #expect(encoder.encode(Self.fields(request)) == Self.bytes(block))
            #expect(try decoder.decode(Self.bytes(block)) == Self.fields(request))
            #expect(decoder.dynamicTableSize == size && encoder.dynamicTableSize == size)
        }
    }

    /// C.6: three responses, Huffman-coded, with a 256-octet table: entries are evicted oldest
    /// first (sizes 222, 222, 215), and the third response's fields index what is left.
    @Test func theResponsesOfAppendixC6EvictAsTheRFCSays() throws {
        var decoder = HPACKDecoder(maxTableSize: 256)
        let blocks = [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ]
        let date = "Mon, 21 Oct 2013 20:13:21 GMT"
        let responses: [[(String, String)]] = [
            [(":status", "302"), ("cache-control", "private"), ("date", date), ("location", "https://www.example.com")],
            [(":status", "307"), ("cache-control", "private"), ("date", date), ("location", "https://www.example.com")],
            [(":status", "200"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT"), ("location", "https://www.example.com"),
             ("content-encoding", "gzip"), ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1")],
        ]
        for ((block, response), (size, count)) in zip(zip(blocks, responses), [(222, 4), (222, 4), (215, 3)]) {
            #expect(try decoder.decode(Self.bytes(block)) == Self.fields(response))
            #expect(decoder.dynamicTableSize == size && decoder.dynamicTableCount == count)
        }
    }

    /// Appendix B's code is a prefix code over all 257 symbols, and every octet survives a
    /// round trip; the encoder indexes a device's repeated fields, never its secrets, and a
    /// decoder in step reads whatever it wrote, across a smaller table the peer asked for.
    @Test func anyOctetsAndFieldsSurviveARoundTrip() throws {
        #expect(HPACKTables.huffman.count == 257 && HPACKTables.staticTable.count == 61)
        var codes = Set<UInt64>()
        for entry in HPACKTables.huffman { codes.insert(UInt64(entry.bits) << 32 | UInt64(entry.code)) }
        #expect(codes.count == 257)
        let all = (0...255).map { UInt8($0) }
        var coded: [UInt8] = []
        HPACKHuffman.encode(all, into: &coded)
        #expect(coded.count == HPACKHuffman.encodedLength(all))
        #expect(try HPACKHuffman.decode(coded) == all)

        var encoder = HPACKEncoder()
        var decoder = HPACKDecoder()
        let request = Self.fields([
            (":method", "POST"), (":scheme", "https"), (":path", "/events?id=1"), (":authority", "api.example.com"),
            ("user-agent", "okhttp/4.12.0"), ("content-type", "application/json"), ("authorization", "Bearer abc"), ("content-length", "381"),
        ])
        let first = encoder.encode(request)
        #expect(try decoder.decode(first) == request)
        let second = encoder.encode(request)
        #expect(try decoder.decode(second) == request)
        #expect(second.count < first.count / 2, "the repeated fields cost an octet each: \(first.count) then \(second.count)")
        #expect(second.contains(0x10) || second.contains(0x1F), "authorization never indexed (0001 prefix)")
        encoder.peerTableSize(64)
        let shrunk = encoder.encode(request)
        #expect(shrunk.first.map { $0 & 0xE0 == 0x20 } == true, "a size update opens the block after the peer's change")
        #expect(try decoder.decode(shrunk) == request && decoder.dynamicTableSize <= 64)
    }

    /// What a hostile peer can send: each is refused as the error it is, never a trap.
    @Test func aHostileBlockIsRefusedByName() {
        func refusal(_ hex: String, _ decoder: HPACKDecoder = HPACKDecoder()) -> HPACKError? {
            var decoder = decoder
            do {
                _ = try decoder.decode(Self.bytes(hex))
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal("80") == .invalidIndex(0), "2.3.3: index 0")
        #expect(refusal("be") == .invalidIndex(62), "past an empty dynamic table")
        #expect(refusal("ff ff ff ff ff 0f") == .integerTooLarge)
        #expect(refusal("ff 80 80 80 80 80 80 80 80 80 01") == .integerTooLarge, "continuation octets without end")
        #expect(refusal("40 0a 63") == .truncated, "a string longer than the block")
        #expect(refusal("41") == .truncated)
        // 5.2: 8 bits of ones are padding longer than 7; EOS (30 ones) inside a string.
        #expect(refusal("00 81 ff 00") == .invalidHuffman)
        #expect(refusal("00 84 ff ff ff ff 00") == .invalidHuffman)
        // 0x1f's code is 28 bits starting 1111 1111 1111 1111 1111 1111 1011: padding of zeros.
        #expect(refusal("00 81 00 00") == .invalidHuffman, "padding not of ones (the first symbols '0' are 5 zero bits, 3 zeros left)")
        // 6.3: a size update above the setting, or after a field.
        #expect(refusal("3f e1 1f") == nil, "a size update to the setting itself (4,096) is allowed")
        #expect(refusal("3f e2 1f") == .invalidTableSizeUpdate(4_097))
        #expect(refusal("82 20") == .invalidTableSizeUpdate(0))
        // An indexed field repeated: a 4,000-octet entry named a hundred times is 400 KB of
        // headers from a 4 KB block (the list limit is 65,536).
        var bomb = Self.bytes("40 01 78 7f a1 1e") + Array(repeating: UInt8(ascii: "a"), count: 4_000)
        bomb += Array(repeating: 0xBE, count: 100)
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.headerListTooLarge(limit: 65_536)) { _ = try decoder.decode(bomb) }
    }
}
