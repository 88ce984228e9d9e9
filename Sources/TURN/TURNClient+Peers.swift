import STUN
import WireCoding

/// Permissions, channel bindings and the data path of an allocation.
extension TURNClient {
    struct Permission {
        /// Set once the server installed it; refreshed before then.
        var expiresAt: MonotonicTime?
        var refreshAt: MonotonicTime?
        var pending = false
        /// Datagrams waiting for the permission (the server would drop them before).
        var queued: [(peer: TransportAddress, payload: [UInt8])] = []
    }

    struct Channel {
        var number: UInt16
        var bound = false
        var refreshAt: MonotonicTime?
    }

    /// Sends a datagram to `peer` through the relay: ChannelData once a channel is bound, a Send
    /// indication while only a permission exists, and first a CreatePermission (the datagram waits
    /// for it) when neither does.
    public func send(_ payload: [UInt8], to peer: TransportAddress, now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        guard state == .allocated else {
            counters.sendsRefused += 1
            return output
        }
        if permissions[peer.ip]?.expiresAt != nil {
            deliver(payload, to: peer, &output)
            return output
        }
        if permissions[peer.ip] == nil {
            guard permissions.count < configuration.maximumPeers else {
                counters.sendsRefused += 1
                return output
            }
            permissions[peer.ip] = Permission(pending: true)
            counters.permissionRequests += 1
            request(.createPermission([peer.ip]), now: now, &output)
        }
        if permissions[peer.ip]!.queued.count < configuration.maximumQueuedPerPeer {
            permissions[peer.ip]!.queued.append((peer, payload))
        } else {
            counters.sendsRefused += 1
        }
        return output
    }

    /// Binds a channel to `peer` (the pair ICE selected), so data goes with 4 bytes of framing
    /// instead of a 36-byte Send indication. Until the server answers, Send indications go on.
    public func bindChannel(to peer: TransportAddress, now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        guard state == .allocated, channelsByPeer[peer] == nil, channelsByPeer.count < configuration.maximumPeers,
              ChannelData.channelNumbers.contains(nextChannelNumber) else { return output }
        let number = nextChannelNumber
        nextChannelNumber += 1  // never reused: RFC 8656 §12 forbids rebinding a number within 10 minutes
        channelsByPeer[peer] = Channel(number: number)
        peersByChannel[number] = peer
        counters.channelBinds += 1
        request(.channelBind(peer: peer, channel: number), now: now, &output)
        return output
    }

    /// The channel bound to `peer`, once the server confirmed it.
    public func boundChannel(to peer: TransportAddress) -> UInt16? {
        channelsByPeer[peer].flatMap { $0.bound ? $0.number : nil }
    }

    public func hasPermission(for ip: IPAddress) -> Bool { permissions[ip]?.expiresAt != nil }

    func deliver(_ payload: [UInt8], to peer: TransportAddress, _ output: inout TURNOutput) {
        if let channel = boundChannel(to: peer) {
            counters.channelDataSent += 1
            output.toServer.append(ChannelData.encode(channel: channel, payload: payload, padded: isStream))
            return
        }
        let id = newTransactionID()
        let indication = STUNMessage(method: STUNMethod.send, class: .indication, transactionID: id,
                                     attributes: [.xorPeerAddress(peer, transactionID: id), .data(payload)])
        counters.sendIndications += 1
        output.toServer.append(indication.encoded())
    }

    // MARK: - Data from peers

    func receiveChannelData(_ bytes: [UInt8], _ output: inout TURNOutput) {
        // A channel we asked for may carry data before its success response arrives (reordering).
        guard let (channel, payload) = try? ChannelData.parse(bytes), let peer = peersByChannel[channel] else {
            counters.dropped += 1
            return
        }
        counters.channelDataReceived += 1
        output.events.append(.data(Array(payload), from: peer))
    }

    func receiveDataIndication(_ message: STUNMessage, _ output: inout TURNOutput) {
        // Only peers we opened a permission for: the server should not forward others anyway.
        guard let peer = message.xorPeerAddress, let payload = message.data, permissions[peer.ip] != nil else {
            counters.dropped += 1
            return
        }
        counters.dataIndicationsReceived += 1
        output.events.append(.data(payload, from: peer))
    }

    // MARK: - Answers and refreshes

    func permissionsInstalled(_ ips: [IPAddress], now: MonotonicTime, _ output: inout TURNOutput) {
        for ip in ips {
            guard var permission = permissions[ip] else { continue }
            install(&permission, now: now)
            let queued = permission.queued
            permission.queued = []
            permissions[ip] = permission
            for (peer, payload) in queued { deliver(payload, to: peer, &output) }
        }
    }

    private func install(_ permission: inout Permission, now: MonotonicTime) {
        let lifetime = configuration.permissionLifetimeSeconds
        permission.pending = false
        permission.expiresAt = now.adding(milliseconds: lifetime * 1_000)
        permission.refreshAt = now.adding(milliseconds: lifetime * 1_000 - configuration.refreshLead(lifetimeSeconds: lifetime))
    }

    /// Refused or unanswered: the IP has no permission; what waited for it is dropped.
    func permissionsFailed(_ ips: [IPAddress]) {
        for ip in ips {
            counters.sendsRefused += permissions[ip]?.queued.count ?? 0
            permissions[ip] = nil
        }
    }

    func channelBound(peer: TransportAddress, channel: UInt16, now: MonotonicTime, _ output: inout TURNOutput) {
        guard var entry = channelsByPeer[peer], entry.number == channel else { return }
        let first = !entry.bound
        let lifetime = configuration.channelLifetimeSeconds
        entry.bound = true
        entry.refreshAt = now.adding(milliseconds: lifetime * 1_000 - configuration.refreshLead(lifetimeSeconds: lifetime))
        channelsByPeer[peer] = entry
        // A binding installs (or refreshes) the permission for the peer's IP as well (RFC 8656 §12.2).
        var permission = permissions[peer.ip] ?? Permission()
        let queued = permission.queued
        permission.queued = []
        let refreshing = permission.pending  // a CreatePermission in flight still completes as usual
        install(&permission, now: now)
        permission.pending = refreshing
        permissions[peer.ip] = permission
        for (peer, payload) in queued { deliver(payload, to: peer, &output) }
        if first { output.events.append(.channelBound(peer: peer, channel: channel)) }
    }

    func channelFailed(peer: TransportAddress, channel: UInt16) {
        guard channelsByPeer[peer]?.number == channel else { return }
        channelsByPeer[peer] = nil
        peersByChannel[channel] = nil
    }

    /// Permissions and channels due for refresh: one CreatePermission for the due IPs (in
    /// groups), one ChannelBind per due channel.
    func refreshPeers(now: MonotonicTime, _ output: inout TURNOutput) {
        var due: [IPAddress] = []
        for (ip, permission) in permissions where !permission.pending && (permission.refreshAt.map { $0 <= now } ?? false) {
            permissions[ip]?.pending = true
            permissions[ip]?.refreshAt = nil
            due.append(ip)
        }
        for start in stride(from: 0, to: due.count, by: 8) {
            counters.permissionRequests += 1
            request(.createPermission(Array(due[start..<min(start + 8, due.count)])), now: now, &output)
        }
        for (peer, channel) in channelsByPeer where channel.bound && (channel.refreshAt.map { $0 <= now } ?? false) {
            channelsByPeer[peer]?.refreshAt = nil
            counters.channelBinds += 1
            request(.channelBind(peer: peer, channel: channel.number), now: now, &output)
        }
    }
}
