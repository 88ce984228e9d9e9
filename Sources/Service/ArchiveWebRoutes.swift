import Archive
import ArchiveWeb
import DiskLayout
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceCore

/// The web archive (docs/web.md): read-only pages over the catalog and the files it names.
/// Open on a loopback address; elsewhere every request needs the configured credentials.
public struct ArchiveWebEndpoints: Sendable {
    public var store: any CatalogStore
    public var dataDirectory: DataDirectory
    /// Who may read; ignored when `open`.
    public var authentication: RequestAuthentication
    /// Bound to loopback with no credentials configured: anyone on this host may read.
    public var open: Bool
    /// The CLI's time syntax (RFC 3339, a date, an age such as 7d) for the filters.
    public var parseTime: @Sendable (String) -> Int64?
    public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    public var logger: Logger

    static let maximumCaptionBytes = 16 << 20

    public init(store: any CatalogStore, dataDirectory: DataDirectory, authentication: RequestAuthentication, open: Bool,
                parseTime: @escaping @Sendable (String) -> Int64?, logger: Logger) {
        (self.store, self.dataDirectory, self.authentication, self.open, self.parseTime, self.logger) =
            (store, dataDirectory, authentication, open, parseTime, logger)
    }

    public func add(to router: Router<BasicRequestContext>) {
        router.get("/") { request, _ in try await guarded(request) { Response(status: .found, headers: [.location: WebPaths.sessions]) } }
        router.get("archive") { request, _ in try await guarded(request) { try await sessions(request) } }
        router.get("archive/search") { request, _ in try await guarded(request) { try await search(request) } }
        router.get("archive/sessions/:id") { request, context in
            try await guarded(request) { try await session(id: context.parameters.get("id") ?? "") }
        }
        router.get("archive/recordings/:id") { request, context in
            try await guarded(request) { try await recording(id: context.parameters.get("id") ?? "") }
        }
        router.get("archive/files/:name") { request, context in
            try await guarded(request) { try await file(request, name: context.parameters.get("name") ?? "", context: context) }
        }
        router.get("archive/compositions/:name") { request, context in
            try await guarded(request) { try await composition(request, name: context.parameters.get("name") ?? "", context: context) }
        }
        router.get("archive/assets/archive.css") { request, _ in try await guarded(request) { Self.asset(WebAssets.stylesheet, type: "text/css") } }
        router.get("archive/assets/archive.js") { request, _ in try await guarded(request) { Self.asset(WebAssets.script, type: "text/javascript") } }
    }

    private func guarded(_ request: Request, _ body: () async throws -> Response) async throws -> Response {
        guard open || authentication.accepts(headers: ServiceEndpoints.headers(request)) else {
            var response = Self.page(.unauthorized, WebPage(title: "Sign in", body: "<p class=\"error\">This archive needs credentials.</p>").rendered())
            response.headers[.wwwAuthenticate] = #"Basic realm="recbot archive", charset="UTF-8""#
            return response
        }
        return try await body()
    }

    // MARK: Pages

    func sessions(_ request: Request) async throws -> Response {
        let query = FormQuery(request.uri.query)
        var filter = SessionListPage.Filter(channelID: query.get("channel").flatMap { $0.isEmpty ? nil : $0 },
                                            sinceText: query.get("since"), untilText: query.get("until"))
        var errors: [String] = []
        filter.since = time(filter.sinceText, name: "since", errors: &errors)
        filter.until = time(filter.untilText, name: "until", errors: &errors)
        guard errors.isEmpty else {
            return Self.page(.badRequest, SessionListPage(sessions: [], filter: filter, hasOlder: false, error: errors.joined(separator: "; ")).rendered())
        }
        let page = try await catalogCall { [store, filter] in try SessionListPage.load(from: store, filter: filter) }
        return Self.page(.ok, page.rendered())
    }

