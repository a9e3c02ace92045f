/// HPACK (RFC 7541): HTTP/2's header compression, both directions of one connection.
///
/// A header block is a sequence of representations, each an index into the static table
/// (Appendix A) or the connection's dynamic table, or a literal name and value, which may be
/// Huffman-coded (Appendix B) and may be added to the dynamic table. Each end keeps the other's
/// table in step: the decoder the table of the peer's encoder, sized by the decoder's own
/// SETTINGS_HEADER_TABLE_SIZE; the encoder the one the peer decodes with, sized by the peer's.

/// One header field as HPACK carries it: octets, not text (a value may hold any octet).
public struct HeaderField: Equatable, Sendable {
    public var name: [UInt8]
    public var value: [UInt8]

    public init(name: [UInt8], value: [UInt8]) {
        self.name = name
        self.value = value
    }

    public init(_ name: String, _ value: String) {
        self.init(name: Array(name.utf8), value: Array(value.utf8))
    }

    /// Section 4.1: "the sum of its name's length in octets ..., its value's length in octets,
    /// and 32".
    public var size: Int { name.count + value.count + 32 }
}

/// Why a header block could not be decoded: each is HTTP/2's COMPRESSION_ERROR, a connection
/// error (RFC 9113 section 4.3), named by what was wrong.
public enum HPACKError: Error, Equatable, Sendable {
    /// The block ended inside a representation.
    case truncated
    /// An integer past 2^31 - 1 (section 5.1 sets no limit; a decoder must).
    case integerTooLarge
    /// Index 0, or past the static and dynamic tables (section 2.3.3).
    case invalidIndex(Int)
    /// A Huffman string with EOS in it, padding longer than 7 bits, or padding not of ones
    /// (section 5.2).
    case invalidHuffman
    /// A dynamic table size update above the decoder's SETTINGS_HEADER_TABLE_SIZE (section 6.3),
    /// or one after the block's first field (section 4.2).
    case invalidTableSizeUpdate(Int)
    /// The decoded header list is larger than SETTINGS_MAX_HEADER_LIST_SIZE allows (RFC 9113
    /// section 6.5.2): an indexed field repeated to make a small block a large list.
    case headerListTooLarge(limit: Int)
}

/// The dynamic table (section 2.3.2): newest first for indexing, oldest evicted first.
struct HPACKDynamicTable: Sendable {
    /// Oldest first: the newest is the last, index 1 of the dynamic part.
    private(set) var entries: [HeaderField] = []
    private(set) var size = 0
    private(set) var maxSize: Int

    init(maxSize: Int) { self.maxSize = maxSize }

    var count: Int { entries.count }

    /// Dynamic index `index` (1 is the newest).
    func entry(_ index: Int) -> HeaderField? {
        guard index >= 1, index <= entries.count else { return nil }
        return entries[entries.count - index]
    }

    /// Section 4.4: entries are evicted, oldest first, until the new one fits; one larger than
    /// the table empties it and is not added.
    mutating func add(_ field: HeaderField) {
        evict(toFit: maxSize - field.size)
        guard field.size <= maxSize else { return }
        entries.append(field)
        size += field.size
    }

    /// Section 4.3: a smaller maximum evicts until the table fits.
    mutating func resize(_ newMax: Int) {
        maxSize = newMax
        evict(toFit: newMax)
    }

    private mutating func evict(toFit limit: Int) {
        var drop = 0
        while size > max(0, limit), drop < entries.count {
            size -= entries[drop].size
            drop += 1
        }
        if drop > 0 { entries.removeFirst(drop) }
    }

    /// The dynamic index of an entry equal to `field` (1 is the newest), and failing that one
    /// with its name.
    func find(_ field: HeaderField) -> (exact: Int?, name: Int?) {
        var nameIndex: Int?
        for position in stride(from: entries.count - 1, through: 0, by: -1) {
            let entry = entries[position]
            guard entry.name == field.name else { continue }
            let index = entries.count - position
            if entry.value == field.value { return (index, nameIndex ?? index) }
            if nameIndex == nil { nameIndex = index }
        }
        return (nil, nameIndex)
    }
}

