/// Serial-number order (RFC 1982) for TSNs, stream sequence numbers and reset request
/// numbers, which wrap: `value` is after `reference` when it is less than half the space ahead.
func isAfter<Number: FixedWidthInteger & UnsignedInteger>(_ value: Number, _ reference: Number) -> Bool {
    let distance = value &- reference
    return distance != 0 && distance <= Number.max / 2
}
