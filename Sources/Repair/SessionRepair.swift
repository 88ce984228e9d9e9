import Archive
import DiskLayout
import Foundation
import Media
import Recorder
import WebM
import WireCoding

/// What `recbot repair` did with one session.
public struct SessionRepairOutcome: Sendable {
    public enum Action: String, Sendable {
        case repaired, stillRecording = "still recording", otherHost = "other host", nothingToDo = "nothing to do", refused, failed
    }

    public var sessionID: String
    public var action: Action
    public var files: [FileOutcome] = []
    public var detail: String?

    public init(sessionID: String, action: Action, detail: String? = nil) {
        (self.sessionID, self.action, self.detail) = (sessionID, action, detail)
    }

    public struct FileOutcome: Sendable {
        public var path: String
        public var repaired: RepairedFile?
        public var error: String?
        /// The file's name before a repair renamed it (a dead process's part 0 after a failover).
        public var renamedFrom: String?
    }
}

/// Finishes what a killed `recbot join` left: each unfinished file rewritten into a finalized
/// one, its catalog row marked `repaired` (or inserted, for a file the catalog never heard of),
/// sidecars and the report written, and the session ended as `crashed`. A session whose
/// process is still alive on this host is left alone, so it is safe beside running joins; one
/// recorded on another host is only touched when forced.
public struct SessionRepair {
    public let catalog: any CatalogStore
    public let dataDirectory: DataDirectory
    public let hostname: String
    /// The name recordings found here are cataloged under (`JoinOptions.host`).
    public let storageHost: String
    public let isProcessAlive: (Int) -> Bool

    /// Segment UIDs of rewritten files.
    public let random: any RandomSource

    public init(catalog: any CatalogStore, dataDirectory: DataDirectory, random: any RandomSource, hostname: String = ProcessInfo.processInfo.hostName,
                storageHost: String? = nil, isProcessAlive: @escaping (Int) -> Bool = SessionRepair.processExists) {
        self.random = random
        self.catalog = catalog
        self.dataDirectory = dataDirectory
        self.hostname = hostname
        self.storageHost = storageHost ?? hostname
        self.isProcessAlive = isProcessAlive
    }

    /// Whether `pid` is a live process on this host (`LocalProcess.isAlive`).
    public static func processExists(_ pid: Int) -> Bool { LocalProcess.isAlive(pid: pid) }

    /// Sessions that never ended, still have recordings in state `recording`, or have a dead
    /// process's part 0 to renumber after a failover (`PartZeroRenumbering`).
    public func unfinishedSessions() throws(CatalogError) -> [SessionRecord] {
        let open = try catalog.sessions().filter { $0.endedAt == nil }
        let rows = try catalog.recordings()
        var ids = Set(rows.filter { $0.status == .recording }.map(\.sessionID))
        for (id, session) in Dictionary(grouping: rows, by: \.sessionID) where !PartZeroRenumbering.candidates(session, storageHost: storageHost).isEmpty {
            ids.insert(id)
        }
        var sessions = open
        for id in ids.subtracting(open.map(\.id)) {
            if let session = try catalog.session(id: id) { sessions.append(session) }
        }
        return sessions.sorted { $0.startedAt < $1.startedAt }
    }