/// Reads the header blocks a peer's encoder wrote, keeping its dynamic table in step.
public struct HPACKDecoder: Sendable {
    private var table: HPACKDynamicTable
    /// The most a size update may set: this end's SETTINGS_HEADER_TABLE_SIZE.
    public let maxTableSize: Int
    /// The largest header list a block may decode to (SETTINGS_MAX_HEADER_LIST_SIZE, by
    /// section 4.1's size of each field).
    public let maxHeaderListSize: Int

    public init(maxTableSize: Int = 4_096, maxHeaderListSize: Int = 65_536) {
        table = HPACKDynamicTable(maxSize: maxTableSize)
        self.maxTableSize = maxTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }

    /// The dynamic table's size now, by section 4.1 (a test's view).
    public var dynamicTableSize: Int { table.size }
    public var dynamicTableCount: Int { table.count }

    /// The fields of one whole header block (HEADERS and its CONTINUATIONs, joined). On an
    /// error the connection must end: the table may be out of step with the peer's.
    public mutating func decode(_ block: [UInt8]) throws(HPACKError) -> [HeaderField] {
        var reader = HPACKReader(bytes: block)
        var fields: [HeaderField] = []
        var listSize = 0
        while !reader.isAtEnd {
            let first = try reader.peek()
            if first & 0x80 != 0 {
                // 6.1: an indexed field.
                let index = try reader.integer(prefix: 7)
                fields.append(try field(at: index))
            } else if first & 0xC0 == 0x40 {
                // 6.2.1: a literal added to the table.
                let field = try literal(&reader, prefix: 6)
                table.add(field)
                fields.append(field)
            } else if first & 0xE0 == 0x20 {
                // 6.3: a dynamic table size update, only before the block's first field (4.2).
                let size = try reader.integer(prefix: 5)
                guard fields.isEmpty, size <= maxTableSize else { throw .invalidTableSizeUpdate(size) }
                table.resize(size)
                continue
            } else {
                // 6.2.2 without indexing (0000), 6.2.3 never indexed (0001): 4-bit prefixes.
                fields.append(try literal(&reader, prefix: 4))
            }
            listSize += fields[fields.count - 1].size
            guard listSize <= maxHeaderListSize else { throw .headerListTooLarge(limit: maxHeaderListSize) }
        }
        return fields
    }

    private func field(at index: Int) throws(HPACKError) -> HeaderField {
        let staticCount = HPACKTables.staticTable.count
        if index >= 1, index <= staticCount {
            let entry = HPACKTables.staticTable[index - 1]
            return HeaderField(entry.name, entry.value)
        }
        guard let entry = table.entry(index - staticCount) else { throw .invalidIndex(index) }
        return entry
    }

    /// A literal representation: its name indexed (a nonzero prefix) or literal, then its value.
    private func literal(_ reader: inout HPACKReader, prefix: Int) throws(HPACKError) -> HeaderField {
        let nameIndex = try reader.integer(prefix: prefix)
        let name = nameIndex == 0 ? try reader.string() : try field(at: nameIndex).name
        return HeaderField(name: name, value: try reader.string())
    }
}

/// Writes header blocks for a peer's decoder, keeping the table the peer decodes with in step.
///
/// What it indexes (section 7 and the mobile stacks' practice):
/// - a field in the static or dynamic table is one octet (6.1);
/// - `authorization`, `cookie`, `proxy-authorization` and `set-cookie` are never indexed
///   (6.2.3): a secret in the table could be guessed by an attacker who shares the connection
///   and watches its length (section 7.1);
/// - values that change with every request (`:path`, `content-length`, `date`, tracing ids
///   such as `x-request-id`) go without indexing (6.2.2), so they do not push out the fields
///   that repeat;
/// - every other field is added to the table (6.2.1), so that a device's next request carries it
///   in one octet, as OkHttp's and URLSession's encoders do for their fixed headers.
/// A string is Huffman-coded when that is shorter (5.2).
public struct HPACKEncoder: Sendable {
    private var table: HPACKDynamicTable
    /// A size update owed to the peer before the next block's first field (section 4.2).
    private var pendingSizeUpdate: Int?

