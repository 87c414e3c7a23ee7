import Foundation
import Testing

/// The harness that runs the built binary (`CLI`).
@Suite struct CLIHarnessTests {
    /// Input the command never reads must not end the test process (SIGPIPE on the write into the
    /// pipe, once the command has exited: before, this test stopped the whole run with signal 13).
    @Test func inputTheCommandDoesNotReadEndsNothing() throws {
        let r = try CLI().run(["--version"], stdin: Data(count: 1 << 20))
        #expect(r.status == 0 && !r.stdout.isEmpty, "\(r.stderr)")
    }
}
