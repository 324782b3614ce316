/// Numbers and dates in their TOML 1.0 forms, checked without trapping: every integer either fits in
/// 64 bits or is an error, underscores only between digits, no leading zeros.
enum TOMLScalars {
    enum Number: Equatable {
        case integer(Int64)
        case float(Double)
        case problem(String)
    }

    static func number(_ token: String) -> Number {
        var scalars = Array(token.unicodeScalars)
        switch token {
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        guard !scalars.isEmpty else { return .problem("expected a value") }
        // Hexadecimal, octal and binary integers: no sign.
        if scalars.count > 2, scalars[0] == "0", let radix = radix(of: scalars[1]) {
            return integer(Array(scalars[2...]), radix: radix, negative: false, token: token)
        }
        var negative = false
        if scalars[0] == "+" || scalars[0] == "-" {
            negative = scalars[0] == "-"
            scalars.removeFirst()
            if scalars.count > 1, scalars[0] == "0", radix(of: scalars[1]) != nil {
                return .problem("'\(token)': hexadecimal, octal and binary integers take no sign")
            }
        }
        guard let first = scalars.first, isDigit(first) else {
            return .problem("'\(token)' is not a number (strings are quoted)")
        }
        let isFloat = scalars.contains { $0 == "." || $0 == "e" || $0 == "E" }
        if !isFloat {
            if scalars.count > 1 && scalars[0] == "0" {
                return .problem("'\(token)': leading zeros are not allowed")
            }
            return integer(scalars, radix: 10, negative: negative, token: token)
        }
        return float(scalars, negative: negative, token: token)
    }

    private static func radix(of scalar: Unicode.Scalar) -> Int64? {
        switch scalar {
        case "x": 16
        case "o": 8
        case "b": 2
        default: nil
        }
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

    private static func digitValue(_ scalar: Unicode.Scalar, radix: Int64) -> Int64? {
        let value: Int64
        switch scalar {
        case "0"..."9": value = Int64(scalar.value - 0x30)
        case "a"..."f": value = Int64(scalar.value - 0x61 + 10)
        case "A"..."F": value = Int64(scalar.value - 0x41 + 10)
        default: return nil
        }
        return value < radix ? value : nil
    }

    /// Digits (with underscores between them) in `radix`, accumulated towards the sign so that
    /// Int64.min is representable and nothing overflows unchecked.
    private static func integer(_ scalars: [Unicode.Scalar], radix: Int64, negative: Bool, token: String) -> Number {
        guard !scalars.isEmpty else { return .problem("'\(token)' has no digits") }
        var value: Int64 = 0
        var previousWasDigit = false
        for scalar in scalars {
            if scalar == "_" {
                guard previousWasDigit else { return .problem("'\(token)': an underscore must be between digits") }
                previousWasDigit = false
                continue
            }
            guard let digit = digitValue(scalar, radix: radix) else {
                return .problem("'\(token)' is not a valid number")
            }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return .problem("'\(token)' is not representable in 64 bits") }
            value = next
            previousWasDigit = true
        }
        guard previousWasDigit else { return .problem("'\(token)': an underscore must be between digits") }
        return .integer(value)
    }

    /// `int-part ('.' digits)? ([eE] [+-]? digits)?`, with at least a fraction or an exponent.
    private static func float(_ scalars: [Unicode.Scalar], negative: Bool, token: String) -> Number {
        var cleaned = negative ? "-" : ""
        var index = 0
        func digits(allowLeadingZero: Bool) -> Bool {
            let start = index
            var previousWasDigit = false
            while index < scalars.count {
                let scalar = scalars[index]
                if scalar == "_" {
                    guard previousWasDigit else { return false }
                    previousWasDigit = false
                } else if isDigit(scalar) {
                    cleaned.unicodeScalars.append(scalar)
                    previousWasDigit = true
                } else {
                    break
                }
                index += 1
            }
            guard index > start, previousWasDigit else { return false }
            if !allowLeadingZero, index - start > 1, scalars[start] == "0" { return false }
            return true
        }
        guard digits(allowLeadingZero: false) else { return .problem("'\(token)' is not a valid float") }
        if index < scalars.count, scalars[index] == "." {
            cleaned += "."
            index += 1
            guard digits(allowLeadingZero: true) else {
                return .problem("'\(token)': a decimal point needs digits on both sides")
            }
        }
        if index < scalars.count, scalars[index] == "e" || scalars[index] == "E" {
            cleaned += "e"
            index += 1
            if index < scalars.count, scalars[index] == "+" || scalars[index] == "-" {
                cleaned.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard digits(allowLeadingZero: true) else { return .problem("'\(token)': an exponent needs digits") }
        }
        guard index == scalars.count, let value = Double(cleaned) else {
            return .problem("'\(token)' is not a valid float")
        }
        return .float(value)
    }

    // MARK: - Dates and times

    /// The token when it is an offset date-time, a local date-time, a local date or a local time.
    static func dateTime(_ token: String) -> String? {
        let scalars = Array(token.unicodeScalars)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= scalars.count else { return nil }
            var value = 0
            for scalar in scalars[index..<index + count] {
                guard isDigit(scalar) else { return nil }
                value = value * 10 + Int(scalar.value - 0x30)
            }
            index += count
            return value
        }
        func literal(_ scalar: Unicode.Scalar) -> Bool {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
            return true
        }
        func time() -> Bool {
            guard let hour = number(2), hour < 24, literal(":"), let minute = number(2), minute < 60, literal(":"),
                let second = number(2), second <= 60
            else { return false }
            if literal(".") {
                let start = index
                while index < scalars.count, isDigit(scalars[index]) { index += 1 }
                guard index > start else { return false }
            }
            return true
        }
        // A local time alone.
        if scalars.count >= 3, scalars[2] == ":" {
            return time() && index == scalars.count ? token : nil
        }
        guard let year = number(4), literal("-"), let month = number(2), (1...12).contains(month), literal("-"),
            let day = number(2), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        if index == scalars.count { return token }
        guard literal("T") || literal("t") || literal(" "), time() else { return nil }
        if index == scalars.count { return token }
        if literal("Z") || literal("z") { return index == scalars.count ? token : nil }
        guard literal("+") || literal("-"), let hours = number(2), hours < 24, literal(":"), let minutes = number(2),
            minutes < 60
        else { return nil }
        return index == scalars.count ? token : nil
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
