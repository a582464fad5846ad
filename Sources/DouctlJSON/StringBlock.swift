#if arch(x86_64)
import _Builtin_intrinsics.intel

/// Sixteen bytes of a string token looked at in one go with SSE2 (which every x86-64 has).
enum StringBlock {
    /// A bit for each of the 16 bytes at `position` (bit 0 for the first) that a string's
    /// copy must look at: '"', '\\', controls, U+007F and all non-ASCII bytes (those of
    /// `SWAR.specialInStringToken`, here exact in every lane). Zero when all are plain.
    @inline(__always)
    static func special(at position: UnsafePointer<UInt8>) -> UInt32 {
        // Inlined, the unused mask of high bytes is never computed.
        marks(at: position).special
    }

    /// `special`'s marks, and a bit for each non-ASCII byte among them.
    @inline(__always)
    static func marks(at position: UnsafePointer<UInt8>) -> (special: UInt32, high: UInt32) {
        let bytes = UnsafeRawPointer(position).loadUnaligned(as: __m128i.self)
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x22))
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x5C))
        // A signed compare: the controls, and the non-ASCII bytes, which are negative.
        let controlOrHigh = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20))
        let delete = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x7F))
        let marked = _mm_or_si128(_mm_or_si128(quote, backslash), _mm_or_si128(controlOrHigh, delete))
        return (UInt32(truncatingIfNeeded: _mm_movemask_epi8(marked)), UInt32(truncatingIfNeeded: _mm_movemask_epi8(bytes)))
    }

    /// A bit for each of the 16 bytes at `position` that is a UTF-8 continuation byte
    /// (0x80–0xBF), and one for each that leads a 3-byte character whose second byte may be
    /// any continuation byte (0xE1–0xEC, 0xEE, 0xEF: not 0xE0 or 0xED, which narrow it),
    /// and the number of continuation bytes.
    @inline(__always)
    static func threeByteCharacters(at position: UnsafePointer<UInt8>) -> (continuation: UInt32, lead: UInt32, continuations: Int) {
        let bytes = UnsafeRawPointer(position).loadUnaligned(as: __m128i.self)
        // Signed compares: 0x80–0xBF are -128...-65, 0xE1–0xEF are -31...-17.
        let continuation = _mm_cmplt_epi8(bytes, _mm_set1_epi8(-64))
        let leadRange = _mm_and_si128(_mm_cmpgt_epi8(bytes, _mm_set1_epi8(-32)), _mm_cmplt_epi8(bytes, _mm_set1_epi8(-16)))
        let lead = _mm_andnot_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(-19)), leadRange)
        // How many continuation bytes: a sum of ones per half (SSE2 has no population count).
        let sums = _mm_sad_epu8(_mm_and_si128(continuation, _mm_set1_epi8(1)), _mm_setzero_si128())
        let count = _mm_cvtsi128_si32(sums) &+ _mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums))
        return (UInt32(truncatingIfNeeded: _mm_movemask_epi8(continuation)), UInt32(truncatingIfNeeded: _mm_movemask_epi8(lead)), Int(count))
    }

    /// Copies the 16 bytes at `source` to `target` (neither need be aligned).
    @inline(__always)
    static func copy(from source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(target).storeBytes(of: UnsafeRawPointer(source).loadUnaligned(as: __m128i.self), as: __m128i.self)
    }
}
#endif