    public init(maxTableSize: Int = 4_096) {
        table = HPACKDynamicTable(maxSize: maxTableSize)
    }

    static let neverIndexed: Set<[UInt8]> = Set(["authorization", "cookie", "proxy-authorization", "set-cookie"].map { Array($0.utf8) })
    static let notIndexed: Set<[UInt8]> = Set([":path", "content-length", "date", "x-request-id", "etag", "if-none-match"].map { Array($0.utf8) })

    public var dynamicTableSize: Int { table.size }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed: the table this end uses becomes at most
    /// that (4,096 at most: more saves a device nothing), said in the next block.
    public mutating func peerTableSize(_ size: Int) {
        let newSize = min(max(0, size), 4_096)
        guard newSize != table.maxSize else { return }
        table.resize(newSize)
        pendingSizeUpdate = newSize
    }

    public mutating func encode(_ fields: [HeaderField]) -> [UInt8] {
        var out: [UInt8] = []
        if let size = pendingSizeUpdate {
            HPACKWriter.integer(size, prefix: 5, flags: 0x20, into: &out)
            pendingSizeUpdate = nil
        }
        for field in fields {
            let (exact, name) = find(field)
            if let exact, !Self.neverIndexed.contains(field.name) {
                HPACKWriter.integer(exact, prefix: 7, flags: 0x80, into: &out)
                continue
            }
            let flags: UInt8, prefix: Int
            if Self.neverIndexed.contains(field.name) {
                (flags, prefix) = (0x10, 4)
            } else if Self.notIndexed.contains(field.name) {
                (flags, prefix) = (0x00, 4)
            } else {
                (flags, prefix) = (0x40, 6)
            }
            HPACKWriter.integer(name ?? 0, prefix: prefix, flags: flags, into: &out)
            if name == nil { HPACKWriter.string(field.name, into: &out) }
            HPACKWriter.string(field.value, into: &out)
            if flags == 0x40 { table.add(field) }
        }
        return out
    }

    /// The index of `field` (static first) and failing that of its name.
    private func find(_ field: HeaderField) -> (exact: Int?, name: Int?) {
        var nameIndex: Int?
        for (position, entry) in HPACKTables.staticTable.enumerated() where entry.name.utf8.elementsEqual(field.name) {
            if entry.value.utf8.elementsEqual(field.value) { return (position + 1, position + 1) }
            if nameIndex == nil { nameIndex = position + 1 }
        }
        let dynamic = table.find(field)
        let offset = HPACKTables.staticTable.count
        return (dynamic.exact.map { $0 + offset }, nameIndex ?? dynamic.name.map { $0 + offset })
    }
}

