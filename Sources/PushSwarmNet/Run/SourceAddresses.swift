public import PushSwarmCore

extension SourceAddress {
    /// The loopback address a NAT group's devices bind to in wall-clock runs: number 0 is
    /// 127.0.0.1, number 1 is 127.0.0.2, and so on through 127.255.255.254.
    public var loopbackIP: IPAddress { .v4(0x7F00_0000 &+ (index &+ 1)) }

    /// The source address a service sees for a peer: its number on 127.0.0.0/8, or for any other
    /// address its 32 bits (distinct peers stay distinct).
    public init(peer: IPAddress) {
        switch peer {
        case .v4(let value) where value >> 24 == 127 && value & 0x00FF_FFFF > 0:
            self.init(index: (value & 0x00FF_FFFF) - 1)
        case .v4(let value):
            self.init(index: value)
        case .v6(let bytes):
            self.init(index: bytes.suffix(4).reduce(0) { $0 << 8 | UInt32($1) })
        }
    }
}
