import SoraSignalingCore
import Testing

@Suite struct DataChannelRoleTests {
    @Test func rolesComeFromLabelsAndOnlySoraChannelsAreInterpreted() {
        #expect(DataChannelRole(label: "signaling") == .signaling && DataChannelRole(label: "stats") == .stats)
        #expect(DataChannelRole(label: "notify") == .notify && DataChannelRole(label: "push") == .push)
        #expect(DataChannelRole(label: "#chat") == .messaging && DataChannelRole(label: "#") == .messaging)
        #expect(DataChannelRole(label: "e2ee") == .e2ee && DataChannelRole(label: "rpc") == .rpc)
        for label in ["Signaling", "bogus", "", "signaling ", "chat"] {
            #expect(DataChannelRole(label: label) == .unknown, "\(label)")
        }
        #expect([DataChannelRole.messaging, .e2ee, .rpc, .unknown].allSatisfy { $0.isLoggedVerbatim })
        #expect(![DataChannelRole.signaling, .notify, .push, .stats].contains { $0.isLoggedVerbatim })
    }
}
