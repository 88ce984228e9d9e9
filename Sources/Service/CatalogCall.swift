import NIOPosix

/// Runs a catalog call: catalogs block, so their calls run on NIO's thread pool, never on an
/// event loop or the cooperative pool.
func catalogCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await NIOThreadPool.singleton.runIfActive(body)
}
