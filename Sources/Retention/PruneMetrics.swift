/// A prune's outcome in Prometheus' text format, for node_exporter's textfile collector
/// (`recbot prune --metrics-textfile`): what a cron job's prune did, for alerting and graphs.
public enum PruneMetrics {
    public static func render(_ outcomes: [PruneOutcome], dryRun: Bool, finishedAt: Int64) -> String {
        let pruned = outcomes.filter { $0.decision.verdict == .prune && $0.error == nil }
        let failed = outcomes.filter { $0.error != nil }
        var kept: [String: Int] = [:]
        for outcome in outcomes {
            if case .keep(let why) = outcome.decision.verdict { kept[category(why), default: 0] += 1 }
        }
        var lines = [
            "# HELP recbot_prune_sessions Sessions the last prune removed (or would have: dry_run=\"1\").",
            "# TYPE recbot_prune_sessions gauge",
            "recbot_prune_sessions{dry_run=\"\(dryRun ? 1 : 0)\"} \(pruned.count)",
            "# HELP recbot_prune_bytes Bytes the last prune freed (or would have).",
            "# TYPE recbot_prune_bytes gauge",
            "recbot_prune_bytes{dry_run=\"\(dryRun ? 1 : 0)\"} \(pruned.reduce(Int64(0)) { $0 + (dryRun ? $1.decision.bytes : $1.bytesFreed) })",
            "# HELP recbot_prune_kept Sessions due that the last prune kept, by why.",
            "# TYPE recbot_prune_kept gauge",
        ]
        for reason in ["held", "recording", "unverified", "upload"] { lines.append("recbot_prune_kept{reason=\"\(reason)\"} \(kept[reason] ?? 0)") }
        lines += [
            "# HELP recbot_prune_failures Sessions whose prune failed (a file that could not be removed, a catalog refusal).",
            "# TYPE recbot_prune_failures gauge",
            "recbot_prune_failures \(failed.count)",
            "# HELP recbot_prune_last_run_timestamp_seconds When the last prune finished.",
            "# TYPE recbot_prune_last_run_timestamp_seconds gauge",
            "recbot_prune_last_run_timestamp_seconds \(finishedAt / 1000)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// The label for a kept session's reason (`PruneSelection`'s words).
    static func category(_ why: String) -> String {
        if why.hasPrefix("on hold") { return "held" }
        if why.hasPrefix("still being recorded") { return "recording" }
        if why.contains("not verified") { return "unverified" }
        return "upload"
    }
}
