import NIOCore

/// A value that lives on one event loop, carried by other threads only to be handed back to
/// that loop. NIO's `NIOLoopBound` must be made on the loop; this one can be made before the
/// loop runs anything, and every use is on the loop.
struct LoopConfined<Value>: @unchecked Sendable {
    private let value: Value
    let loop: any EventLoop

    init(_ value: Value, loop: any EventLoop) {
        self.value = value
        self.loop = loop
    }

    /// Runs `body` with the value on its loop.
    func execute(_ body: @escaping @Sendable (Value) -> Void) {
        loop.execute {
            loop.preconditionInEventLoop()
            body(value)
        }
    }
}