    public func repair(_ session: SessionRecord, force: Bool = false) throws(CatalogError) -> SessionRepairOutcome {
        var outcome = SessionRepairOutcome(sessionID: session.id, action: .repaired)
        let current = session.segment ?? SessionSegmentRecord.first
        let continued = current > SessionSegmentRecord.first
        // Another process records the session now (it took over after a failover): only the
        // earlier segments' files here are finished, and the session stays open.
        var busy: (action: SessionRepairOutcome.Action, detail: String)?
        if session.endedAt == nil, !force, let live = liveness(session) {
            guard continued else {
                (outcome.action, outcome.detail) = live
                return outcome
            }
            busy = (live.action, "segment \(current) records it now (\(live.detail)); only earlier segments' files were looked at")
        }
        guard let layout = dataDirectory.confinedLayout(session: session.id) else {
            outcome.action = .refused
            outcome.detail = "the catalog's session id is not one recbot makes; nothing touched"
            return outcome
        }
        let context = try sidecarContext(session)
        var rows = try catalog.recordings(RecordingFilter(sessionID: session.id))
        // In a session more than one process recorded, each repairs its own host's files.
        let ours = { (row: RecordingRecord) in
            (!continued || row.host == nil || row.host == storageHost) && (busy == nil || (row.segment ?? SessionSegmentRecord.first) != current)
        }
        // A live process's newest file may not be cataloged yet: files are only adopted when none is.
        let unknown: [RecordingRecord] = busy != nil ? [] : unknownFiles(layout: layout, rows: rows).map { name, sender in
            var row = RecordingRecord(sessionID: session.id, connectionID: sender.connectionID, part: sender.part,
                                      path: layout.catalogPath(name), videoCodec: nil, audioCodec: nil, startedAt: session.startedAt)
            row.startedAt = estimatedFileStart(layout.path(of: name), session: session)
            row.host = storageHost
            return row
        }
        let nextStarts = CatalogRecordings.nextPartStarts(rows + unknown)
        for index in rows.indices where rows[index].status == .recording && ours(rows[index]) {
            outcome.files.append(repairRow(&rows[index], session: session, layout: layout, context: context, nextStarts: nextStarts))
            try catalog.updateRecording(rows[index])
        }
        for var row in unknown {
            outcome.files.append(repairRow(&row, session: session, layout: layout, context: context, nextStarts: nextStarts))
            rows.append(try catalog.insertRecording(row))
        }
        let renumbering = PartZeroRenumbering(catalog: catalog, dataDirectory: dataDirectory)
        for index in PartZeroRenumbering.candidates(rows, storageHost: storageHost) where ours(rows[index]) {
            outcome.files.append(try renumbering.rename(&rows[index], layout: layout))
        }
        if let busy {
            if outcome.files.isEmpty { outcome.action = busy.action }
            outcome.detail = busy.detail
            return outcome
        }
        if outcome.files.isEmpty && session.endedAt != nil { outcome.action = .nothingToDo }
        // A continued session's report is its last process's, where that process wrote it;
        // one is written here only when this repair ends the session.
        if !continued || session.endedAt == nil,
           let problem = writeReport(rows, session: session, layout: layout, context: context, nextStarts: nextStarts) {
            (outcome.action, outcome.detail) = (.failed, problem)
        }
        if session.endedAt == nil {
            let end = rows.compactMap(\.endedAt).max() ?? session.startedAt
            try catalog.endSession(id: session.id, endedAt: end, endReason: "crashed", exitStatus: nil)
        }
        return outcome
    }

    /// Why the session's current process is not this repair's to finish (nil: it is): alive
    /// here, or on another host.
    private func liveness(_ session: SessionRecord) -> (action: SessionRepairOutcome.Action, detail: String)? {
        if session.hostname == hostname, let pid = session.pid, isProcessAlive(pid) { return (.stillRecording, "pid \(pid) is alive") }
        if let other = session.hostname, other != hostname { return (.otherHost, "recorded on \(other); --force repairs it from here") }
        return nil
    }

    /// Rewrites one row's file and fills the row in from what the file holds.
    private func repairRow(_ row: inout RecordingRecord, session: SessionRecord, layout: ArchiveLayout,
                           context: SidecarContext, nextStarts: [String: Int64]) -> SessionRepairOutcome.FileOutcome {
        guard let path = dataDirectory.recordingFile(catalogPath: row.path, sessionID: row.sessionID, connectionID: row.connectionID) else {
            row.status = .interrupted
            row.error = "the catalog names no file recbot writes (\(row.path.debugDescription)); nothing touched"
            return .init(path: row.path, error: row.error)
        }
        do {
            let file = try FileRepair.repair(path: path, random: random)
            row.status = .repaired
            row.bytes = Int64(clamping: file.size)
            row.videoFrames = Int64(file.videoFrames)
            row.audioFrames = Int64(file.audioFrames)
            row.videoCodec = file.videoFrames > 0 ? file.videoCodec?.rawValue : row.videoCodec
            row.audioCodec = file.audioChannels != nil ? "OPUS" : row.audioCodec
            row.durationMs = file.lastMilliseconds.map { $0 + 20 } ?? 0
            row.endedAt = row.startedAt + (row.durationMs ?? 0)
            if let width = file.videoWidth, let height = file.videoHeight, row.videoSizes == nil { row.videoSizes = "\(width)x\(height)" }
            try writeSidecar(finished(row, file: file, session: session, layout: layout, nextPartStart: nextStarts[row.path]),
                             context: context, layout: layout)
            return .init(path: path, repaired: file)
        } catch {
            // A disk that was full (the media's rewrite, or its sidecar) leaves the row
            // `recording`: the next repair finishes it. A file nothing can be kept of is interrupted.
            row.status = (error as? RepairError)?.isTransient ?? true ? .recording : .interrupted
            return .init(path: path, error: "\(error)")
        }
    }

    private func finished(_ row: RecordingRecord, file: RepairedFile?, session: SessionRecord, layout: ArchiveLayout,
                          nextPartStart: Int64?) -> FinishedRecording {
        CatalogRecordings.finished(row, file: file, sessionStartedAt: session.startedAt, layout: layout, nextPartStart: nextPartStart)
    }

