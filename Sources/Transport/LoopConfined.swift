import NIOCore

/// An object that belongs to one event loop (a peer connection core, a set of recordings),
/// carried to that loop through a `@Sendable` closure.
///
/// NIO's `NIOLoopBound` must be created on its loop, but these objects are made before their
/// loop runs them and are reached from async code that is not on it. Carrying a reference across
/// threads is safe; touching the object is not, so `value` checks that it is read on the loop.
public struct LoopConfined<Value>: @unchecked Sendable {
    private let wrapped: Value
    public let eventLoop: EventLoop

    public init(_ value: Value, eventLoop: EventLoop) {
        (wrapped, self.eventLoop) = (value, eventLoop)
    }

    public var value: Value {
        eventLoop.preconditionInEventLoop()
        return wrapped
    }
}

extension EventLoop {
    /// Runs `body` on this loop with `value`, an object confined to it.
    public func submit<Value, Result>(confined value: Value, _ body: @escaping @Sendable (Value) throws -> Result)
        -> EventLoopFuture<Result> {
        let confined = LoopConfined(value, eventLoop: self)
        return submit { try body(confined.value) }
    }

    /// Runs `body` on this loop with `value`, an object confined to it, and does not wait.
    public func execute<Value>(confined value: Value, _ body: @escaping @Sendable (Value) -> Void) {
        let confined = LoopConfined(value, eventLoop: self)
        execute { body(confined.value) }
    }
}
