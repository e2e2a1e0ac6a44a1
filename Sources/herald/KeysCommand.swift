import ArgumentParser
import HeraldCore

/// `herald keys`: makes the keys Herald's contracts need.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Generate device key pairs and reply secrets.",
        subcommands: [Device.self, ReplySecretCommand.self]
    )

    /// `herald keys device`
    struct Device: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "device",
            abstract: "Generate an X25519 device key pair for sealed fields (for test devices and the demo).",
            discussion: """
                Prints the private key (stays on the device), the public key (registered \
                with the device token) and the key id envelopes name, each as standard \
                base64 of the raw 32 bytes.
                """
        )

        @Flag(help: "Print a JSON object instead of name=value lines.")
        var json = false

        func run() {
            let pair = DeviceKeyPair.generate()
            if json {
                print(#"{"private_key":"\#(pair.privateKeyBase64)","public_key":"\#(pair.publicKeyBase64)","key_id":"\#(pair.keyID)"}"#)
            } else {
                print("private_key=\(pair.privateKeyBase64)")
                print("public_key=\(pair.publicKeyBase64)")
                print("key_id=\(pair.keyID)")
            }
        }
    }

    /// `herald keys reply-secret`
    struct ReplySecretCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reply-secret",
            abstract: "Generate a reply secret: 32 random bytes, base64, for HERALD_REPLY_SECRET.",
            discussion: "Example: HERALD_REPLY_SECRET=$(herald keys reply-secret)"
        )

        func run() {
            print(ReplySecret.generate().base64EncodedString())
        }
    }
}
