import Foundation

public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

#if FUZZING
/// libFuzzer's entry for programs that keep their own main (LLVM 11+).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzTarget
) -> Int32
#endif

/// The fuzz executables' main: libFuzzer when built by dev/fuzz.sh (FUZZING), otherwise
/// a replay of the files or directories given (a corpus, or a crash reproducer).
public func runFuzzTarget(_ target: FuzzTarget) -> Never {
    #if FUZZING
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, target))
    #else
    replayFiles(CommandLine.arguments.dropFirst(), into: target)
    exit(0)
    #endif
}

func replayFiles<S: Sequence>(_ paths: S, into target: FuzzTarget) where S.Element == String {
    var count = 0
    for path in paths {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            FileHandle.standardError.write(Data("no such file: \(path)\n".utf8))
            exit(66)
        }
        let files = isDirectory.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 } : [path]
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let bytes = [UInt8](data)
            _ = bytes.withUnsafeBufferPointer { target($0.baseAddress, $0.count) }
            count += 1
        }
    }
    print("replayed \(count) inputs")
}
