import Foundation
import Testing
@testable import MeishiProximity

/// Which interfaces discovery uses by default, from the kernel's facts (sysfs), never names.
@Suite struct InterfaceRulesTests {
    /// A sysfs tree as the kernel writes it for a laptop with Docker, libvirt, WireGuard and a VPN tap.
    static func fakeSysfs() throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("meishi-sysfs-\(UUID().uuidString)").path
        func add(_ name: String, flags: String, files: [String] = [], dirs: [String] = []) throws {
            let dir = root + "/" + name
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try (flags + "\n").write(toFile: dir + "/flags", atomically: true, encoding: .utf8)
            for f in files { FileManager.default.createFile(atPath: dir + "/" + f, contents: Data("1\n".utf8)) }
            for d in dirs { try FileManager.default.createDirectory(atPath: dir + "/" + d, withIntermediateDirectories: true) }
        }
        try add("wlp2s0", flags: "0x1003", dirs: ["device"])
        try add("enp0s31f6", flags: "0x1003", files: ["master"], dirs: ["device"])
        try add("br0", flags: "0x1003", dirs: ["bridge", "brif/enp0s31f6"])
        try add("docker0", flags: "0x1003", dirs: ["bridge", "brif/veth1a2b3c"])
        try add("veth1a2b3c", flags: "0x1003", files: ["master"])
        try add("virbr0", flags: "0x1003", dirs: ["bridge"])
        try add("tun0", flags: "0x1091", files: ["tun_flags"])
        try add("tap0", flags: "0x1003", files: ["tun_flags"])
        try add("wg0", flags: "0x91")
        try add("lo", flags: "0x9")
        try add("eth0", flags: "0x1003")  // a namespace's or a container's veth
        return root
    }

    @Test func theLANIsUsedAndBridgesTunnelsAndPortsAreNot() throws {
        let sysfs = try Self.fakeSysfs()
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        func why(_ name: String) -> InterfaceExclusion? { InterfaceRules.facts(name, sysfs: sysfs).flatMap(InterfaceRules.exclusion) }
        #expect(why("wlp2s0") == nil)
        #expect(why("br0") == nil)  // a LAN bridge: a physical port
        #expect(why("eth0") == nil)
        #expect(why("enp0s31f6") == .portOfBridgeOrBond)
        #expect(why("docker0") == .bridgeWithoutPhysicalPort)
        #expect(why("virbr0") == .bridgeWithoutPhysicalPort)
        #expect(why("veth1a2b3c") == .portOfBridgeOrBond)
        #expect(why("tun0") == .pointToPoint)
        #expect(why("wg0") == .pointToPoint)
        #expect(why("tap0") == .tunOrTap)
        #expect(why("lo") == .loopback)
        #expect(InterfaceRules.facts("nosuch", sysfs: sysfs) == nil)
        #expect(InterfaceRules.facts("../lo", sysfs: sysfs) == nil)
    }

    @Test func thisMachinesLoopbackIsLeftOut() {
        guard let facts = InterfaceRules.facts("lo") else { return }  // no sysfs here (not Linux)
        #expect(InterfaceRules.exclusion(facts) == .loopback)
    }
}
