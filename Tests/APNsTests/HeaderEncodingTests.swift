@testable import APNs
import NIOCore
import NIOHPACK
import Testing

@Suite("HPACK request encoding")
struct HeaderEncodingTests {
    static func head(_ index: Int, authorization: String?) -> APNsRequestHead {
        APNsRequestHead(
            authority: "api.push.apple.com",
            deviceToken: String(repeating: "ab", count: 31) + String(format2(index)),
            authorization: authorization,
            topic: index % 7 == 3 ? "com.example.other" : "com.example.herald",
            pushType: index % 5 == 4 ? "background" : "alert",
            priority: index % 5 == 4 ? 5 : 10,
            expiration: index % 3 == 0 ? 1_900_000_000 + index : nil,
            collapseID: index % 4 == 1 ? "campaign-\(index)" : nil,
            apnsID: "0b9e4c5e-6c1a-4f53-9d0f-3b8a2d1e7f\(format2(index))",
            contentLength: 300 + index
        )
    }

    static func format2(_ index: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[(index >> 4) & 15], digits[index & 15]])
    }

    static func expected(_ head: APNsRequestHead) -> [(String, String)] {
        var fields: [(String, String)] = [
            (":path", "/3/device/" + head.deviceToken),
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", head.authority),
        ]
        if let authorization = head.authorization { fields.append(("authorization", authorization)) }
        fields += [
            ("apns-topic", head.topic),
            ("apns-push-type", head.pushType),
            ("apns-priority", String(head.priority)),
        ]
        if let expiration = head.expiration { fields.append(("apns-expiration", String(expiration))) }
        if let collapseID = head.collapseID { fields.append(("apns-collapse-id", collapseID)) }
        fields.append(("apns-id", head.apnsID))
        fields.append(("content-length", String(head.contentLength)))
        return fields
    }

    @Test("header blocks decode to the request's fields, across token changes, no token, and table size changes")
    func roundTrip() throws {
        var encoder = RequestHeaderEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var sizes: [Int] = []
        for index in 0..<200 {
            if index == 120 { encoder.peerTableSizeChanged(100) }
            if index == 121 { encoder.peerTableSizeChanged(0) }
            if index == 150 { encoder.peerTableSizeChanged(4096) }
            if index == 180 {
                encoder.peerTableSizeChanged(0)
                encoder.peerTableSizeChanged(4096)
            }
            // Requests 90–109 carry no authorization, as on a certificate connection.
            let authorization: String? =
                (90..<110).contains(index) ? nil : "bearer " + String(repeating: index < 60 ? "a" : "b", count: 200)
            let head = Self.head(index, authorization: authorization)
            var block = ByteBuffer()
            encoder.encode(.apns(head), into: &block)
            sizes.append(block.readableBytes)
            let decoded = try decoder.decodeHeaders(from: &block)
            #expect(block.readableBytes == 0)
            let fields = decoded.map { ($0.name, $0.value) }
            let wanted = Self.expected(head)
            #expect(fields.count == wanted.count, "request \(index)")
            for (got, want) in zip(fields, wanted) {
                #expect(got.0 == want.0 && got.1 == want.1, "request \(index): \(got) vs \(want)")
            }
            for field in decoded where field.name == ":path" || field.name == "apns-id" {
                #expect(field.indexable == .neverIndexed)
            }
        }
        // Repeated fields travel as indices: later blocks are far smaller than the first.
        #expect(sizes[0] > 300)
        #expect(sizes[2] < 150)
        #expect(sizes[199] < 150)
    }

    @Test("raw headers are sent as given, in order")
    func raw() throws {
        var encoder = RequestHeaderEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "GET")
        headers.add(name: ":path", value: "/3/device/x")
        headers.add(name: "apns-topic", value: "a")
        headers.add(name: "apns-topic", value: "a")
        var block = ByteBuffer()
        encoder.encode(.raw(headers), into: &block)
        let decoded = try decoder.decodeHeaders(from: &block)
        #expect(decoded.map { "\($0.name)=\($0.value)" } == [":method=GET", ":path=/3/device/x", "apns-topic=a", "apns-topic=a"])
    }
}
