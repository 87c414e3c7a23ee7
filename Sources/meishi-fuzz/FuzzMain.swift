import Foundation
import MeishiFuzz

// Built two ways (docs: README "Fuzzing"):
// - normally: `meishi-fuzz TARGET FILE|DIR…` runs each input through the target once (replaying
//   a corpus or a crash without libFuzzer), and `meishi-fuzz payload --verdicts FILE…` prints
//   meishi's verdict on each file, for the differential check against tools/verify-payload.py;
// - with `-DFUZZING` and `--sanitize fuzzer --sanitize address` (`make fuzz`): libFuzzer's own
//   main drives `LLVMFuzzerTestOneInput`, and `MEISHI_FUZZ_TARGET` names the target.

#if FUZZING
nonisolated(unsafe) private var selected: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    guard let name = ProcessInfo.processInfo.environment["MEISHI_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map { $0.rawValue }.joined(separator: ", ")
        FileHandle.standardError.write(Data("meishi-fuzz: set MEISHI_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(64)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selected!.run(bytes)
    return 0
}
#else
@main
struct FuzzReplay {
    static func main() {
        var args = Array(CommandLine.arguments.dropFirst())
        let verdicts = args.contains("--verdicts")
        args.removeAll { $0 == "--verdicts" }
        if args.first == "seed-envelopes", args.count == 2 {
            // Valid envelopes from the fixed keys the envelope target opens with (scripts/fuzz.sh seed).
            for (name, bytes) in FuzzTarget.envelopeSeeds() {
                _ = FileManager.default.createFile(atPath: args[1] + "/" + name, contents: Data(bytes))
            }
            return
        }
        guard let name = args.first, let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map { $0.rawValue }.joined(separator: "|")
            FileHandle.standardError.write(Data("usage: meishi-fuzz \(names) [--verdicts] FILE|DIR…\n".utf8))
            exit(64)
        }
        var count = 0
        for path in files(Array(args.dropFirst())) {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("meishi-fuzz: cannot read \(path)\n".utf8))
                exit(66)
            }
            let bytes = [UInt8](data)
            if verdicts {
                print("\(FuzzTarget.payloadVerdict(bytes))\t\(path)")
            } else {
                target.run(bytes)
            }
            count += 1
        }
        if !verdicts { FileHandle.standardError.write(Data("meishi-fuzz: \(target.rawValue): \(count) inputs, no finding\n".utf8)) }
    }

    /// Files as given, and every regular file under a directory, in name order.
    static func files(_ paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return names.sorted().filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
        }
    }
}
#endif
