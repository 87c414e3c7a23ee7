import Foundation

/// Why discovery leaves an interface out by default (`InterfaceRules.exclusion`), the kernel's
/// facts as a value: the application words it (`--verbose`).
public enum InterfaceExclusion: Sendable, Equatable, CaseIterable {
    /// The loopback interface.
    case loopback
    /// A point-to-point link: a VPN tunnel (WireGuard, Tailscale).
    case pointToPoint
    /// A tun or tap device: a VPN, or a virtual machine's link.
    case tunOrTap
    /// No broadcast: not a LAN.
    case noBroadcast
    /// A port of a bridge or bond: its master carries the traffic.
    case portOfBridgeOrBond
    /// A bridge without a physical port: Docker, libvirt, containers.
    case bridgeWithoutPhysicalPort
}

/// Which network interfaces discovery announces on by default (docs/PROTOCOL.md §5.5): the LAN,
/// not Docker or libvirt bridges, VPN tunnels or point-to-point links, decided by the interface's
/// type and flags as the kernel reports them in sysfs, never by its name. `--interface NAME`
/// overrides the rules for that interface.
struct InterfaceRules {
    /// What the kernel says of one interface.
    struct Facts: Equatable {
        /// `IFF_*` flags (`/sys/class/net/NAME/flags`).
        var flags: UInt32
        /// A tun or tap device (`tun_flags` exists): OpenVPN, Tailscale, ZeroTier, a VM's tap.
        var tunOrTap: Bool
        /// A bridge (`bridge/` exists), and whether one of its ports is a device with hardware
        /// behind it (`brif/PORT/device` … `/sys/class/net/PORT/device` exists).
        var bridge: Bool
        var bridgeHasPhysicalPort: Bool
        /// A port of a bridge or bond (`master` exists): its traffic is the master's.
        var enslaved: Bool
    }

    static let broadcast: UInt32 = 0x2, loopback: UInt32 = 0x8, pointToPoint: UInt32 = 0x10

    /// Why discovery leaves an interface with these facts out by default; nil when it is used.
    static func exclusion(_ f: Facts) -> InterfaceExclusion? {
        if f.flags & loopback != 0 { return .loopback }
        if f.flags & pointToPoint != 0 { return .pointToPoint }
        if f.tunOrTap { return .tunOrTap }
        if f.flags & broadcast == 0 { return .noBroadcast }
        if f.enslaved { return .portOfBridgeOrBond }
        if f.bridge && !f.bridgeHasPhysicalPort { return .bridgeWithoutPhysicalPort }
        return nil
    }

    /// The facts of `name` under `sysfs`; nil where sysfs says nothing (not Linux, or no such
    /// interface): the interface is then used.
    static func facts(_ name: String, sysfs: String = "/sys/class/net") -> Facts? {
        let fm = FileManager.default
        let dir = sysfs + "/" + name
        guard !name.contains("/"), let text = try? String(contentsOfFile: dir + "/flags", encoding: .utf8),
              let flags = UInt32(text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "0x", with: ""), radix: 16)
        else { return nil }
        let ports = (try? fm.contentsOfDirectory(atPath: dir + "/brif")) ?? []
        return Facts(flags: flags, tunOrTap: fm.fileExists(atPath: dir + "/tun_flags"), bridge: fm.fileExists(atPath: dir + "/bridge"),
                     bridgeHasPhysicalPort: ports.contains { fm.fileExists(atPath: sysfs + "/" + $0 + "/device") },
                     enslaved: fm.fileExists(atPath: dir + "/master"))
    }
}