    /// A time filter: the CLI's syntax, or the milliseconds an "older" link carries.
    private func time(_ text: String?, name: String, errors: inout [String]) -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        if let milliseconds = Int64(text), text.utf8.count >= 10 { return milliseconds }
        guard let parsed = parseTime(text) else {
            errors.append("\(name): “\(text.prefix(40))” is not a time (use 2026-11-22, 2026-11-22 10:00, RFC 3339, or an age such as 7d)")
            return nil
        }
        return parsed
    }

    func search(_ request: Request) async throws -> Response {
        let query = FormQuery(request.uri.query)
        let text = String((query.get("q") ?? "").prefix(1_024))
        let channel = query.get("channel").flatMap { $0.isEmpty ? nil : $0 }
        var page = SearchPage(text: text, channelID: channel, results: [], limit: MessageSearch.defaultLimit)
        (page.sinceText, page.untilText) = (query.get("since"), query.get("until"))
        var errors: [String] = []
        let (since, until) = (time(page.sinceText, name: "since", errors: &errors), time(page.untilText, name: "until", errors: &errors))
        if let kind = query.get("kind"), !kind.isEmpty {
            page.kind = EventKind(rawValue: kind).flatMap { SearchPage.kinds.contains($0) ? $0 : nil }
            if page.kind == nil { errors.append("kind: “\(kind.prefix(40))” is not one of \(SearchPage.kinds.map(\.rawValue).joined(separator: ", "))") }
        }
        guard errors.isEmpty else {
            page.error = errors.joined(separator: "; ")
            return Self.page(.badRequest, page.rendered())
        }
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            page.text = ""
            return Self.page(.ok, page.rendered())
        }
        let search = MessageSearch(text: text, channelID: channel, since: since, until: until, kinds: page.kind.map { [$0] } ?? [])
        let (results, caveat) = try await catalogCall { [store] in
            (try SearchResults.find(search, in: store), try store.searchIndexCaveat())
        }
        (page.results, page.limit, page.caveat) = (results, search.limit, caveat)
        return Self.page(.ok, page.rendered())
    }

    func session(id: String) async throws -> Response {
        let (store, dataDirectory, now) = (store, dataDirectory, now())
        let page = try await catalogCall { try SessionPage.load(from: store, id: id, dataDirectory: dataDirectory, now: now) }
        guard let page else { return Self.notFound("No session \(id.prefix(40)).") }
        return Self.page(.ok, page.rendered())
    }

    func recording(id text: String) async throws -> Response {
        guard let id = Int64(text) else { return Self.notFound("No recording \(text.prefix(40)).") }
        let (store, dataDirectory) = (store, dataDirectory)
        let page: RecordingPage? = try await catalogCall {
            guard let recording = try store.recording(id: id) else { return nil }
            let captions = SessionPage.hasCaptions(recording, in: dataDirectory)
            return RecordingPage(recording: recording, session: try store.session(id: recording.sessionID), hasCaptions: captions)
        }
        guard let page else { return Self.notFound("No recording \(id).") }
        return Self.page(.ok, page.rendered())
    }

    // MARK: Files

    /// `<id>.webm` (with byte ranges, for seeking) or `<id>.vtt`: only the files a recording row
    /// names, resolved through the data directory's layout, never a path from the request.
    func file(_ request: Request, name: String, context: BasicRequestContext) async throws -> Response {
        let (base, type) = name.hasSuffix(".webm") ? (name.dropLast(5), "webm") : name.hasSuffix(".vtt") ? (name.dropLast(4), "vtt") : ("", "")
        guard let id = Int64(base) else { return Self.notFound("No such file.") }
        let (store, dataDirectory) = (store, dataDirectory)
        let path: String? = try await catalogCall {
            guard let recording = try store.recording(id: id) else { return nil }
            return type == "webm" ? dataDirectory.recordingFile(catalogPath: recording.path, sessionID: recording.sessionID, connectionID: recording.connectionID)
                : SessionPage.captionsPath(recording, in: dataDirectory)
        }
        guard let path else { return Self.notFound("No such file.") }
        guard let size = try await catalogCall({ Self.regularFileSize(path) }) else {
            return Self.notFound("The file is not on this host's disk (moved, pruned, or recorded elsewhere).")
        }
        if type == "vtt" { return try await captions(path: path, size: size) }
        return try await media(request, path: path, size: size, context: context)
    }

    /// `<session>.webm`: the composition `recbot compose` wrote in the session's directory;
    /// `<session>.vtt`: its captions.
    func composition(_ request: Request, name: String, context: BasicRequestContext) async throws -> Response {
        if name.hasSuffix(".vtt") {
            guard let path = SessionPage.compositionCaptionsPath(session: String(name.dropLast(4)), in: dataDirectory),
                  let size = try await catalogCall({ Self.regularFileSize(path) }) else { return Self.notFound("No captions of that composition.") }
            return try await captions(path: path, size: size)
        }
        guard name.hasSuffix(".webm"), let path = SessionPage.compositionPath(session: String(name.dropLast(5)), in: dataDirectory),
              let size = try await catalogCall({ Self.regularFileSize(path) }) else { return Self.notFound("No composition of that session.") }
        return try await media(request, path: path, size: size, context: context)
    }

    private func captions(path: String, size: Int64) async throws -> Response {
        guard size <= Self.maximumCaptionBytes, let data = try await catalogCall({ FileManager.default.contents(atPath: path) }) else {
            return Self.notFound("The captions are too large to serve.")
        }
        return Response(status: .ok, headers: [.contentType: "text/vtt; charset=utf-8", .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private func media(_ request: Request, path: String, size: Int64, context: BasicRequestContext) async throws -> Response {
        var headers: HTTPFields = [.contentType: "video/webm", .acceptRanges: "bytes", .cacheControl: "no-cache"]
        switch ByteRange(header: request.headers[.range], size: size) {
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        case .part(let range):
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = String(range.upperBound - range.lowerBound + 1)
            let body = try await FileIO().loadFile(path: path, range: Int(range.lowerBound)...Int(range.upperBound), context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        case .whole:
            headers[.contentLength] = String(size)
            guard size > 0 else { return Response(status: .ok, headers: headers) }
            return Response(status: .ok, headers: headers, body: try await FileIO().loadFile(path: path, range: 0...Int(size - 1), context: context))
        }
    }

    /// A regular file's size (not a directory, a FIFO or a device someone put in its place).
    static func regularFileSize(_ path: String) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              attributes[.type] as? FileAttributeType == .typeRegular else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    // MARK: Responses

    static func page(_ status: HTTPResponse.Status, _ html: String) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache",
                                           .init("Content-Security-Policy")!: "default-src 'self'; style-src 'self'; script-src 'self'; media-src 'self'",
                                           .init("X-Content-Type-Options")!: "nosniff", .init("Referrer-Policy")!: "no-referrer"],
                 body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func notFound(_ message: String) -> Response {
        page(.notFound, WebPage(title: "Not found", body: "<p class=\"error\">\(HTML.escape(message))</p>").rendered())
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: "\(type); charset=utf-8", .cacheControl: "max-age=300"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
