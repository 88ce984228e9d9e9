/// The largest picture the verifier decodes. Codecs allow far larger (VP8 16383×16383, AV1
/// 65536×65536), and decoding one costs hundreds of MB and about a second, so a hostile
/// publisher's frames, recorded as sent, could make `recbot verify` exhaust a host. 4096×4096
/// is above any WebRTC sender's resolution (Sora's largest is 4K, 3840×2160); a larger frame
/// counts as a decode error, with its size in the message.
public enum DecodeLimits {
    public static let maximumPixels = 4096 * 4096
    public static let description = "at most 4096x4096 pixels"
}
