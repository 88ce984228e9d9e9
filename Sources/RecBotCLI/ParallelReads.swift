import Dispatch
import Synchronization

/// Runs a read-only job over many inputs on up to `jobs` threads, results in input order:
/// verifying a long session's files decodes every frame, and one core is the bound otherwise.
/// A nil input gives a nil result without running the job.
enum ParallelReads {
    static func map<Result: Sendable>(_ inputs: [String?], jobs: Int, _ job: @Sendable @escaping (String) -> Result?) -> [Result?] {
        let results = Mutex<[Result?]>(Array(repeating: nil, count: inputs.count))
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, inputs.count))) { _ in
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < inputs.count else { return }
                guard let input = inputs[index] else { continue }
                let result = job(input)
                results.withLock { $0[index] = result }
            }
        }
        return results.withLock { $0 }
    }
}
