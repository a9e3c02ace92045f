import PushSwarmCore
import PushSwarmPlatforms
import PushSwarmReplay
import Testing

/// A logged request's operation, from its method and path alone (`fit` reads access logs, which
/// have no bodies): each platform's endpoints as its spec gives them, and the `/<platform>`
/// prefix the built-in mock serves them under.
@Suite struct LogOperationsTests {
    let operations = LogOperations(platforms: PlatformRegistry.all)

    @Test(arguments: [
        // SmartAppPush: "POST /events", "POST /pushes/opened", "POST /devices/refresh-token".
        ("POST", "/events", "smartapppush.events"),
        ("POST", "/pushes/opened", "smartapppush.pushes_opened"),
        ("POST", "/devices/refresh-token", "smartapppush.refresh_token"),
        ("POST", "/smartapppush/events", "smartapppush.events"),
        // PushExpress (paths from the research notes): instances, info, events, deactivate.
        ("POST", "/apps/a1/instances", "pushexpress.create_instance"),
        ("PUT", "/apps/a1/instances/i9/info", "pushexpress.update_info"),
        ("POST", "/apps/a1/instances/i9/events/lifecycle", "pushexpress.lifecycle_event"),
        ("POST", "/apps/a1/instances/i9/events/notification", "pushexpress.notification_event"),
        ("POST", "/apps/a1/instances/i9/deactivate", "pushexpress.deactivate"),
        // Meiro: one endpoint; registration and refresh differ only in the body.
        ("POST", "/meiro_mobile", "meiro.mobile"),
        // Smartico: the WebSocket's upgrade and the public HTTP API.
        ("GET", "/websocket/services", "smartico.connect"),
        ("POST", "/services/public", "smartico.public_api"),
        // Flocktory: the API's scripts and the tracked links.
        ("GET", "/u_shaman/setup-api.js", "flocktory.setup"),
        ("GET", "/t/show/m-1", "flocktory.push_show"),
        ("GET", "/t/click/m-1", "flocktory.push_click"),
        ("GET", "/flocktory/1/postcheckout/offer.js", "flocktory.order"),
    ])
    func endpointsAreTheirPlatformsOperations(method: String, path: String, operation: String) {
        #expect(operations.operation(method: method, path: path) == operation)
    }

    @Test func pathsNoPlatformServesAreNone() {
        for path in ["/", "/favicon.ico", "/event", "/eventsX", "/apps/a1", "/smartapppush/nothing", "/meiro_mobile/x"] {
            #expect(operations.operation(method: "GET", path: path) == nil, "\(path)")
        }
    }
}
