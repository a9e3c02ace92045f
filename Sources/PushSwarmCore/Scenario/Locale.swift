/// Where a device's user lives: country, language and IANA time zone, with a weight.
///
/// A class, so that a device's profile holds 8 bytes of it: every device of a market shares the
/// scenario's one instance.
public final class LocaleShare: Sendable, Equatable {
    public let country: String
    public let language: String
    public let timeZone: String
    public let weight: Double

    public static func == (lhs: LocaleShare, rhs: LocaleShare) -> Bool {
        lhs.country == rhs.country && lhs.language == rhs.language && lhs.timeZone == rhs.timeZone && lhs.weight == rhs.weight
    }

    public init(country: String, language: String, timeZone: String, weight: Double) {
        self.country = country
        self.language = language
        self.timeZone = timeZone
        self.weight = weight
    }

    /// An equal locale, a new instance with storage of its own, for one partition's devices
    /// (see `String.partitionCopy`).
    public func partitionCopy() -> LocaleShare {
        LocaleShare(country: country.partitionCopy(), language: language.partitionCopy(), timeZone: timeZone.partitionCopy(), weight: weight)
    }

    /// A spread of markets across time zones, so that a simulated day has a realistic rolling peak.
    public static let defaultMix: [LocaleShare] = [
        LocaleShare(country: "US", language: "en", timeZone: "America/New_York", weight: 12),
        LocaleShare(country: "US", language: "en", timeZone: "America/Chicago", weight: 6),
        LocaleShare(country: "US", language: "en", timeZone: "America/Los_Angeles", weight: 7),
        LocaleShare(country: "BR", language: "pt", timeZone: "America/Sao_Paulo", weight: 8),
        LocaleShare(country: "GB", language: "en", timeZone: "Europe/London", weight: 7),
        LocaleShare(country: "DE", language: "de", timeZone: "Europe/Berlin", weight: 8),
        LocaleShare(country: "FR", language: "fr", timeZone: "Europe/Paris", weight: 5),
        LocaleShare(country: "ES", language: "es", timeZone: "Europe/Madrid", weight: 4),
        LocaleShare(country: "TR", language: "tr", timeZone: "Europe/Istanbul", weight: 8),
        LocaleShare(country: "IN", language: "hi", timeZone: "Asia/Kolkata", weight: 12),
        LocaleShare(country: "ID", language: "id", timeZone: "Asia/Jakarta", weight: 6),
        LocaleShare(country: "JP", language: "ja", timeZone: "Asia/Tokyo", weight: 6),
        LocaleShare(country: "AU", language: "en", timeZone: "Australia/Sydney", weight: 3),
        LocaleShare(country: "MX", language: "es", timeZone: "America/Mexico_City", weight: 5),
        LocaleShare(country: "NG", language: "en", timeZone: "Africa/Lagos", weight: 3),
    ]
}
