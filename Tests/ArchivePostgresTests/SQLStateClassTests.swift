import Testing
@testable import ArchivePostgres

/// Which server errors a spooled write survives: the failover, timeout, conflict and resource
/// errors are "not now"; a refusal of the statement itself is for good.
@Suite struct SQLStateClassTests {
    @Test(arguments: ["25006", "57014", "40001", "40P01", "53100", "53200", "53300", "53400", "55P03", "55006", "58030"])
    func passingTroublesAreNotNow(_ state: String) {
        #expect(SQLStateClass(state) == .notNow)
    }

    @Test(arguments: ["08006", "08001", "57P01", "57P02", "57P03", "25P03", "40003"])
    func lostConnectionsAreLost(_ state: String) {
        #expect(SQLStateClass(state) == .connectionLost)
    }

    @Test(arguments: ["23505", "23503", "22021", "42P01", "42703", "XX000"])
    func statementErrorsAreRefusals(_ state: String) {
        #expect(SQLStateClass(state) == .refused)
    }

    @Test func credentials() {
        #expect(SQLStateClass("28P01") == .credentials && SQLStateClass("28000") == .credentials)
    }
}
