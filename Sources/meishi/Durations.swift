import Foundation

/// Parses durations as meishi's options take them: `30` (seconds), `90s`, `10m`, `24h`, `7d`.
enum DurationText {
    static func seconds(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let last = t.last else { return nil }
        let unit: Int64
        var number = Substring(t)
        switch last {
        case "s": unit = 1; number = number.dropLast()
        case "m": unit = 60; number = number.dropLast()
        case "h": unit = 3600; number = number.dropLast()
        case "d": unit = 86400; number = number.dropLast()
        default: unit = 1
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(number),
              n <= Int64.max / unit else { return nil }
        return n * unit
    }
}
