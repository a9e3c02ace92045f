/// The mobile OS of a device; it sets defaults that differ by OS (consent, tap rate, time to open).
public enum OperatingSystem: String, Sendable, CaseIterable {
    case android
    case ios
}

/// A value that may differ by OS: written in scenarios as one value for both, or
/// `{"android": …, "ios": …}`.
public struct PerOS<Value: Sendable>: Sendable {
    public var android: Value
    public var ios: Value

    public init(android: Value, ios: Value) {
        self.android = android
        self.ios = ios
    }

    public init(both value: Value) {
        self.init(android: value, ios: value)
    }

    public subscript(os: OperatingSystem) -> Value {
        switch os {
        case .android: android
        case .ios: ios
        }
    }
}

extension PerOS: Equatable where Value: Equatable {}
