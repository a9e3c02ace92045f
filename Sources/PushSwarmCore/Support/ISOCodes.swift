import PushSwarmMetrics
import PushSwarmSystem

/// The code lists a spec names for `language` (ISO 639-1) and `country`
/// (ISO 3166-1 alpha-2), so that mocks and scenario validation reject codes that do not exist.
public enum ISOCodes {
    /// Whether `code` is an ISO 639-1 language code (two lower-case letters).
    public static func isLanguage(_ code: String) -> Bool {
        code.withUTF8Span { languageTable.contains($0) }
    }

    public static func isLanguage(utf8 code: Span<UInt8>) -> Bool { languageTable.contains(code) }

    /// Whether `code` is an ISO 3166-1 alpha-2 country code (two upper-case letters).
    public static func isCountry(_ code: String) -> Bool {
        code.withUTF8Span { countryTable.contains($0) }
    }

    public static func isCountry(utf8 code: Span<UInt8>) -> Bool { countryTable.contains(code) }

    /// The lists as bits, one for each pair of letters: the mock checks every event's codes, and a
    /// bit hashes nothing, allocates nothing, and (plain values, not an object) retains nothing
    /// that partitions share (see `String.partitionCopy`).
    private static let languageTable = TwoLetterTable(languages, first: UInt8(ascii: "a"))
    private static let countryTable = TwoLetterTable(countries, first: UInt8(ascii: "A"))

    private struct TwoLetterTable: Sendable {
        private var words: InlineArray<11, UInt64> = .init(repeating: 0)
        private let first: UInt8

        init(_ codes: [String], first: UInt8) {
            self.first = first
            for code in codes {
                let letters = Array(code.utf8)
                guard let bit = bit(letters[0], letters[1]) else { preconditionFailure("\(code) is not two letters") }
                words[bit >> 6] |= 1 << UInt64(bit & 63)
            }
        }

        private func bit(_ a: UInt8, _ b: UInt8) -> Int? {
            let x = a &- first, y = b &- first
            guard x < 26, y < 26 else { return nil }
            return Int(x) * 26 + Int(y)
        }

        func contains(_ code: Span<UInt8>) -> Bool {
            guard code.count == 2, let bit = bit(code[0], code[1]) else { return false }
            return words[bit >> 6] & 1 << UInt64(bit & 63) != 0
        }
    }

    private static let languages: [String] = [
        "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bi", "bm",
        "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da", "de", "dv", "dz",
        "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr", "fy", "ga", "gd", "gl",
        "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz", "ia", "id", "ie", "ig", "ii",
        "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "kr",
        "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln", "lo", "lt", "lu", "lv", "mg", "mh", "mi",
        "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb", "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv",
        "ny", "oc", "oj", "om", "or", "os", "pa", "pi", "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw",
        "sa", "sc", "sd", "se", "sg", "si", "sk", "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv",
        "sw", "ta", "te", "tg", "th", "ti", "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk",
        "ur", "uz", "ve", "vi", "vo", "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
    ]

    private static let countries: [String] = [
        "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ", "BA",
        "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS", "BT", "BV",
        "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN", "CO", "CR", "CU",
        "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM", "DO", "DZ", "EC", "EE", "EG", "EH", "ER", "ES",
        "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF", "GG", "GH", "GI", "GL", "GM",
        "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM", "HN", "HR", "HT", "HU", "ID", "IE",
        "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM", "JO", "JP", "KE", "KG", "KH", "KI", "KM",
        "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY",
        "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT",
        "MU", "MV", "MW", "MX", "MY", "MZ", "NA", "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU",
        "NZ", "OM", "PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA",
        "RE", "RO", "RS", "RU", "RW", "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM",
        "SN", "SO", "SR", "SS", "ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL",
        "TM", "TN", "TO", "TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE",
        "VG", "VI", "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
    ]
}
