import Glibc

/// Recordings, sidecars and the catalog hold participants' metadata and chat: everything
/// recbot creates is owner/group-only by default (umask 027: files 0640, directories 0750).
/// `RECBOT_UMASK` (octal, e.g. 077 or 022) changes it.
public enum FilePermissions {
    public static let defaultUmask: mode_t = 0o027

    public static func apply(environment: [String: String]) {
        umask(parse(environment[SettingName.umask.variable]) ?? defaultUmask)
    }

    /// An octal umask of at most 0777, or nil.
    static func parse(_ text: String?) -> mode_t? {
        guard let text, !text.isEmpty, text.count <= 4, let value = mode_t(text, radix: 8), value <= 0o777 else { return nil }
        return value
    }
}
