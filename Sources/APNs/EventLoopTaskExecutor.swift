import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Runs jobs on an event loop, so tasks can share the thread that owns the connections.
package final class EventLoopTaskExecutor: Sendable {
    let eventLoop: EventLoop

    package init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }
}

@available(macOS 15.0, iOS 18.0, *)
extension EventLoopTaskExecutor: TaskExecutor {
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
