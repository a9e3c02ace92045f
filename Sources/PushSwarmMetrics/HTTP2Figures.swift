/// What a run's HTTP/2 was, from its counters: requests by protocol, streams a connection carried,
/// GOAWAYs and resets by code, requests sent again; nil for a run where no socket said (simulated
/// time) or none spoke HTTP/2 and none was asked to.
public struct HTTP2Figures: Sendable, Equatable {
    public var http2Requests: UInt64
    public var http1Requests: UInt64
    public var connections: UInt64
    public var goAways: [(code: String, count: UInt64)]
    public var resets: [(code: String, count: UInt64)]
    public var retriedUnprocessed: UInt64

    public init?(_ metrics: RunMetrics) {
        http2Requests = metrics[.requestsHTTP2] ?? 0
        http1Requests = metrics[.requestsHTTP1] ?? 0
        connections = metrics[.http2ConnectionsOpened] ?? 0
        goAways = CounterKey.http2GoAways.members(in: metrics).map { (code: $0.member, count: $0.count) }
        resets = CounterKey.http2Resets.members(in: metrics).map { (code: $0.member, count: $0.count) }
        retriedUnprocessed = metrics[.http2RetriedUnprocessed] ?? 0
        guard http2Requests > 0 || connections > 0 || !goAways.isEmpty || !resets.isEmpty else { return nil }
    }

    public static func == (lhs: HTTP2Figures, rhs: HTTP2Figures) -> Bool {
        lhs.http2Requests == rhs.http2Requests && lhs.http1Requests == rhs.http1Requests && lhs.connections == rhs.connections
            && lhs.goAways.elementsEqual(rhs.goAways, by: ==) && lhs.resets.elementsEqual(rhs.resets, by: ==) && lhs.retriedUnprocessed == rhs.retriedUnprocessed
    }

    /// The share of requests that went out over HTTP/2.
    public var http2Share: Double {
        let total = http2Requests + http1Requests
        return total > 0 ? Double(http2Requests) / Double(total) : 0
    }

    /// Requests an HTTP/2 connection carried on average (its streams); nil without one.
    public var streamsPerConnection: Double? {
        connections > 0 ? Double(http2Requests) / Double(connections) : nil
    }

    public var goAwayCount: UInt64 { goAways.reduce(0) { $0 + $1.count } }

    /// After the word "HTTP/2": requests by protocol, streams a connection, GOAWAYs and resets by
    /// code, requests sent again.
    public var line: String {
        let group = TerminalReport.group
        var line = "\(group(http2Requests)) requests"
        if http1Requests > 0 { line += " (HTTP/1.1 \(group(http1Requests)))" }
        line += " on \(group(connections)) connections"
        if let streams = streamsPerConnection { line += " (\(TerminalReport.format2(streams)) streams a connection)" }
        let codes = { (list: [(code: String, count: UInt64)]) in list.map { "\($0.code) \(group($0.count))" }.joined(separator: ", ") }
        line += " · GOAWAY \(group(goAwayCount))\(goAways.isEmpty ? "" : " (\(codes(goAways)))")"
        let resetCount = resets.reduce(0) { $0 + $1.count }
        line += " · streams reset \(group(resetCount))\(resets.isEmpty ? "" : " (\(codes(resets)))")"
        line += " · \(group(retriedUnprocessed)) unprocessed sent again"
        return line
    }

    /// summary.json's `http2` object.
    public var json: JSONValue {
        var object: JSONObject = [
            "requests": .number(Double(http2Requests)),
            "http1Requests": .number(Double(http1Requests)),
            "connections": .number(Double(connections)),
            "goAways": .object(JSONObject(goAways.map { (key: $0.code, value: JSONValue.number(Double($0.count))) })),
            "resets": .object(JSONObject(resets.map { (key: $0.code, value: JSONValue.number(Double($0.count))) })),
            "retriedUnprocessed": .number(Double(retriedUnprocessed)),
        ]
        if let streams = streamsPerConnection { object["streamsPerConnection"] = .number((streams * 100).rounded() / 100) }
        return .object(object)
    }
}
