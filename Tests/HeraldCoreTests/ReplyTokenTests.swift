import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import TestVectors
import Testing

@Suite("Reply tokens (contract 4)")
struct ReplyTokenTests {
    let vectors: [ReplyTokenVectors.Vector]

    init() throws {
        vectors = try ReplyTokenVectors.load()
        try #require(vectors.count == 3, "reply-token-v1.json should hold three vectors")
    }

    private func tokens(_ vector: ReplyTokenVectors.Vector) throws -> ReplyTokens {
        ReplyTokens(secret: try ReplySecret(base64: vector.reply_secret))
    }

    /// The contract written out the slow, obvious way, to check the fast path against.
    private func referenceToken(secret: Data, delivery: Int64) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("v1:\(delivery)".utf8), using: SymmetricKey(data: secret))
        return Data(mac.prefix(16)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test func theKnownAnswers() throws {
        for vector in vectors {
            #expect(vector.message == "v1:\(vector.delivery)")
            let tokens = try tokens(vector)
            #expect(tokens.token(delivery: vector.delivery) == vector.token)
            #expect(tokens.verify(vector.token, delivery: vector.delivery))
        }
    }

    @Test func theFastPathMatchesTheContractForAnyDelivery() throws {
        let secret = Data((0..<40).map { UInt8($0 * 7 & 0xff) })
        let tokens = ReplyTokens(secret: try ReplySecret(bytes: secret))
        for delivery: Int64 in [0, 1, 9, 10, 99, 100, 918_273, 9_876_543_210, .max, -1, -918_273, .min] {
            let token = tokens.token(delivery: delivery)
            #expect(token == referenceToken(secret: secret, delivery: delivery), "delivery \(delivery)")
            #expect(token.utf8.count == ReplyTokens.tokenLength)
            #expect(tokens.verify(token, delivery: delivery))
        }
    }

    @Test func aTokenFromAnotherSecretFails() throws {
        let vector = vectors[0]
        let other = ReplyTokens(secret: try ReplySecret(base64: vectors[1].reply_secret))
        #expect(!other.verify(vector.token, delivery: vector.delivery))
        #expect(!ReplyTokens(secret: .generate()).verify(vector.token, delivery: vector.delivery))
    }

    @Test func aRotatedSecretsTokensVerifyUntilTheGracePeriodEnds() throws {
        let old = ReplySecret.generate()
        let new = ReplySecret.generate()
        let now = Date()
        let rotated = ReplyTokens(secret: new, previous: old, until: now.addingTimeInterval(3600))
        let before = ReplyTokens(secret: old).token(delivery: 42)
        #expect(rotated.token(delivery: 42) == ReplyTokens(secret: new).token(delivery: 42), "tokens are made with the new secret")
        #expect(rotated.verify(before, delivery: 42, now: now), "the old secret's token within the grace period")
        #expect(rotated.verify(rotated.token(delivery: 42), delivery: 42, now: now))
        #expect(!rotated.verify(before, delivery: 42, now: now.addingTimeInterval(3601)), "not after it")
        #expect(!rotated.verify(before, delivery: 43, now: now))
        #expect(!rotated.verify(ReplyTokens(secret: .generate()).token(delivery: 42), delivery: 42, now: now))
        #expect(ReplyTokens(secret: new, previous: old, until: nil).previousUntil == nil, "no grace period without an end")
    }

    @Test func anotherDeliverysTokenFails() throws {
        let vector = vectors[0]
        let tokens = try tokens(vector)
        #expect(!tokens.verify(vector.token, delivery: vector.delivery + 1))
        #expect(!tokens.verify(tokens.token(delivery: vector.delivery + 1), delivery: vector.delivery))
        #expect(!tokens.verify(vector.token, delivery: -vector.delivery))
    }

    @Test func forgedShapesFailWithoutCrashing() throws {
        let vector = vectors[2] // token "2P-UkdGhMuGK3ap2mctUQA" has both base64url-only characters
        let tokens = try tokens(vector)
        let forged = [
            "",
            String(vector.token.dropLast()),
            String(vector.token.dropFirst()),
            vector.token + "A",
            vector.token + "==",
            vector.token.replacingOccurrences(of: "-", with: "+"),
            vector.token.lowercased(),
            String(repeating: "A", count: 22),
            String(repeating: "\u{0}", count: 22),
            String(repeating: "é", count: 11), // 22 UTF-8 bytes, not base64url
            "2P-UkdGhMuGK3ap2mctUQB", // same 128 bits, non-canonical last character
            String(repeating: "x", count: 10_000),
        ]
        for token in forged {
            #expect(!tokens.verify(token, delivery: vector.delivery), "\(token.prefix(30))")
        }
        #expect(tokens.verify(vector.token, delivery: vector.delivery))
    }

    @Test func aShortSecretIsRefusedWithoutShowingIt() throws {
        let short = Data((0..<31).map { UInt8($0) }).base64EncodedString()
        do {
            _ = try ReplySecret(base64: short)
            Issue.record("a 31-byte secret was accepted")
        } catch {
            #expect(error == .tooShort(byteCount: 31))
            #expect(error.description.contains("31 bytes"))
            #expect(error.description.contains("at least 32"))
            #expect(!error.description.contains(short))
            #expect(!String(reflecting: error).contains(short))
        }
        #expect(throws: ReplySecretError.tooShort(byteCount: 0)) { try ReplySecret(base64: "") }
    }

    @Test func textThatIsNotBase64IsRefusedWithoutShowingIt() {
        let text = "correct horse battery staple, but not base64!"
        do {
            _ = try ReplySecret(base64: text)
            Issue.record("non-base64 text was accepted")
        } catch {
            #expect(error == .notBase64)
            #expect(!error.description.contains(text))
            #expect(!error.description.contains("horse"))
        }
    }

    @Test func whitespaceAroundAndInsideTheSecretIsIgnored() throws {
        let vector = vectors[2]
        let wrapped = "  " + vector.reply_secret.prefix(40) + "\n" + vector.reply_secret.dropFirst(40) + "\n"
        let tokens = ReplyTokens(secret: try ReplySecret(base64: wrapped))
        #expect(tokens.token(delivery: vector.delivery) == vector.token)
    }

    @Test func generatedSecretsAreLongRandomAndRedacted() throws {
        let first = ReplySecret.generate()
        let second = ReplySecret.generate()
        #expect(first.byteCount == 32)
        #expect(first.base64EncodedString() != second.base64EncodedString())
        let reparsed = try ReplySecret(base64: first.base64EncodedString())
        #expect(ReplyTokens(secret: reparsed).token(delivery: 5) == ReplyTokens(secret: first).token(delivery: 5))

        var dumped = ""
        dump(first, to: &dumped)
        for text in [String(describing: first), String(reflecting: first), "\(first)", dumped] {
            #expect(!text.contains(first.base64EncodedString()))
            #expect(text.contains("redacted") || dumped == text)
        }
    }

    @Test func aMissingVectorFolderIsAFailureNotAPass() {
        do {
            _ = try SharedVectors.load("reply-token-v1.json", as: ReplyTokenVectors.self, filePath: "/nonexistent/repo/Tests/HeraldCoreTests/X.swift")
            Issue.record("loading from a missing folder succeeded")
        } catch {
            #expect(error is SharedVectors.Missing)
            #expect("\(error)".contains("/nonexistent/repo/Tests/Vectors/reply-token-v1.json"))
        }
    }

    @Test func aTokenSentOutComesBackInAReplyAndVerifies() throws {
        let tokens = ReplyTokens(secret: .generate())
        let notification = HeraldNotification(
            campaign: 42, delivery: 918_273, kind: .feedback, replyToken: tokens.token(delivery: 918_273)
        )
        let request = try ReplyRequestBuilder(baseURL: URL(string: "https://push.example.com")!).request(
            for: notification, action: "comment", text: "Great", occurredAt: Date(), replyID: UUID()
        )
        let body = try JSONDecoder().decode(ReplyBody.self, from: request.body)
        #expect(tokens.verify(body.token, delivery: body.delivery))
        #expect(!tokens.verify(body.token, delivery: body.delivery + 1))
    }
}
