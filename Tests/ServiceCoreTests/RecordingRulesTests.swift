import Foundation
import ServiceCore
import Testing

@Suite struct RecordingRulesTests {
    static let file = #"""
        {"rules": [
          {"name": "board", "channel": {"exact": "board"}, "options": {"duration": 7200, "export": true, "retention_days": 90}},
          {"name": "tagged", "channel": {"prefix": "meet-"}, "metadata": {"record": true, "team": "red"},
           "options": {"split_duration": 600, "split_only": true, "data_channels": ["#chat"], "stop_when_idle": 300}},
          {"name": "meetings", "channel": {"pattern": "meet-*-[0-9]"}}
        ]}
        """#

    func rules() throws -> RecordingRules { try RecordingRules(json: Array(Self.file.utf8)) }

    @Test func theFirstMatchingRuleDecidesAndUnmatchedChannelsAreNotRecorded() throws {
        let rules = try rules()
        #expect(rules.match(SoraSessionInfo(channelID: "board", sessionID: "S"))?.name == "board")
        #expect(rules.match(SoraSessionInfo(channelID: "board", sessionID: "S"))?.options?.retentionDays == 90)
        #expect(rules.match(SoraSessionInfo(channelID: "board2", sessionID: "S")) == nil)
        #expect(rules.match(SoraSessionInfo(channelID: "meet-a-1", sessionID: "S"))?.name == "meetings")
        #expect(rules.match(SoraSessionInfo(channelID: "meet-a-x", sessionID: "S")) == nil)
        let tagged = SoraSessionInfo(channelID: "meet-a-1", sessionID: "S", metadata: #"{"record":true,"team":"red","x":[1]}"#)
        #expect(rules.match(tagged)?.name == "tagged")
        #expect(rules.match(tagged)?.options?.splitDuration == 600)
        let otherTeam = SoraSessionInfo(channelID: "meet-a-1", sessionID: "S", metadata: #"{"record":true,"team":"blue"}"#)
        #expect(rules.match(otherTeam)?.name == "meetings")
        let recordAsNumber = SoraSessionInfo(channelID: "meet-b", sessionID: "S", metadata: #"{"record":1,"team":"red"}"#)
        #expect(rules.match(recordAsNumber) == nil, "1 is not true")
    }

    @Test(arguments: [
        #"{"rules": [{"name": "a", "channel": {}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x", "prefix": "y"}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}}, {"name": "a", "channel": {"exact": "y"}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "options": {"split_duration": 0}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "options": {"split_only": true}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "options": {"data_channels": ["chat"]}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "options": {"upload": "http://x"}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "unknown_key": 1}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exact": "x"}, "options": {"split_duraton": 60}}]}"#,
        #"{"rules": [{"name": "a", "channel": {"exactly": "x"}}]}"#,
        #"{"rules": [], "rulez": []}"#,
        #"{"rules": "none"}"#,
        "not json",
    ])
    func badRulesFilesAreRefused(text: String) {
        #expect(throws: RecordingRulesError.self) { try RecordingRules(json: Array(text.utf8)) }
    }
}

@Suite struct JobOptionsTests {
    @Test func optionsBecomeJoinFlagsAndTheExpiryCapsTheDuration() {
        var options = JobOptions()
        (options.duration, options.splitDuration, options.splitOnly) = (3_600, 60, true)
        (options.dataChannels, options.stopWhenIdle, options.export) = (["#chat"], 30, true)
        options.recordingMetadata = #"{"k":"v"}"#
        #expect(options.joinArguments(secondsLeft: 120) == [
            "--duration", "120s", "--split-duration", "60", "--split-only", "--recording-metadata", #"{"k":"v"}"#,
            "--data-channel", "#chat", "--stop-when-idle", "30s", "--export",
        ])
        #expect(options.joinArguments(secondsLeft: nil).prefix(2) == ["--duration", "3600s"])
        #expect(JobOptions().joinArguments(secondsLeft: nil).isEmpty)
        #expect(JobOptions().joinArguments(secondsLeft: 0) == ["--duration", "1s"], "an expiry just passed still gives a valid flag")
        #expect(options.joinArguments(secondsLeft: nil, secondsRecorded: 600).prefix(2) == ["--duration", "3000s"],
                "a worker that takes a job over records what is left of its duration, not all of it again")
        #expect(options.joinArguments(secondsLeft: nil, secondsRecorded: 7_200).prefix(2) == ["--duration", "1s"])
        var kept = JobOptions()
        kept.retentionDays = 30
        #expect(kept.joinArguments(secondsLeft: nil) == ["--retention", "30d"])
        kept.retentionDays = 0
        #expect(throws: JobOptionsError.outOfRange("retention_days")) { try kept.validate() }
    }

    @Test func optionsSurviveTheirRow() throws {
        var options = JobOptions()
        (options.splitDuration, options.webhookUrls, options.upload) = (10, ["https://hook"], "s3://bucket/p")
        #expect(try JobOptions(stored: options.encoded()) == options)
        #expect(options.encoded().contains("\"split_duration\":10"))
    }
}

@Suite struct RecordingRequestTests {
    func parse(_ text: String) throws(RecordingRequestError) -> RecordingRequest { try RecordingRequest(body: Array(text.utf8)) }

    @Test func soraStartRecordingParameters() throws {
        let request = try parse(#"{"channel_id":"room1","expire_time":3600,"split_only":true,"split_duration":360,"metadata":{"k":"v"}}"#)
        #expect(request.channelID == "room1" && request.expireTime == 3_600)
        #expect(request.options.splitOnly == true && request.options.splitDuration == 360 && request.options.recordingMetadata == #"{"k":"v"}"#)
        let own = try parse(##"{"channel_id":"r","stop_when_idle":5,"data_channels":["#chat"],"duration":60.0}"##)
        #expect(own.options.stopWhenIdle == 5 && own.options.dataChannels == ["#chat"] && own.options.duration == 60 && own.expireTime == nil)
        // On Linux the numbers 0 and 1 also pass for booleans: 1 second is a number, and 1 is not true.
        let one = try parse(#"{"channel_id":"r","duration":1,"retention_days":1}"#)
        #expect(one.options.duration == 1 && one.options.retentionDays == 1)
        #expect(throws: RecordingRequestError.self) { try parse(#"{"channel_id":"r","export":1}"#) }
        #expect(throws: RecordingRequestError.self) { try parse(#"{"channel_id":"r","duration":true}"#) }
    }

    @Test(arguments: [
        #"{"expire_time":10}"#, #"{"channel_id":""}"#, #"{"channel_id":"r","expire_time":"10"}"#, #"{"channel_id":"r","expire_time":0}"#,
        #"{"channel_id":"r","expire_time":1.5}"#, #"{"channel_id":"r","split_duraton":60}"#, #"{"channel_id":"r","split_only":true}"#, #"{"channel_id":"r","split_duration":true}"#,
        ##"{"channel_id":"r","data_channels":"#chat"}"##, ##"{"channel_id":"r","expire_time":1e300}"##, "[]", "{",
    ])
    func badRequestsAreRefused(text: String) {
        #expect(throws: RecordingRequestError.self) { try parse(text) }
    }

    @Test func oversizedRequestsAreRefused() {
        let metadata = String(repeating: "x", count: RecordingRequest.maximumBodyBytes)
        #expect(throws: RecordingRequestError.self) { try parse(#"{"channel_id":"r","metadata":"\#(metadata)"}"#) }
    }
}
