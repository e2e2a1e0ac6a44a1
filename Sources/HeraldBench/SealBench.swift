import Crypto
import Foundation
import HeraldCore

/// `herald-bench seal [-n N]`: HPKE seals per second on one core — the
/// sealing a run does for each device with a key (one X25519 key agreement,
/// HKDF and ChaCha20-Poly1305 over a small JSON object per device) — measured
/// on the calling thread, with a fresh device key every 1,000 seals as in a run.
enum SealBench {
    static func run(_ arguments: [String]) -> Int32 {
        var count = 100_000
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "-n":
                guard let value = iterator.next().flatMap(Int.init), value > 0 else { return usage() }
                count = value
            case "--help":
                print("usage: herald-bench seal [-n N]")
                return 0
            default:
                return usage()
            }
        }
        let fields = Array(#"{"coupon":"FLASH-7Q2K","price":"¥99"}"#.utf8)
        let keys = (0..<max(1, count / 1000)).map { _ in DeviceKey(publicKey: Curve25519.KeyAgreement.PrivateKey().publicKey) }
        var bytes = 0
        let cpuBefore = cpuMicroseconds()
        let started = ContinuousClock.now
        for i in 0..<count {
            let key = keys[i % keys.count]
            do {
                let envelope = try Sealer.seal(fields: fields, to: key, campaign: 1, delivery: Int64(i))
                bytes &+= envelope.ct.utf8.count
            } catch {
                FileHandle.standardError.write(Data("herald-bench seal: \(error)\n".utf8))
                return 1
            }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = elapsed.inSeconds
        let cpu = (cpuMicroseconds() - cpuBefore) / 1e6
        print(String(format: "sealing: %.0f HPKE seals/s per core (%.1f µs of CPU each; %d seals in %.2f s, %d ciphertext bytes each)",
                     Double(count) / cpu, cpu * 1e6 / Double(count), count, seconds, bytes / count))
        return 0
    }

    static func usage() -> Int32 {
        FileHandle.standardError.write(Data("usage: herald-bench seal [-n N]\n".utf8))
        return 2
    }
}
