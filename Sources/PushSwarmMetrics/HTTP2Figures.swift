/// The run counters of which HTTP carried each request (wall time): a request counts once, by the
/// protocol of its last attempt on the wire; and what HTTP/2 connections went through.
public enum HTTPProtocolCounters {
    public static let http2Requests = "requests.http2"
    public static let http1Requests = "requests.http1"
    /// Connections that spoke HTTP/2.
    public static let http2Connections = "connections.http2.opened"
    /// GOAWAYs the servers sent, by code (`connections.http2.goAway.NO_ERROR`).
    public static let goAwayPrefix = "connections.http2.goAway."
    /// Streams reset, by code (`connections.http2.reset.REFUSED_STREAM`).
    public static let resetPrefix = "connections.http2.reset."
    /// Requests a server left unprocessed (GOAWAY, REFUSED_STREAM), sent again on another connection.
    public static let retriedUnprocessed = "connections.http2.retriedUnprocessed"
}

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
        let counters = metrics.counters
        http2Requests = counters[HTTPProtocolCounters.http2Requests] ?? 0
        http1Requests = counters[HTTPProtocolCounters.http1Requests] ?? 0
        connections = counters[HTTPProtocolCounters.http2Connections] ?? 0
        func byCode(_ prefix: String) -> [(code: String, count: UInt64)] {
            counters.filter { $0.key.hasPrefix(prefix) && $0.value > 0 }.map { (String($0.key.dropFirst(prefix.count)), $0.value) }.sorted { $0.code < $1.code }
        }
        goAways = byCode(HTTPProtocolCounters.goAwayPrefix)
        resets = byCode(HTTPProtocolCounters.resetPrefix)
        retriedUnprocessed = counters[HTTPProtocolCounters.retriedUnprocessed] ?? 0
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
