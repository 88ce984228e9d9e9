import Archive
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceCore

/// What the HTTP side of `recbot serve` answers, and with what it checks callers.
public struct ServiceEndpoints: Sendable {
    public var store: any CatalogStore
    public var rules: RecordingRules
    /// Sora's webhooks (`POST /webhooks/sora`).
    public var webhookAuthentication: RequestAuthentication
    /// The API (`/recordings`).
    public var apiAuthentication: RequestAuthentication
    public var logger: Logger
    public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    /// Called when a job was queued or asked to stop: this process's worker looks at once
    /// instead of at its next heartbeat.
    public var jobsChanged: @Sendable () -> Void = {}

    public init(store: any CatalogStore, rules: RecordingRules, webhookAuthentication: RequestAuthentication,
                apiAuthentication: RequestAuthentication, logger: Logger) {
        (self.store, self.rules, self.webhookAuthentication, self.apiAuthentication, self.logger) =
            (store, rules, webhookAuthentication, apiAuthentication, logger)
    }

    /// The routes. Every body is read up to its own bound (413 past it); every caller but the
    /// probe is authenticated (401); a body that does not parse is 400 and changes nothing.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("healthz") { _, _ in Self.json(.ok, #"{"status":"ok"}"#) }
        router.post("webhooks/sora") { request, _ in try await webhook(request) }
        router.post("recordings") { request, _ in try await startRecording(request) }
        router.get("recordings") { request, _ in try await listRecordings(request) }
        router.get("recordings/:id") { request, context in try await showRecording(request, id: context.parameters.get("id") ?? "") }
        router.delete("recordings/:id") { request, context in try await stopRecording(request, id: context.parameters.get("id") ?? "") }
        return router
    }

    // MARK: Sora's webhooks

    func webhook(_ request: Request) async throws -> Response {
        guard webhookAuthentication.accepts(headers: Self.headers(request)) else { return Self.unauthorized() }
        let body = try await request.body.collect(upTo: SoraWebhookEvent.maximumBodyBytes)
        let event: SoraWebhookEvent
        do { event = try SoraWebhookEvent(body: Array(buffer: body)) } catch {
            logger.warning("webhook refused", metadata: ["reason": "\(error)"])
            return Self.problem(.badRequest, error.description)
        }
        switch event {
        case .sessionCreated(let session):
            try await sessionCreated(session)
        case .sessionDestroyed(let session):
            let stopped = try await catalogCall { [store, now] in
                try store.requestJobStop(id: nil, soraSessionID: session.sessionID, at: now(), reason: "session.destroyed")
            }
            for job in stopped { logger.notice("session destroyed: job stopping", metadata: ["job": "\(job.id)", "channel": "\(job.channelID)"]) }
            if !stopped.isEmpty { jobsChanged() }
        case .connectionCreated, .connectionDestroyed, .ignored:
            break
        }
        // Sora reads session.created's answer as options for the session: an empty object asks for none.
        return Self.json(.ok, "{}")
    }

    private func sessionCreated(_ session: SoraSessionInfo) async throws {
        guard let rule = rules.match(session) else {
            logger.info("session not recorded: no rule matches", metadata: ["channel": "\(session.channelID)"])
            return
        }
        let time = now()
        let options = rule.options ?? JobOptions()
        let job = JobRecord(id: ULID.generate(now: UInt64(time)).string, channelID: session.channelID, soraSessionID: session.sessionID,
                            origin: .webhook, rule: rule.name, options: options.encoded(), createdAt: time)
        let inserted = try await catalogCall { [store] in try store.insertJob(job) }
        if inserted { jobsChanged() }
        logger.notice(inserted ? "job queued" : "job already queued for this session",
                      metadata: ["job": "\(job.id)", "channel": "\(session.channelID)", "rule": "\(rule.name)", "sora_session": "\(session.sessionID)"])
    }

    // MARK: The API

    func startRecording(_ request: Request) async throws -> Response {
        guard apiAuthentication.accepts(headers: Self.headers(request)) else { return Self.unauthorized() }
        let body = try await request.body.collect(upTo: RecordingRequest.maximumBodyBytes)
        let recording: RecordingRequest
        do { recording = try RecordingRequest(body: Array(buffer: body)) } catch { return Self.problem(.badRequest, error.description) }
        let time = now()
        let job = JobRecord(id: ULID.generate(now: UInt64(time)).string, channelID: recording.channelID, origin: .api,
                            options: recording.options.encoded(), createdAt: time, expiresAt: recording.expireTime.map { time + $0 * 1000 })
        let outcome: JobRecord? = try await catalogCall { [store] in
            // One recording per channel, as Sora's own API has it.
            guard try store.jobs(JobFilter(states: [.queued, .running], channelID: recording.channelID, limit: 1)).isEmpty else { return nil }
            _ = try store.insertJob(job)
            return try store.job(id: job.id)
        }
        guard let created = outcome else { return Self.problem(.conflict, "channel \(recording.channelID) is being recorded already") }
        logger.notice("job queued", metadata: ["job": "\(job.id)", "channel": "\(job.channelID)", "origin": "api"])
        jobsChanged()
        return Self.json(.created, JobView.encode(JobView(created)))
    }

    func listRecordings(_ request: Request) async throws -> Response {
        guard apiAuthentication.accepts(headers: Self.headers(request)) else { return Self.unauthorized() }
        var filter = JobFilter(limit: 1_000)
        if let text = request.uri.queryParameters.get("state") {
            let states = text.split(separator: ",").map { JobState(rawValue: String($0)) }
            guard !states.isEmpty, states.allSatisfy({ $0 != nil }) else {
                return Self.problem(.badRequest, "state must be queued, running, ended or cancelled (comma separated)")
            }
            filter.states = states.compactMap { $0 }
        }
        filter.channelID = request.uri.queryParameters.get("channel_id")
        let jobs = try await catalogCall { [store, filter] in try store.jobs(filter) }
        return Self.json(.ok, JobView.encode(jobs.map(JobView.init)))
    }

    func showRecording(_ request: Request, id: String) async throws -> Response {
        guard apiAuthentication.accepts(headers: Self.headers(request)) else { return Self.unauthorized() }
        guard let job = try await catalogCall({ [store] in try store.job(id: id) }) else { return Self.problem(.notFound, "no job \(id.prefix(40))") }
        return Self.json(.ok, JobView.encode(JobView(job)))
    }

    func stopRecording(_ request: Request, id: String) async throws -> Response {
        guard apiAuthentication.accepts(headers: Self.headers(request)) else { return Self.unauthorized() }
        let (stopped, existing) = try await catalogCall { [store, now] in
            (try store.requestJobStop(id: id, soraSessionID: nil, at: now(), reason: "api"), try store.job(id: id))
        }
        guard let job = existing else { return Self.problem(.notFound, "no job \(id.prefix(40))") }
        guard !stopped.isEmpty else { return Self.problem(.conflict, "job \(id) is \(job.state.rawValue) (or stopping already)") }
        logger.notice("job stopping on request", metadata: ["job": "\(id)", "origin": "api"])
        jobsChanged()
        return Self.json(.accepted, JobView.encode(JobView(job)))
    }

    // MARK: Helpers

    static func headers(_ request: Request) -> [(name: String, value: String)] {
        request.headers.map { ($0.name.canonicalName, $0.value) }
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    static func problem(_ status: HTTPResponse.Status, _ detail: String) -> Response {
        json(status, JobView.encode(["error": detail]))
    }

    static func unauthorized() -> Response {
        var response = problem(.unauthorized, "missing or wrong credentials")
        response.headers[.wwwAuthenticate] = #"Basic realm="recbot""#
        return response
    }

}
