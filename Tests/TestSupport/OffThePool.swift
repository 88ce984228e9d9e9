import Testing

/// Runs every test of a suite (or one test) with `DedicatedExecutor.shared` as its task
/// executor, for async tests that block along the way (a server started with polls, a child
/// process waited for, large files written). On Swift's cooperative pool, one thread per core,
/// each such step waited behind the suite's CPU-bound unit tests: the upload tests' serialized
/// chain took 168 s for its first case and ended the whole suite 30 s after everything else.
public struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Only around each case: a suite's own scope would nest the preference to no effect.
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(DedicatedExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OffThePool {
    /// See `OffThePool`.
    public static var offThePool: Self { OffThePool() }
}
