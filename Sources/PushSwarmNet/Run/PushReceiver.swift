import Foundation
import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// `--push-listen`: an endpoint shaped like FCM's HTTP v1 send API, so that a staging deployment
/// of a platform, configured to send to it instead of Google, delivers its real pushes to the
/// virtual devices. `POST /v1/projects/{project}/messages:send` with
/// `{"message": {"token", "data", "notification"}}` is routed by the token a device registered
/// and answered as FCM answers: 200 with the message's `name`; 404 `UNREGISTERED` for a token no
/// device holds; 400 `INVALID_ARGUMENT` for a malformed body or a payload over FCM's 4,096 bytes
/// (what a device keeps of a push is bounded by it); 413 for a request over 64 KiB. The device
/// then displays, taps and
/// reports the push with its own data (a real `tracking_token`, say).
public final class PushReceiver: @unchecked Sendable {
    private let server: HTTPServer
    private let transports: [NetworkTransport]
    /// Token → the partition whose device holds it; written as devices' tokens change (rarely).
    private let routes = Mutex<[String: Int]>([:])
    private let sent = Atomic<UInt64>(0)

    public init(group: EventLoopGroup, transports: [NetworkTransport]) {
        self.transports = transports
        let box = ReceiverBox()
        // A send request is its envelope and a payload of at most 4 KB: 64 KiB is ample, and a
        // flood of megabyte bodies is refused as it arrives rather than held.
        let configuration = HTTPServer.Configuration(limits: HTTPParser.Limits(maxBodyBytes: 64 << 10))
        server = HTTPServer(group: group, configuration: configuration) { request, responder in box.receive?(request, responder) }
        box.receive = { [weak self] request, responder in self?.receive(request, responder) }
        for (number, transport) in transports.enumerated() {
            transport.onPushAddress = { [weak self] old, new in
                self?.routes.withLock { routes in
                    if let old, routes[old] == number { routes[old] = nil }
                    routes[new] = number
                }
            }
        }
    }

    public func start(at address: SocketAddress) throws(NetError) {
        try server.start(at: address)
    }

    public var port: UInt16 { server.port }

    public func stop() { server.stop() }

    private func receive(_ request: ServerRequest, _ responder: HTTPResponder) {
        let path = request.path
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "projects", "{project}", "messages:send"
        guard parts.count == 5, parts[1] == "v1", parts[2] == "projects", !parts[3].isEmpty, parts[4] == "messages:send" else {
            return responder.respond(Self.error(404, "NOT_FOUND", "no such method: \(request.method) \(path); FCM's is POST /v1/projects/{project}/messages:send"))
        }
        guard request.method == "POST" else { return responder.respond(Self.error(405, "INVALID_ARGUMENT", "messages:send takes POST")) }
        let push: Push
        switch Self.push(from: request.body) {
        case .success(let value): push = value
        case .failure(let refusal): return responder.respond(refusal.response)
        }
        let token = push.token
        guard let partition = routes.withLock({ $0[token] }) else {
            return responder.respond(Self.error(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED"))
        }
        transports[partition].receivePush(token: token, data: push.data, isDataOnly: push.isDataOnly)
        let number = sent.add(1, ordering: .relaxed).newValue
        let name = "projects/\(parts[3])/messages/\(number)"
        responder.respond(Response(status: 200, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: ["name": .string(name)])))
    }

    /// A send request's message, as a device receives it.
    public struct Push: Sendable, Equatable {
        public var token: String
        public var data: [String: String]
        /// No `notification`: the app's code must run to show it.
        public var isDataOnly: Bool
    }

    /// FCM's answer refusing a send request.
    public struct Refusal: Error {
        let response: Response
        public var status: Int { response.status }
    }

    /// The message of a send request's body (`{"message": {"token", "data", "notification"}}`),
    /// or FCM's refusal: 400 `INVALID_ARGUMENT` for a malformed body or a payload over 4,096 bytes.
    public static func push(from body: [UInt8]) -> Result<Push, Refusal> {
        func refuse(_ text: String, errorCode: String? = nil) -> Result<Push, Refusal> {
            .failure(Refusal(response: error(400, "INVALID_ARGUMENT", text, errorCode: errorCode)))
        }
        guard let parsed = try? JSONParser.parse(body), let message = parsed["message"]?.objectValue else {
            return refuse("the body must be {\"message\": {…}}")
        }
        guard let token = message["token"]?.stringValue, !token.isEmpty else {
            return refuse("message.token is required (topics and conditions are not delivered here)")
        }
        var data: [String: String] = [:]
        if let given = message["data"] {
            // FCM: "data: map (key: string, value: string)"; any other value is refused.
            guard let members = given.objectValue?.members else { return refuse("message.data must be an object of strings") }
            for (key, value) in members {
                guard let text = value.stringValue else { return refuse("message.data.\(key) must be a string") }
                data[key] = text
            }
        }
        // FCM: "The maximum payload for both message types is 4096 bytes": the data's keys and
        // values and the notification's fields.
        var payload = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        for (key, value) in message["notification"]?.objectValue?.members ?? [] { payload += key.utf8.count + (value.stringValue?.utf8.count ?? 0) }
        guard payload <= maximumPayloadBytes else {
            return refuse("the message's payload is \(payload) bytes; FCM takes at most \(maximumPayloadBytes)", errorCode: "INVALID_ARGUMENT")
        }
        return .success(Push(token: token, data: data, isDataOnly: message["notification"] == nil))
    }

    /// FCM's limit on a message's payload, bytes.
    static let maximumPayloadBytes = 4_096

    /// FCM's error body: `{"error": {"code", "message", "status", "details": [{"@type", "errorCode"}]}}`.
    static func error(_ code: Int, _ status: String, _ message: String, errorCode: String? = nil) -> Response {
        var error: JSONObject = ["code": .number(Double(code)), "message": .string(message), "status": .string(status)]
        if let errorCode {
            error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode)]]
        }
        return Response(status: code, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: ["error": .object(error)]))
    }
}

private final class ReceiverBox: @unchecked Sendable {
    var receive: HTTPHandler?
}
