import PushSwarmCore
import Testing

/// RFC 3986 section 5.4: its examples, resolved against its base `http://a/b/c/d;p?q` (the path
/// and query here; the scheme and authority when the reference gives its own).
@Suite struct URIReferenceTests {
    static let base = "/b/c/d;p?q"

    @Test(arguments: [
        // 5.4.1, normal examples.
        ("g", "/b/c/g"), ("./g", "/b/c/g"), ("g/", "/b/c/g/"), ("/g", "/g"), ("?y", "/b/c/d;p?y"), ("g?y", "/b/c/g?y"),
        ("#s", "/b/c/d;p?q"), ("g#s", "/b/c/g"), ("g?y#s", "/b/c/g?y"), (";x", "/b/c/;x"), ("g;x", "/b/c/g;x"), ("", "/b/c/d;p?q"),
        (".", "/b/c/"), ("./", "/b/c/"), ("..", "/b/"), ("../", "/b/"), ("../g", "/b/g"), ("../..", "/"), ("../../", "/"), ("../../g", "/g"),
        // 5.4.2, abnormal examples.
        ("../../../g", "/g"), ("../../../../g", "/g"), ("/./g", "/g"), ("/../g", "/g"), ("g.", "/b/c/g."), (".g", "/b/c/.g"), ("g..", "/b/c/g.."),
        ("..g", "/b/c/..g"), ("./../g", "/b/g"), ("./g/.", "/b/c/g/"), ("g/./h", "/b/c/g/h"), ("g/../h", "/b/c/h"), ("g;x=1/./y", "/b/c/g;x=1/y"),
        ("g;x=1/../y", "/b/c/y"), ("g?y/./x", "/b/c/g?y/./x"), ("g?y/../x", "/b/c/g?y/../x"), ("g#s/./x", "/b/c/g"), ("g#s/../x", "/b/c/g"),
    ])
    func relativeReferencesResolveAsTheRFCSays(reference: String, expected: String) {
        let resolved = URIReference.resolve(reference, against: Self.base)
        #expect(resolved.scheme == nil && resolved.authority == nil)
        #expect(resolved.path == expected, "\(reference)")
    }

    @Test func referencesWithTheirOwnSchemeOrAuthorityKeepThem() {
        let network = URIReference.resolve("//g", against: Self.base)
        #expect(network.scheme == nil && network.authority == "g" && network.path == "/")
        let absolute = URIReference.resolve("HTTPS://api.flocktory.com:8443/x/./y/../z?q=1#top", against: Self.base)
        #expect(absolute.scheme == "https" && absolute.authority == "api.flocktory.com:8443" && absolute.path == "/x/z?q=1")
        let other = URIReference.resolve("g:h", against: Self.base)
        #expect(other.scheme == "g" && other.authority == nil)
    }

    /// A redirect chain as a target without a path sees it: each Location against the URL before.
    @Test func aRequestsLocationsResolveInTurn() {
        let request = Request(method: "GET", path: "/t/click/7", locations: ["../../r/7", "../landing/7?from=push"])
        #expect(request.resolvedPath == "/landing/7?from=push")
        #expect(request.resolved.path == "/landing/7?from=push" && request.resolved.locations.isEmpty)
        let offHost = Request(method: "GET", path: "/t/show/7", locations: ["https://cdn.example/static/icon/7.png"])
        #expect(offHost.resolvedPath == "/static/icon/7.png")
    }
}