/// Reads a block's integers and strings (sections 5.1 and 5.2), never past its end.
struct HPACKReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    func peek() throws(HPACKError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        return bytes[offset]
    }

    /// Section 5.1: an integer in the low `prefix` bits of the next octet, continued in 7-bit
    /// groups, least significant first, while the high bit is set. At most 2^31 - 1.
    mutating func integer(prefix: Int) throws(HPACKError) -> Int {
        let mask = (1 << prefix) - 1
        var value = Int(try peek()) & mask
        offset += 1
        guard value == mask else { return value }
        var shift = 0
        while true {
            let octet = Int(try peek())
            offset += 1
            // 2^31 - 1 fits in the prefix and four more groups (7 × 4 = 28 bits past it).
            guard shift <= 28 else { throw .integerTooLarge }
            value += (octet & 0x7F) << shift
            guard value <= Int(Int32.max) else { throw .integerTooLarge }
            if octet & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// Section 5.2: a length (7-bit prefix, the high bit saying Huffman) and that many octets.
    mutating func string() throws(HPACKError) -> [UInt8] {
        let huffman = try peek() & 0x80 != 0
        let length = try integer(prefix: 7)
        guard length <= bytes.count - offset else { throw .truncated }
        let raw = Array(bytes[offset..<offset + length])
        offset += length
        return huffman ? try HPACKHuffman.decode(raw) : raw
    }
}

/// Writes integers and strings (sections 5.1 and 5.2).
enum HPACKWriter {
    static func integer(_ value: Int, prefix: Int, flags: UInt8, into out: inout [UInt8]) {
        let mask = (1 << prefix) - 1
        guard value >= mask else {
            out.append(flags | UInt8(value))
            return
        }
        out.append(flags | UInt8(mask))
        var rest = value - mask
        while rest >= 0x80 {
            out.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// The string Huffman-coded when that is shorter, else as it is.
    static func string(_ value: [UInt8], into out: inout [UInt8]) {
        let coded = HPACKHuffman.encodedLength(value)
        if coded < value.count {
            integer(coded, prefix: 7, flags: 0x80, into: &out)
            HPACKHuffman.encode(value, into: &out)
        } else {
            integer(value.count, prefix: 7, flags: 0, into: &out)
            out.append(contentsOf: value)
        }
    }
}

/// Appendix B's code: encoding by its table, decoding by walking the tree built from it.
enum HPACKHuffman {
    /// The code's tree: node 0 is the root; each node's children by bit (0, 1), -1 for none;
    /// a leaf holds its symbol (256 is EOS).
    private struct Node {
        var children: (Int32, Int32) = (-1, -1)
        var symbol: Int16 = -1
    }

    private static let tree: [Node] = {
        var nodes = [Node()]
        for (symbol, entry) in HPACKTables.huffman.enumerated() {
            var node = 0
            for bit in stride(from: Int(entry.bits) - 1, through: 0, by: -1) {
                let one = (entry.code >> UInt32(bit)) & 1 == 1
                var next = one ? nodes[node].children.1 : nodes[node].children.0
                if next < 0 {
                    next = Int32(nodes.count)
                    nodes.append(Node())
                    if one { nodes[node].children.1 = next } else { nodes[node].children.0 = next }
                }
                node = Int(next)
            }
            nodes[node].symbol = Int16(symbol)
        }
        return nodes
    }()

    static func encodedLength(_ bytes: [UInt8]) -> Int {
        (bytes.reduce(0) { $0 + Int(HPACKTables.huffman[Int($1)].bits) } + 7) / 8
    }

    /// Codes each octet, then pads the last octet with the most significant bits of EOS (ones).
    static func encode(_ bytes: [UInt8], into out: inout [UInt8]) {
        var accumulator: UInt64 = 0
        var bits = 0
        for byte in bytes {
            let entry = HPACKTables.huffman[Int(byte)]
            accumulator = accumulator << UInt64(entry.bits) | UInt64(entry.code)
            bits += Int(entry.bits)
            while bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(bits)))
            }
            accumulator &= (1 << UInt64(bits)) - 1
        }
        if bits > 0 {
            out.append(UInt8(truncatingIfNeeded: accumulator << UInt64(8 - bits) | ((1 << UInt64(8 - bits)) - 1)))
        }
    }

    /// Section 5.2: "A padding strictly longer than 7 bits MUST be treated as a decoding error.
    /// A padding not corresponding to the most significant bits of the code for the EOS symbol
    /// MUST be treated as a decoding error. A Huffman-encoded string literal containing the EOS
    /// symbol MUST be treated as a decoding error."
    static func decode(_ bytes: [UInt8]) throws(HPACKError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 8 / 5)
        var node = 0
        // Bits read since the last symbol, and whether they were all ones (EOS's prefix).
        var pending = 0
        var allOnes = true
        for byte in bytes {
            for bit in stride(from: 7, through: 0, by: -1) {
                let one = (byte >> UInt8(bit)) & 1 == 1
                let next = one ? tree[node].children.1 : tree[node].children.0
                guard next >= 0 else { throw .invalidHuffman }
                pending += 1
                allOnes = allOnes && one
                let symbol = tree[Int(next)].symbol
                if symbol >= 0 {
                    guard symbol != 256 else { throw .invalidHuffman }
                    out.append(UInt8(symbol))
                    node = 0
                    pending = 0
                    allOnes = true
                } else {
                    node = Int(next)
                }
            }
        }
        guard pending <= 7, allOnes else { throw .invalidHuffman }
        return out
    }
}
