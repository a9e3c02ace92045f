import Foundation
import Testing
@testable import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmPlatforms
import PushSwarmTestSupport

/// Issue 36: every platform's `partitionCopy` is checked by one walk, not by a test per field.
/// `Scenario.partitionCopy` must give each partition objects and string storage of its own
/// (`PartitionCopy.swift`: a reference count two partitions share moves its cache line between
/// their cores on every retain). The walk goes through a scenario and its copy side by side with
/// `Mirror`, into every configuration, client profile, group and locale, and reports each object
/// and each heap string the copy still shares. A literal's storage is in the executable and never
/// counted, so sharing it is allowed.
@Suite struct PartitionCopyTests {
    @Test(arguments: ["all-platforms", "smartico", "flocktory", "pushexpress", "meiro", "smartapppush-nat-burst"])
    func aScenariosCopySharesNoObjectAndNoHeapString(name: String) throws {
        let scenario = try loadScenario(name)
        let copy = scenario.partitionCopy()
        var walk = SharedStorageWalk()
        walk.compare(scenario, copy, path: "scenario")
        #expect(walk.visited > 50, "the walk reached into the scenario (\(walk.visited) values)")
        #expect(walk.objects > 0, "objects were compared")
        #expect(walk.shared.isEmpty, "shared with the original: \(walk.shared.prefix(20))")
    }

    /// The walk itself finds what is shared: a copy that keeps one object, or one string's heap
    /// storage, is caught.
    @Test func theWalkFindsASharedObjectAndASharedString() {
        final class Box { let text: String; init(_ text: String) { self.text = text } }
        struct Holder { var box: Box; var name: String }
        let heap = String(decoding: Array("a string long enough to live on the heap".utf8), as: UTF8.self)
        let original = Holder(box: Box(heap), name: heap)
        var walk = SharedStorageWalk()
        walk.compare(original, Holder(box: original.box, name: heap), path: "holder")
        #expect(walk.shared.contains { $0.hasPrefix("holder.box: ") }, "\(walk.shared)")
        #expect(walk.shared.contains { $0.hasPrefix("holder.name: ") }, "\(walk.shared)")
        var clean = SharedStorageWalk()
        clean.compare(original, Holder(box: Box(heap.partitionCopy()), name: heap.partitionCopy()), path: "holder")
        #expect(clean.shared.isEmpty, "\(clean.shared)")
    }
}

/// Walks two values side by side and notes what they share.
struct SharedStorageWalk {
    private(set) var shared: [String] = []
    private(set) var visited = 0
    private(set) var objects = 0
    private var seen = Set<ObjectIdentifier>()
    private let image = ExecutableImage()

    mutating func compare(_ a: Any, _ b: Any, path: String, depth: Int = 0) {
        visited += 1
        guard depth < 40 else { return }
        if let a = a as? String, let b = b as? String {
            if let pointer = Self.storage(a), pointer == Self.storage(b), !image.contains(pointer) {
                shared.append("\(path): string \"\(a.prefix(40))\"")
            }
            return
        }
        let mirrorA = Mirror(reflecting: a)
        let mirrorB = Mirror(reflecting: b)
        if mirrorA.displayStyle == .class, mirrorB.displayStyle == .class {
            let (objectA, objectB) = (a as AnyObject, b as AnyObject)
            objects += 1
            if objectA === objectB {
                shared.append("\(path): object \(type(of: a))")
                return
            }
            guard seen.insert(ObjectIdentifier(objectA)).inserted else { return }
        }
        if mirrorA.displayStyle == .dictionary || mirrorA.displayStyle == .set {
            let keyed = { (mirror: Mirror) in
                Dictionary(mirror.children.map { (String(describing: ($0.value as? (key: Any, value: Any))?.key ?? $0.value), $0.value) }, uniquingKeysWith: { first, _ in first })
            }
            let (childrenA, childrenB) = (keyed(mirrorA), keyed(mirrorB))
            for (key, value) in childrenA.sorted(by: { $0.key < $1.key }) {
                if let other = childrenB[key] { compare(value, other, path: "\(path)[\(key)]", depth: depth + 1) }
            }
            return
        }
        for (index, (childA, childB)) in zip(mirrorA.storedChildren, mirrorB.storedChildren).enumerated() {
            compare(childA.value, childB.value, path: "\(path).\(childA.label ?? "\(index)")", depth: depth + 1)
        }
    }

    /// Where a string's bytes are, for one that has storage of its own (over 15 bytes).
    private static func storage(_ text: String) -> UInt? {
        guard text.utf8.count > 15 else { return nil }
        return text.utf8.withContiguousStorageIfAvailable { $0.baseAddress.map { UInt(bitPattern: $0) } } ?? nil
    }
}

/// The address ranges this process's files are mapped at (the test executable and its
/// libraries): a string literal's bytes are there, never on the heap.
struct ExecutableImage {
    private let ranges: [ClosedRange<UInt>]

    init() {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        ranges = maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix("/") else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let low = UInt(bounds[0], radix: 16), let high = UInt(bounds[1], radix: 16), low < high else { return nil }
            return low...(high - 1)
        }
    }

    func contains(_ address: UInt) -> Bool { ranges.contains { $0.contains(address) } }
}