    private func writeSidecar(_ recording: FinishedRecording, context: SidecarContext, layout: ArchiveLayout) throws {
        var object = Sidecar.object(recording, context: context, layout: layout)
        object["repaired"] = true
        try ArchiveLayout.writeJSON(object, to: layout.path(of: recording.sidecarFilename))
    }

    /// Why the report could not be written (nil when it was, or there is nothing to report).
    private func writeReport(_ rows: [RecordingRecord], session: SessionRecord, layout: ArchiveLayout, context: SidecarContext,
                             nextStarts: [String: Int64]) -> String? {
        let written = rows.filter { $0.status != .interrupted }
        guard !written.isEmpty, FileManager.default.fileExists(atPath: layout.directory) else { return nil }
        let recordings = written.map { finished($0, file: nil, session: session, layout: layout, nextPartStart: nextStarts[$0.path]) }
        let stopped = rows.compactMap(\.endedAt).max() ?? session.startedAt
        let failed = rows.filter { $0.status == .interrupted }.map(\.connectionID)
        do {
            try writeMissingSplitEnds(written, layout: layout, context: context)
            try ArchiveLayout.writeJSON(Sidecar.report(recordings, failed: failed, context: context, layout: layout,
                                                       startedAtMilliseconds: session.startedAt, stoppedAtMilliseconds: stopped), to: layout.reportPath)
        } catch {
            return "report \(layout.reportPath) not written: \(error.localizedDescription)"
        }
        return nil
    }

    /// A sender recorded in parts (split, codec change, rejoin) whose join was killed has no end
    /// marker naming its last part: written before the report, as the join would have.
    private func writeMissingSplitEnds(_ rows: [RecordingRecord], layout: ArchiveLayout, context: SidecarContext) throws {
        for (sender, parts) in Dictionary(grouping: rows, by: \.connectionID) {
            guard ArchiveLayout.isSafeConnectionID(sender), let last = parts.map(\.part).max(), last > 0 else { continue }
            let marker = layout.path(of: layout.splitEndFilename(connectionID: sender))
            guard !FileManager.default.fileExists(atPath: marker) else { continue }
            try ArchiveLayout.writeJSON(Sidecar.splitEnd(connectionID: sender, lastPart: last, context: context), to: marker)
        }
    }

    /// Media files in the session's directory the catalog has no row for (a kill between
    /// creating the file and cataloging it).
    private func unknownFiles(layout: ArchiveLayout, rows: [RecordingRecord]) -> [(String, (connectionID: String, part: Int))] {
        let known = Set(rows.map { ($0.path as NSString).lastPathComponent })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: layout.directory)) ?? []
        return names.sorted().compactMap { name in
            guard !known.contains(name), case .media(let connectionID, let part) = ArchiveFile(name: name) else { return nil }
            return (name, (connectionID, part))
        }
    }

    /// Without a row the file's start is not known: its last write, less what it holds, rounded
    /// down to the whole second after the recording start that files start on.
    private func estimatedFileStart(_ path: String, session: SessionRecord) -> Int64 {
        let modified = ((try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date).flatMap(Self.unixMilliseconds)
        // Both come from outside (a file's mtime, a shared catalog's row): checked.
        let (difference, overflow) = (modified ?? session.startedAt).subtractingReportingOverflow(session.startedAt)
        let span = overflow ? 0 : max(0, difference)
        return session.startedAt + span / 1000 * 1000
    }

    /// A file's time in Unix milliseconds; nil for one no Int64 holds (any mtime can be set,
    /// `touch -d @9223372036854775` included, and `Int64(Double)` traps beyond the range).
    static func unixMilliseconds(_ date: Date) -> Int64? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, milliseconds >= -9.2e18, milliseconds <= 9.2e18 else { return nil }
        return Int64(milliseconds)
    }

    private func sidecarContext(_ session: SessionRecord) throws(CatalogError) -> SidecarContext {
        let connections = try catalog.connections(sessionID: session.id)
        var clientIDs: [String: String] = [:], bundleIDs: [String: String] = [:]
        for connection in connections {
            clientIDs[connection.connectionID] = connection.clientID
            bundleIDs[connection.connectionID] = connection.bundleID
        }
        var context = SidecarContext(recordingID: session.id, channelID: session.channelID, soraSessionID: session.soraSessionID,
                                     clientIDs: clientIDs, bundleIDs: bundleIDs, botConnectionID: session.connectionID,
                                     recbotVersion: session.recbotVersion ?? "unknown", endReason: "crashed")
        (context.splitDurationSeconds, context.splitOnly, context.recordingMetadata) = (session.splitDuration, session.splitOnly, session.recordingMetadata)
        return context
    }
}
