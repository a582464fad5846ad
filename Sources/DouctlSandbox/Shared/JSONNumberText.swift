extension Double {
    /// Integral values without a fraction (`3600`), others as Swift prints them: JSON number text.
    var jsonNumberText: String {
        if self == rounded(), abs(self) < 1e15 { return String(Int64(self)) }
        return String(self)
    }
}
