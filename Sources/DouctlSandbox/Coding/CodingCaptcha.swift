import DouctlSystem

/// Coding's captchas (the login's and the actions'): four characters a person reads off a noisy
/// PNG. The sandbox also logs each code, so tests and scripts can answer without eyes.
enum CodingCaptcha {
    /// No 0/O, 1/I: nothing a person could misread.
    static let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
    static let length = 4
    static let width = 120
    static let height = 40
    private static let scale = 4

    static func text() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    /// Captchas compare without regard to case or surrounding spaces.
    static func matches(_ given: String?, _ expected: String?) -> Bool {
        guard let given, let expected else { return false }
        return given.trimmingSpaces().uppercased() == expected.uppercased()
    }

    /// The picture of `text` (characters outside the font are left blank).
    static func png(_ text: String) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        // 0 = black ink, 255 = white paper; a light, noisy background.
        var pixels = (0..<(width * height)).map { _ in UInt8(225 + Int.random(in: 0...30, using: &generator)) }
        for _ in 0..<(width * height / 12) {
            pixels[Int.random(in: 0..<pixels.count, using: &generator)] = UInt8(Int.random(in: 90...200, using: &generator))
        }
        let glyphWidth = 5 * scale
        let gap = 8
        let characters = Array(text.uppercased())
        let totalWidth = characters.count * glyphWidth + max(0, characters.count - 1) * gap
        var left = max(0, (width - totalWidth) / 2)
        for character in characters {
            let rows = font[character] ?? []
            let top = (height - 7 * scale) / 2 + Int.random(in: -3...3, using: &generator)
            let ink = UInt8(Int.random(in: 10...70, using: &generator))
            for (row, bits) in rows.enumerated() {
                for column in 0..<5 where bits & (0b10000 >> column) != 0 {
                    for dy in 0..<scale {
                        for dx in 0..<scale {
                            let x = left + column * scale + dx
                            let y = top + row * scale + dy
                            if x >= 0 && x < width && y >= 0 && y < height { pixels[y * width + x] = ink }
                        }
                    }
                }
            }
            left += glyphWidth + gap
        }
        // A couple of strike-through lines.
        for _ in 0..<2 {
            var y = Double(Int.random(in: 8..<(height - 8), using: &generator))
            let slope = Double(Int.random(in: -20...20, using: &generator)) / 100
            for x in 0..<width {
                let row = Int(y.rounded())
                if row >= 0 && row < height { pixels[row * width + x] = 120 }
                y += slope
            }
        }
        return PNGWriter.grayscale(width: width, height: height, pixels: pixels)
    }

    /// Rows top to bottom; bit 4 is the leftmost column.
    static let font: [Character: [UInt8]] = [
        "A": [0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        "B": [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110],
        "C": [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110],
        "D": [0b11110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b11110],
        "E": [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111],
        "F": [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000],
        "G": [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],
        "H": [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        "J": [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],
        "K": [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001],
        "L": [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111],
        "M": [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],
        "N": [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001],
        "P": [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000],
        "Q": [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101],
        "R": [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001],
        "S": [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110],
        "T": [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],
        "U": [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        "V": [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],
        "W": [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010],
        "X": [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001],
        "Y": [0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100, 0b00100],
        "Z": [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111],
        "2": [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
        "3": [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
        "4": [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
        "5": [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
        "6": [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
        "7": [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
        "8": [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
        "9": [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
    ]
}
