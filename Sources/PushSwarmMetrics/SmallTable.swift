/// A handful of values by key, kept in order of key in two short arrays: a recorded request finds
/// its operation or its status by comparing keys (an operation's name is the same string every
/// time, equal to itself at once), where a `Dictionary` ran SipHash over the key on every request.
/// In order, so that two tables that saw the same keys in another order are equal (partitions
/// merge into the same summary whatever their number). For a few keys only: a new key is
/// inserted in its place.
struct SmallTable<Key: Comparable & Hashable & Sendable, Value: Equatable & Sendable>: Sendable, Equatable {
    private var keys: [Key] = []
    private var values: [Value] = []

    init() {}

    init(_ dictionary: [Key: Value]) {
        for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            keys.append(key)
            values.append(value)
        }
    }

    /// The same keys and values as a dictionary.
    var dictionary: [Key: Value] { Dictionary(uniqueKeysWithValues: zip(keys, values)) }

    /// Changes the value of `key` in place, starting from `initial` when it has none.
    @inline(__always)
    mutating func update(_ key: Key, default initial: @autoclosure () -> Value, _ change: (inout Value) -> Void) {
        for index in keys.indices where keys[index] == key { return change(&values[index]) }
        let index = keys.firstIndex { $0 > key } ?? keys.count
        keys.insert(key, at: index)
        values.insert(initial(), at: index)
        change(&values[index])
    }

    func reduce<Result>(_ initial: Result, _ next: (Result, Value) -> Result) -> Result { values.reduce(initial, next) }

    func forEach(_ body: (Key, Value) -> Void) {
        for index in keys.indices { body(keys[index], values[index]) }
    }
}
