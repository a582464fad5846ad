import DouctlSystem

/// A small PNG drawn in code for `douctl demo`, so the demo needs no files: 48×48, Douban
/// green with a lighter diagonal band.
enum DemoPicture {
    static func png(size: Int = 48) -> [UInt8] {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(size * size * 3)
        for y in 0..<size {
            for x in 0..<size {
                pixels += abs(x - y) < size / 6 ? [0xC8, 0xF0, 0xC8] : [0x00, 0x77, 0x22]
            }
        }
        return PNGWriter.rgb(width: size, height: size, pixels: pixels)
    }
}
